"""The Spark fold equals the sequential reference replay on every real metadata log."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest

from kraftlake.reference.replay import replay_dir
from tests.conftest import EXTENSION, ROOTS, inventory, real_log_dirs, rel
from tests.fold.foldcheck import normalise, replay_rows, spark_fold_rows

# Spark held against the sequential rules: over two partitions, as on a real input
pytestmark = pytest.mark.usefixtures("several_partitions")

PARTITION_TYPES = ("PR ", "PCR ", "RmTopic ", "ClearElr ")


def _dirs_with_partition_records() -> list:
    """Log dirs whose files hold partition records, per INVENTORY.md's per-file counts.

    The other directories fold to nothing on both sides; leaving them out keeps this
    test to a few minutes (decoding ~1M NoOp records twice is the cost, not the fold).
    """
    hit = {str(Path(cells[0]).parent) for root in ROOTS for cells in inventory(root)
           if cells[1] in ("segment", "snapshot")
           and any(t in cells[6] + " " for t in PARTITION_TYPES)}
    return [d for d in real_log_dirs() if rel(d) in hit]


DIRS = _dirs_with_partition_records()


@pytest.fixture(scope="module")
def folded_all(spark):
    """One Spark job folds every fixture directory (cluster id = its index)."""
    frames = [spark.read.format("kraft-metadata").option("cluster_id", f"c{i:03d}").load(str(d))
              for i, d in enumerate(DIRS)]
    src = reduce(lambda a, b: a.unionByName(b), frames)
    by: dict[str, list] = {}
    for r in spark_fold_rows(spark, src):
        by.setdefault(r.pop("cluster_id"), []).append(r)
    return by


def test_there_are_real_logs_with_partition_changes():
    """12 of the corpus's logs hold partition records, over 40 with the extension's."""
    assert len(DIRS) >= (41 if EXTENSION in ROOTS else 12)


@pytest.mark.parametrize("i", range(len(DIRS)), ids=[str(d.relative_to(d.parents[3]))
                                                       for d in DIRS])
def test_fold_equals_replay(folded_all, i):
    _replay, steps = replay_dir(DIRS[i])
    expected = normalise(replay_rows(steps))
    got = normalise(folded_all.get(f"c{i:03d}", []))
    assert got == expected
