"""Where an ingest resumes a cluster, and whether its logs hold anything new: decided
without Spark.

A scheduled `kraftlake ingest` mostly finds nothing new, and the answer is written in the
lake's Delta logs (the cluster's `ingest_progress` rows, read by delta-rs: `lake.deltalog`),
in `<lake>/_kraftlake/plans/` and in the log directory's batch headers. `nothing_new` reads
those with the rules `jobs.batch` plans an increment by (`plan_file`, `resume_start`,
`tail_by_header`, `nothing_between`: written here once, for both), so the command answers
"nothing new" without starting a JVM. It answers only when it is sure; otherwise the
Spark path decides as before, for every input:

* a cluster the lake does not hold yet, or a dump-log text (read and compared whole);
* an open increment: a plan of the next version of the cluster's ingest or stream, which a
  killed job left and the next one must finish;
* a tail the batch header does not prove (no CRC and epoch kept, or they differ): the
  records are compared with the lake's, which is a Spark read, and may refuse the input;
* a metadata transaction the last increment left open (`pending_txn_from`): its records
  wait for the next increment, so the cluster stays on the path that reads them;
* a lake this reader cannot read exactly (`UnreadableError`: an older `ingest_progress`
  layout, a Delta feature, a location or a store error).
"""

from __future__ import annotations

from ..config import Config
from ..lake.apps import INCREMENT_KINDS, app_id_for
from ..lake.deltalog import LakeLog, UnreadableError
from ..lake.schema import KRAFTLAKE_DIR
from ..sources.files import BatchEntry, LogDirIndex
from ..sources.plan import latest, offset_dict
from ..uris import file_size, join
from .inputs import Input
from .progress import IncrementResult, furthest, last_of


def plan_file(root: str, app_id: str, version: int) -> str:
    """Where increment `version` of `app_id` records its range before any table is touched
    (`jobs.batch.write_plan`)."""
    safe = app_id.replace(":", "_").replace("/", "_")
    return join(root, KRAFTLAKE_DIR, "plans", safe, f"{version:012d}.json")


def resume_start(at: dict) -> dict:
    """The start offset dict of the read after progress row `at` (where the lake holds the
    cluster), its tail already checked (`crc` -1: the reader need not check it again)."""
    start = offset_dict(at["end_offset"], at["snapshot_high"]
                        if at["snapshot_high"] is not None else -1)
    start["crc"] = -1
    return start


def nothing_between(start: dict, end: dict) -> bool:
    """A read from `start` to `end` (`sources.plan.latest`) holds nothing: no new offset,
    no reset snapshot, no new check snapshot."""
    return end is start or (end["offset"] == start["offset"] and end["reset"] < 0
                            and end["snap"] == start["snap"])


def kept_batch(row: dict) -> tuple[int, int] | None:
    """(CRC, leader epoch) of the batch holding the last offset an increment ingested, as
    its progress row kept them (None: a row written before kraftlake kept them)."""
    crc, epoch = row.get("end_batch_crc"), row.get("end_batch_epoch")
    return None if crc is None or epoch is None else (int(crc), int(epoch))


def tail_by_header(index: LogDirIndex, end_offset: int, batch: tuple[int, int] | None
                   ) -> tuple[bool, BatchEntry | None]:
    """Whether the log of `index` continues a lake that holds its cluster up to
    `end_offset`, proven by batch headers alone, and the log's batch holding
    `end_offset - 1` as on disk (None: the log has none).

    Proven when the log starts at or after `end_offset` (retention passed it: the planner
    records a gap), or when that batch's header has the CRC and epoch the lake kept
    (`batch`): the CRC covers every byte of its records. Not proven otherwise, which only
    a comparison of the records can settle (`jobs.batch._check_tail`)."""
    index.refresh()
    if index.log_start is not None and index.log_start >= end_offset:
        return True, None
    e = index.batch_before_on_disk(end_offset)
    return e is not None and batch is not None and (e.crc, e.epoch) == batch, e


def _settled(lake: LakeLog, log_dir: str, cluster_id: str) -> bool:
    """The lake holds everything of `log_dir` for `cluster_id`, for certain (module
    docstring); False also when it cannot be told here."""
    rows = lake.progress_rows(cluster_id)
    at = furthest(rows)
    if at is None or at["pending_txn_from"] is not None:
        return False
    for kind in INCREMENT_KINDS:  # an increment a killed job of either kind left open
        app_id = app_id_for(cluster_id, kind)
        prev = last_of(rows, app_id)
        if file_size(plan_file(lake.root, app_id, prev["version"] + 1 if prev else 0)) \
                is not None:
            return False
    index = LogDirIndex(log_dir)
    end_offset = int(at["end_offset"] or 0)
    if end_offset > 0 and not tail_by_header(index, end_offset, kept_batch(at))[0]:
        return False
    start = resume_start(at)
    return nothing_between(start, latest(index, start))


def nothing_new(cfg: Config, inputs: list[Input]) -> list[IncrementResult] | None:
    """What `jobs.batch.ingest` of `inputs` would return when none of the accepted ones
    holds anything new for the lake of `cfg` (each "nothing new", a refused one refused),
    decided without Spark; None when any of them may hold something, or it cannot be told
    here: the Spark path then decides for all of them, as it always did (one of them
    ingested may change what the next of the same cluster is)."""
    lake = LakeLog(cfg.lake)
    results = []
    try:
        for inp in inputs:
            if inp.refused is not None:
                results.append(IncrementResult(inp.cluster_id or "", "", -1,
                                               refused=inp.refused, source=inp.source))
                continue
            assert inp.cluster_id is not None  # find_inputs gives each accepted input one
            if inp.kind != "dir" or not _settled(lake, inp.location, inp.cluster_id):
                return None
            results.append(IncrementResult(inp.cluster_id, app_id_for(inp.cluster_id), -1,
                                           source=inp.source))
    except (UnreadableError, OSError):
        return None
    return results
