"""Decoded facts of every real file equal those INVENTORY.md states for it.

INVENTORY.md was produced independently of this codec (by whoever collected the files), so
agreement on batch counts, control batches, per-type record counts, metadata.version levels,
the PartitionChangeRecord field counts, offset and epoch ranges is a real check of decoding.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from kraftlake.codec.logfiles import classify, iter_file
from tests.conftest import ROOTS, inventory, rel

ABBREV = {
    "NoOp": "NoOpRecord", "PCR": "PartitionChangeRecord", "PR": "PartitionRecord",
    "Topic": "TopicRecord", "RmTopic": "RemoveTopicRecord", "Cfg": "ConfigRecord",
    "RegBrk": "RegisterBrokerRecord", "RegCtl": "RegisterControllerRecord",
    "BrkChg": "BrokerRegistrationChangeRecord", "Fence": "FenceBrokerRecord",
    "Unfence": "UnfenceBrokerRecord", "Unreg": "UnregisterBrokerRecord",
    "Feat": "FeatureLevelRecord", "PID": "ProducerIdsRecord", "BeginTx": "BeginTransactionRecord",
    "EndTx": "EndTransactionRecord", "AbortTx": "AbortTransactionRecord",
    "ZkMig": "ZkMigrationStateRecord", "LCM": "LeaderChangeMessage",
    "SnapHdr": "SnapshotHeaderRecord", "SnapFtr": "SnapshotFooterRecord",
    "KRaftVer": "KRaftVersionRecord", "Voters": "VotersRecord",
}


@dataclass
class Row:
    path: Path
    batches: int
    control_batches: int
    records: int
    counts: dict[str, int]
    mv: set[int]
    pcr_fields: tuple[int, int, int, int] | None
    notes: str


KINDS = ("segment", "snapshot", "bootstrap")


def _rows() -> list[Row]:
    """The rows of every root's INVENTORY.md, one per path (the corpus's row first)."""
    rows: dict[str, Row] = {}
    for root in ROOTS:
        for cells in inventory(root):
            if cells[1] not in KINDS or cells[0] in rows:
                continue
            m = re.fullmatch(r"(\d+) \((\d+) ctl\) / (\d+)", cells[5])
            assert m, cells[5]
            counts = {ABBREV[k]: int(v) for k, v in
                      (item.rsplit(" ", 1) for item in cells[6].split(", ") if item)}
            mv = {int(x) for x in re.findall(r"\d+", cells[7])}
            pcr = tuple(int(x) for x in cells[9].split("/")) if "/" in cells[9] else None
            rows[cells[0]] = Row(root / cells[0], int(m[1]), int(m[2]), int(m[3]), counts, mv,
                                 pcr, cells[10])  # type: ignore[arg-type]
    return [rows[k] for k in sorted(rows)]


ROWS = _rows()


@pytest.mark.parametrize("root", ROOTS, ids=["corpus", "extension"][:len(ROOTS)])
def test_inventory_lists_every_log_file(root: Path) -> None:
    """An INVENTORY.md lists exactly the metadata-log files under its root, and its summary
    line counts its own rows."""
    listed = inventory(root)
    found = {str(p.relative_to(root)) for p in root.rglob("*")
             if p.is_file() and classify(p) is not None}
    assert found == {c[0] for c in listed if c[1] in KINDS}
    summary = re.search(r"^- files: (\d+) \((.*)\)$", (root / "INVENTORY.md").read_text(), re.M)
    assert summary, root
    by_kind = Counter(c[1] for c in listed)
    assert int(summary[1]) == len(listed)
    assert dict(item.rsplit(" ", 1) for item in summary[2].split(", ")) == \
        {k: str(n) for k, n in by_kind.items()}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: rel(r.path))
def test_decoded_file_matches_inventory(row: Row) -> None:
    lf = classify(row.path)
    assert lf is not None
    batches = control = 0
    types: Counter[str] = Counter()
    mv: set[int] = set()
    pcr = [0, 0, 0, 0]
    offsets: list[int] = []
    epochs: list[int] = []
    for batch, records in iter_file(lf):
        batches += 1
        control += batch.is_control
        epochs.append(batch.partition_leader_epoch)
        for r in records:
            assert r.error is None
            types[r.type] += 1
            offsets.append(r.offset)
            if r.type == "FeatureLevelRecord" and r.data["name"] == "metadata.version":
                mv.add(r.data["feature_level"])
            if r.type == "PartitionChangeRecord":
                d = r.data
                pcr[0] += d["leader_recovery_state"] != -1
                pcr[1] += d.get("eligible_leader_replicas") is not None
                pcr[2] += d.get("last_known_elr") is not None
                pcr[3] += d.get("directories") is not None
    assert (batches, control, sum(types.values())) == \
        (row.batches, row.control_batches, row.records)
    assert dict(types) == row.counts
    assert mv == row.mv
    if row.pcr_fields is not None:
        assert tuple(pcr) == row.pcr_fields
    crc = re.search(r"crc ok (\d+)/(\d+)", row.notes)
    assert crc and int(crc[1]) == int(crc[2]) == batches
    if row.records == 0:  # a real zero-length segment: nothing, and no complaint
        assert offsets == [] and row.path.stat().st_size == 0
        return
    m = re.search(r"offsets (\d+)\.\.(\d+), epochs (\d+)\.\.(\d+)", row.notes)
    assert m, row.notes
    assert (min(offsets), max(offsets)) == (int(m[1]), int(m[2]))
    assert (min(epochs), max(epochs)) == (int(m[3]), int(m[4]))
