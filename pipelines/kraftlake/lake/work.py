"""Work frames: intermediate results of one increment, computed once and reused.

The increment reuses a few frames (committed records, topic names, the fold's output) in
several stages. Each is computed once into a *local checkpoint* on the executors' disks and
used from there, rather than `persist()`ed or written as files:

* a persisted frame keeps its whole logical plan, and PySpark analyses that plan again at
  every transformation built on it. The fold's plan is thousands of nodes and event
  detection makes hundreds of transformations on it, so building (not running) detection
  cost ~7 s per increment, whatever its size. A checkpoint is a plan of one node;
* unlike parquet files under the lake (what kraftlake used before), a checkpoint needs no
  file commit, listing or clean-up: 0.1-0.2 s instead of ~0.4-0.8 s per frame, and a
  frame of an increment whose tables are mostly unchanged is most of its cost. Spark removes
  the blocks once the frame is no longer referenced.

A checkpoint lives on the executors that computed it, so losing an executor mid-increment
fails the increment; the re-run (exactly once, see `jobs.increment`) computes it again.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame


def frame(name: str, df: DataFrame) -> DataFrame:
    """`df` computed now, on the executors' local disks, as a one-node plan. `name` labels
    its Spark job (what the Spark UI and event logs show)."""
    sc = df.sparkSession.sparkContext
    sc.setJobDescription(f"kraftlake: {name}")
    try:
        return df.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    finally:
        sc.setJobDescription(None)
