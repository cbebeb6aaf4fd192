"""Real metadata logs the tests share, and logs that grow as a controller writes them."""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftlake.codec.batch import Batch, scan_batches
from tests.conftest import real

# a real 3-broker log: 188 records in 13 batches, 115 partition changes
BUSY = real("nurlan-abdullazada__Docker-compose/data/kafka1")
# the scheduled runs of `busy_runs` saw the log end before these batches (offsets 64, 131)
BUSY_CUTS = (7, 12)
NOMAN = real("nomanazeem__Kafka-java/kafka-logs/__cluster_metadata-0")
INDUS = real("IndusWargods__local-test-rig/kafka-data/__cluster_metadata-0")
OGS = real("ogs59__docker-compose-kafka4.10/data/kafka-1/__cluster_metadata-0")
TINY = real("christseng89__RealTime_Analysis/kafka-logs")  # 600 bytes, another cluster id


def growing_copy(log: Path, dest: Path) -> tuple[Path, Path, bytes, list[Batch]]:
    """A writable copy of `log`; returns (copy, its segment, the full bytes, the batches)."""
    shutil.copytree(log, dest)
    seg = dest / "__cluster_metadata-0" / "00000000000000000000.log"
    seg.chmod(0o644)
    full = seg.read_bytes()
    return dest, seg, full, [b for b in scan_batches(full) if isinstance(b, Batch)]


class GrowingLog:
    """A `__cluster_metadata-0` written batch by batch from a real segment's batches."""

    def __init__(self, root: Path, source_segment: Path, cluster_id: str) -> None:
        self.buf = source_segment.read_bytes()
        self.batches = [b for b in scan_batches(self.buf) if isinstance(b, Batch)]
        self.dir = root / "__cluster_metadata-0"
        self.dir.mkdir(parents=True)
        (root / "meta.properties").write_text(f"version=1\nnode.id=1\ncluster.id={cluster_id}\n")
        self.active: Path | None = None
        self.partial = 0  # bytes of the next batch already written

    def raw(self, i: int) -> bytes:
        b = self.batches[i]
        return self.buf[b.position:b.position + b.size]

    def roll(self, i: int) -> None:
        """Start a new segment whose base offset is batch i's (what Kafka does on roll)."""
        self.active = self.dir / f"{self.batches[i].base_offset:020d}.log"
        self.active.touch()

    def write(self, lo: int, hi: int, half_of_next: bool = False) -> int:
        """Append batches [lo, hi) (finishing a half-written batch lo first); with
        `half_of_next`, also the first half of batch hi. Returns the next offset."""
        if self.active is None:
            self.roll(lo)
        data = b"".join(self.raw(i) for i in range(lo, hi))
        data = data[self.partial:]
        self.partial = 0
        if half_of_next:
            self.partial = self.batches[hi].size // 2
            data += self.raw(hi)[:self.partial]
        with open(self.active, "ab") as fh:
            fh.write(data)
        return self.batches[hi - 1].base_offset + self.batches[hi - 1].last_offset_delta + 1
