"""The read planner on a real log: a micro-batch may end inside a Kafka record batch.

`--max-offsets N` cuts micro-batches at offsets, not at batch boundaries (the reader filters
records by offset). The next micro-batch then resumes inside the batch it last read from;
that is the same log, not a diverged one. A batch rewritten with other bytes still is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftlake.codec.batch import Batch, encode_batch, scan_batches
from kraftlake.sources.files import LogDirIndex
from kraftlake.sources.plan import FRESH, latest, offset_dict
from tests.logs import NOMAN

CUT = 1000  # inside NOMAN's batch of offsets 974..1027


def _micro_batches(log_dir: Path, n: int) -> list[dict]:
    index, start, ends = LogDirIndex(log_dir), offset_dict(FRESH), []
    for _ in range(n):
        start = latest(index, start, max_offsets=CUT)
        ends.append(start)
    return ends


def test_a_micro_batch_ending_inside_a_batch_is_not_a_divergence():
    index = LogDirIndex(NOMAN).refresh()
    inside = index.batch_before(CUT)
    assert inside.base_offset < CUT - 1 < inside.last_offset  # the cut is mid-batch
    ends = _micro_batches(NOMAN, 3)
    assert [e["offset"] for e in ends] == [1000, 2000, 2067]
    assert [e["diverged_at"] for e in ends] == [-1, -1, -1]


def test_a_rewritten_batch_under_the_resume_point_is_a_divergence(tmp_path):
    log_dir = tmp_path / "__cluster_metadata-0"
    shutil.copytree(NOMAN, log_dir)
    seg = log_dir / "00000000000000000000.log"
    seg.chmod(0o644)
    first = latest(LogDirIndex(log_dir), offset_dict(FRESH), max_offsets=CUT)
    # a new Raft leader rewrites the batch holding offset 999: other epoch and timestamps
    buf = seg.read_bytes()
    b = next(b for b in scan_batches(buf) if isinstance(b, Batch) and b.base_offset == 974)
    nb = Batch(b.base_offset, b.partition_leader_epoch + 1, b.attributes, b.last_offset_delta,
               b.base_timestamp + 1000, b.max_timestamp + 1000, b.records, b.producer_id,
               b.producer_epoch, b.base_sequence)
    old = encode_batch(b)
    assert buf.count(old) == 1
    seg.write_bytes(buf.replace(old, encode_batch(nb)))
    second = latest(LogDirIndex(log_dir), first, max_offsets=CUT)
    assert second["diverged_at"] == CUT
