"""kafka-dump-log text as a batch source: the same source rows the binary reader produces.

Users who only have `kafka-dump-log.sh --cluster-metadata-decoder` output (no segment files)
can ingest it. A text can hold several `Dumping <file>` sections: segment sections give log
records, `.checkpoint` sections give snapshot records (a *reset* when the text has no log
records below the snapshot's end offset, otherwise a reconciliation *check*, as for
directories). Lines the parser cannot use become `problem` rows (quarantine) whose
`byte_position` is the byte position of the line in the text, so nothing is dropped.

The text carries no segment bytes, so there is no CRC to compare; `records` rows keep the
epoch, timestamp and type the dump printed, which is what the shared-cluster-id check uses.
`data` is the binary decode of the re-encoded value, so a text and the segment it was
printed from give identical rows, the typed `fields` silver reads (`codec.fields`) too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from ..codec import fields
from ..codec.dumplog import DumpProblem, parse_dump_log
from ..codec.records import decode_metadata_value, to_json
from .decode import _Rows

_SNAP_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint$")
_SNAP_LINE = re.compile(r"^Snapshot end offset: (\d+)")
_BATCH = re.compile(r"^baseOffset: (-?\d+) lastOffset: (-?\d+) ")


@dataclass
class _Section:
    name: str = ""
    snapshot_end: int = -1  # -1 = a log segment
    lines: list[tuple[int, int, str]] = field(default_factory=list)  # (lineno, byte pos, text)


def _sections(path: Path) -> list[_Section]:
    out: list[_Section] = [_Section(path.name)]
    pos = 0
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            if text.startswith("Dumping "):
                name = Path(text[len("Dumping "):].strip()).name
                m = _SNAP_NAME.search(name)
                out.append(_Section(name, int(m.group(1)) if m else -1))
            else:
                m = _SNAP_LINE.match(text)
                if m and out[-1].snapshot_end < 0:
                    out[-1].snapshot_end = int(m.group(1))
                out[-1].lines.append((lineno, pos, text))
            pos += len(raw)
    return [s for s in out if s.lines]


def read_dump_text(path: Path, cluster_id: str, min_offset: int = 0,
                   snapshot_high: int = -1) -> tuple[pa.Table, int, int]:
    """Source rows of a dump-log text: log records with offset >= `min_offset` and
    snapshots with end offset > `snapshot_high`; also (next log offset, snapshot high).

    Problems are only reported for a first read (`min_offset == 0`), so a re-run that finds
    nothing new adds nothing.
    """
    sections = _sections(Path(path))
    parsed: list[tuple[_Section, list, dict[int, int]]] = []
    log_min: int | None = None
    for sec in sections:
        items = list(parse_dump_log((t for _, _, t in sec.lines), sec.name))
        base_of: dict[int, int] = {}
        for _, _, t in sec.lines:
            m = _BATCH.match(t)
            if m:
                for off in range(int(m.group(1)), int(m.group(2)) + 1):
                    base_of[off] = int(m.group(1))
        parsed.append((sec, items, base_of))
        if sec.snapshot_end < 0:
            offs = [i.offset for i in items if not isinstance(i, DumpProblem)]
            if offs:
                log_min = min(offs) if log_min is None else min(log_min, min(offs))
    snaps = sorted({s.snapshot_end for s, _, _ in parsed if s.snapshot_end > 0})
    first = min_offset == 0
    reset = None  # like a directory: a log that does not start at 0 starts from a snapshot
    if first and (log_min is None or log_min > 0):
        reset = next((n for n in snaps if log_min is None or n >= log_min), None)
        if reset is not None:
            min_offset = reset
    rows = _Rows()
    next_offset = min_offset
    high = snapshot_high
    for sec, items, base_of in parsed:
        snap = sec.snapshot_end
        if snap == 0 or (snap > 0 and snap <= snapshot_high):
            continue
        role = "reset" if snap > 0 and snap == reset else "check"
        where = {ln: pos for ln, pos, _ in sec.lines}
        line_at = [ln for ln, _, _ in sec.lines]
        for item in items:
            if isinstance(item, DumpProblem):
                if not first:
                    continue
                ln = line_at[item.line - 1] if 0 < item.line <= len(line_at) else -1
                rows.add(cluster_id=cluster_id, row_kind="problem", source="snapshot"
                         if snap > 0 else "log", source_file=sec.name,
                         byte_position=where.get(ln, -1), position=-1,
                         problem_kind="dump_line", error=f"line {ln}: {item.reason}",
                         value=item.text.encode())
                continue
            if snap > 0:
                high = max(high, snap)
                offset, position = snap - 1, item.offset
            else:
                if item.offset < min_offset:
                    continue
                offset = position = item.offset
                next_offset = max(next_offset, item.offset + 1)
            data = item.data
            if not item.control and item.value is not None and data is not None:
                # the binary decode of the re-encoded value: same data as a segment gives,
                # key order included (the JSON parser orders tagged fields differently)
                again = decode_metadata_value(item.value).data
                data = again if again is not None else data
            rows.add(cluster_id=cluster_id, source="snapshot" if snap > 0 else "log",
                     snapshot_end_offset=snap if snap > 0 else None,
                     snapshot_role=role if snap > 0 else None, offset=offset,
                     position=position, batch_base_offset=None if snap > 0
                     else base_of.get(item.offset), epoch=item.epoch,
                     timestamp=item.timestamp * 1000, control=item.control,
                     record_type=item.type, api_key=item.api_key, version=item.version,
                     data=None if data is None else to_json(data), value=item.value,
                     error=item.error, fields=fields.typed(item.type, data),
                     source_file=sec.name, row_kind="record", byte_position=-1)
    return pa.Table.from_batches([rows.batch()]), next_offset, high
