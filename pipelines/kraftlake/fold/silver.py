"""Bronze rows -> silver: committed records only, typed partition changes, topics, brokers,
configs. Spark column expressions, but for two rules of Kafka's written once in `kraft/`:
the metadata-transaction rule, run on the driver over the few markers, and the fan-out
rule, run by Spark once per cluster over its few fan-out records (`fanned_out`).

The record fields read here are the source rows' typed struct `fields` (`codec.fields`: the
decoder's values, named and typed from the record schemas), not the JSON `data`, which Spark
would parse again per record.

Partition changes keep "absent is not empty": a null state column means unchanged
(Leader -2 and LeaderRecoveryState -1 become null), `[]` stays `[]`. A partition record
Kafka refuses (LeaderRecoveryState outside `kraft.partition.LRS_VALUES` /
`LRS_CHANGE_VALUES`) takes no effect, as in `PartitionRegistration.from_record` / `merge`.
RemoveTopicRecord and ClearElrRecord are expanded to a delete row / a clear row
(ELR = LastKnownElr = []) per partition they reach, those existing at the record
(`kraft.fanout.reached`); the fold drops the clear rows that change nothing.
"""

from __future__ import annotations

from itertools import groupby

import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from ..kraft.fanout import UnknownTopic, reached
from ..kraft.partition import (
    LIST_COLUMNS,
    LRS_CHANGE_VALUES,
    LRS_VALUES,
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    STATE_COLUMNS,
)
from ..kraft.records import (
    BROKER_TYPES,
    CLEAR_ELR_RECORD,
    CONFIG_RECORD,
    CONFIG_TYPES,
    FAN_OUT_TYPES,
    FENCE,
    FENCE_BROKER_RECORD,
    IN_CONTROLLED_SHUTDOWN,
    PARTITION_CHANGE_RECORD,
    PARTITION_RECORD,
    REGISTER_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    STATE_TYPES,
    TOPIC_RECORD,
    TOPIC_TYPES,
    TRANSACTION_MARKERS,
    UNFENCE,
    UNFENCE_BROKER_RECORD,
    transactions,
)
from ..lake.schema import PARTITION_KEY

KEY = list(PARTITION_KEY)
MARKERS = list(TRANSACTION_MARKERS)
LAST_OFFSET = 2**63 - 1  # the end of a range open to the end of the log
STATE = list(STATE_COLUMNS)
ARRAYS = list(LIST_COLUMNS)

_INTS = T.ArrayType(T.IntegerType())


def field(key: str) -> Column:
    """A record's field `key` (its snake_case Kafka name), typed: a child of the source
    rows' struct `fields`."""
    return F.col(f"fields.{key}")


def is_relevant() -> Column:
    """A source row is a decoded record some silver table is made of (or a transaction
    marker, which decides whether such records took effect)."""
    return ((F.col("row_kind") == "record") & ~F.col("control") & F.col("data").isNotNull()
            & F.col("record_type").isin(*STATE_TYPES, *MARKERS))


def relevant(src: DataFrame) -> DataFrame:
    """Decoded records the silver tables need (log and snapshot), with `seq` 0 log, 1 snapshot."""
    return (src.filter(is_relevant())
            .withColumn("seq", F.when(F.col("source") == "snapshot", 1).otherwise(0))
            .select("cluster_id", "source", "snapshot_role", "snapshot_end_offset", "offset",
                    "seq", "position", "timestamp", "record_type", "fields"))


def transaction_markers(rel: DataFrame) -> DataFrame:
    """The log's transaction markers among `rel` (`relevant` rows), for `committed`: the
    caller collects them (a log holds few)."""
    return rel.filter((F.col("source") == "log") & F.col("record_type").isin(MARKERS)).select(
        "cluster_id", "offset", "record_type")


def committed(rel: DataFrame, markers: pa.Table | None) -> tuple[DataFrame, dict[str, int]]:
    """(records that took effect, cluster id -> Begin offset of the transaction still open
    at the end, for the clusters that have one).

    `markers`: `transaction_markers(rel)`'s rows; Kafka's rule decides on them alone
    (`kraft.records.transactions`), and the records of an aborted transaction, or of one
    still open (the next increment reads them again from its Begin), are dropped by one
    broadcast join against those few ranges. Snapshot records are always committed state.
    None: the caller knows `rel` holds no marker and no record of a transaction opened
    before it, so every record took effect.
    """
    if markers is None:
        return rel, {}
    dropped: list[tuple[str, int, int]] = []
    pending: dict[str, int] = {}
    rows = sorted(zip(*(markers.column(c).to_pylist()
                        for c in ("cluster_id", "offset", "record_type")), strict=True))
    for cid, group in groupby(rows, key=lambda r: r[0]):
        aborted, begin = transactions((offset, t) for _c, offset, t in group)
        dropped += [(cid, lo, hi) for lo, hi in aborted]
        if begin is not None:
            pending[cid] = begin
            dropped.append((cid, begin, LAST_OFFSET))
    done = rel.filter(~F.col("record_type").isin(MARKERS))
    if dropped:
        ranges = F.broadcast(rel.sparkSession.createDataFrame(
            dropped, "_cluster_id string, _lo long, _hi long"))
        done = done.join(ranges, (F.col("source") == "log")
                         & (F.col("cluster_id") == F.col("_cluster_id"))
                         & (F.col("offset") > F.col("_lo")) & (F.col("offset") < F.col("_hi")),
                         "left_anti")
    return done, pending


def topics_of(rec: DataFrame, live: DataFrame | None = None) -> DataFrame:
    """(cluster_id, topic_id, topic_name, created_*, deleted_*) events of this increment.

    A RemoveTopicRecord of a topic that does not exist there deletes nothing: Kafka refuses
    to remove a topic id its image does not hold (`TopicsDelta`), so it drops none of the
    configs of the name the id gets later (`fold.context`). The topic exists when an earlier
    increment left it live (`live`: cluster_id, topic_id) or a TopicRecord of this one
    came first; a removal of an id no TopicRecord ever names is kept, nameless."""
    created = (rec.filter(F.col("record_type") == TOPIC_RECORD)
               .select("cluster_id", field("topic_id").alias("topic_id"),
                       field("name").alias("topic_name"), F.col("offset").alias("created_offset"),
                       F.col("timestamp").alias("created_ts")))
    created = created.groupBy("cluster_id", "topic_id").agg(
        F.first("topic_name").alias("topic_name"), F.min("created_offset").alias("created_offset"),
        F.min("created_ts").alias("created_ts"))
    key = ["cluster_id", "topic_id"]
    removed = (rec.filter(F.col("record_type") == REMOVE_TOPIC_RECORD)
               .select("cluster_id", field("topic_id").alias("topic_id"),
                       F.col("offset").alias("deleted_offset"),
                       F.col("timestamp").alias("deleted_ts"))
               .join(created.select(*key, "created_offset"), key, "left"))
    existed = F.col("created_offset").isNull() | (
        F.col("deleted_offset") > F.col("created_offset"))
    if live is not None:
        removed = removed.join(live.select(*key).distinct().withColumn("_live", F.lit(True)),
                               key, "left")
        existed = existed | F.col("_live").isNotNull()
    deleted = (removed.filter(existed)
               .groupBy(*key).agg(F.min("deleted_offset").alias("deleted_offset"),
                                  F.min("deleted_ts").alias("deleted_ts")))
    return created.join(deleted, ["cluster_id", "topic_id"], "full_outer")


def brokers_of(rec: DataFrame) -> DataFrame:
    """Broker rows: a registration's state, or the change a record makes to it. Fenced and
    InControlledShutdown are one int8 child of `fields`: a RegisterBrokerRecord's bool as
    1 / 0, a BrokerRegistrationChangeRecord's change (FENCE / UNFENCE, or no change)."""
    t = F.col("record_type")
    fenced_raw = field("fenced")
    fenced = (F.when(t == FENCE_BROKER_RECORD, F.lit(True))
              .when(t == UNFENCE_BROKER_RECORD, F.lit(False))
              .when(t == REGISTER_BROKER_RECORD, fenced_raw == 1)
              .when(fenced_raw == FENCE, F.lit(True))
              .when(fenced_raw == UNFENCE, F.lit(False)))
    ics_raw = field("in_controlled_shutdown")
    ics = (F.when(t == REGISTER_BROKER_RECORD, ics_raw == 1)
           .when(ics_raw == IN_CONTROLLED_SHUTDOWN, F.lit(True)))
    return (rec.filter(t.isin(*BROKER_TYPES))
            .select("cluster_id", "offset", "seq", "timestamp", "record_type",
                    F.coalesce(field("broker_id"), field("id")).cast("int").alias("broker_id"),
                    F.coalesce(field("broker_epoch"), field("epoch")).cast("long").alias(
                        "broker_epoch"),
                    field("incarnation_id").alias("incarnation_id"), fenced.alias("fenced"),
                    ics.alias("in_controlled_shutdown"), field("rack").alias("rack"),
                    field("log_dirs").alias("log_dirs")))


def configs_of(rec: DataFrame) -> DataFrame:
    t = F.col("record_type")
    return (rec.filter(t.isin(*CONFIG_TYPES))
            .select("cluster_id", "offset", "seq", "timestamp",
                    F.when(t == CONFIG_RECORD, "config").otherwise("feature").alias("kind"),
                    field("resource_type").cast("int").alias("resource_type"),
                    field("resource_name").alias("resource_name"), field("name").alias("name"),
                    field("value").alias("value"),
                    field("feature_level").cast("int").alias("feature_level")))


def _alive_before(topic_names: DataFrame) -> DataFrame:
    """(cluster_id, topic_id) of the topics alive before the increment: known, and not
    deleted when the rows say so."""
    if "deleted_offset" in topic_names.columns:
        topic_names = topic_names.filter(F.col("deleted_offset").isNull())
    return topic_names.select("cluster_id", "topic_id")


def _live_topics_only(rows: DataFrame, rec: DataFrame, topic_names: DataFrame) -> DataFrame:
    """Keep rows whose topic exists at their offset (TopicRecord seen, no RemoveTopic since).

    Kafka refuses partition records of unknown or deleted topics (RCM.replay); so does the
    reference replay. Topics known from earlier increments count as created at offset -1.
    """
    t = F.col("record_type")
    events = (rec.filter(t.isin(*TOPIC_TYPES))
              .select("cluster_id", field("topic_id").alias("topic_id"), "offset", "seq",
                      "position", (t == TOPIC_RECORD).alias("_ev")))
    known = _alive_before(topic_names).select(
        "cluster_id", "topic_id", F.lit(-1).cast("long").alias("offset"), F.lit(0).alias("seq"),
        F.lit(-1).cast("long").alias("position"), F.lit(True).alias("_ev"))
    marked = (rows.withColumn("_ev", F.lit(None).cast("boolean"))
              .unionByName(events.unionByName(known), allowMissingColumns=True)
              .withColumn("_is_ev", F.col("_ev").isNotNull().cast("int")))
    w = (Window.partitionBy("cluster_id", "topic_id")
         .orderBy("offset", "seq", "position", "_is_ev")
         .rowsBetween(Window.unboundedPreceding, -1))
    marked = marked.withColumn("_alive", F.last("_ev", True).over(w))
    return marked.filter((F.col("_is_ev") == 0) & F.coalesce(F.col("_alive"), F.lit(False))) \
        .drop("_ev", "_is_ev", "_alive")


def partition_changes(rec: DataFrame, known: DataFrame | None, topic_names: DataFrame,
                      live_before: DataFrame | None = None,
                      topic_records: bool = True) -> DataFrame:
    """Silver partition_changes rows of an increment.

    `known`: (cluster_id, topic_id, partition_id) of partitions that may exist before the
    increment (partition_current), which a RemoveTopicRecord or a ClearElrRecord reaches
    beside those the increment creates; None when the caller knows `rec` holds neither
    record (most increments), so no fan-out (`fanned_out`, a Python call per cluster) is
    planned; `topic_names`: (cluster_id, topic_id, topic_name) known so far;
    `live_before`: (cluster_id, topic_id) of topics alive before the increment (default:
    `topic_names`); `topic_records` False: the caller knows `rec` holds no TopicRecord or
    RemoveTopicRecord, so a topic is alive at every offset iff it was before, and no window
    is planned to follow its life. Check snapshots are not changes.
    """
    rec = rec.filter((F.col("source") == "log") | (F.col("snapshot_role") == "reset"))
    t = F.col("record_type")
    typed = rec.filter(t.isin(PARTITION_RECORD, PARTITION_CHANGE_RECORD))
    is_pr = t == PARTITION_RECORD
    lrs = field("leader_recovery_state")
    accepted = lrs.isNull() | F.when(is_pr, lrs.isin(*LRS_VALUES)).otherwise(
        lrs.isin(*LRS_CHANGE_VALUES))
    typed = typed.filter(accepted)
    direct = typed.select(
        "cluster_id", field("topic_id").alias("topic_id"),
        field("partition_id").alias("partition_id"), "offset", "seq", "position",
        "timestamp",
        F.when(is_pr & (F.col("source") == "snapshot"), "SnapshotPartitionRecord")
        .otherwise(t).alias("record_type"), "source",
        is_pr.alias("is_reset"), F.lit(False).alias("is_delete"),
        F.when(is_pr, F.coalesce(field("leader"), F.lit(NO_LEADER)))
        .when(field("leader") != NO_LEADER_CHANGE, field("leader")).alias("leader"),
        F.when(is_pr, F.coalesce(field("leader_epoch"), F.lit(0))).alias("leader_epoch"),
        F.when(is_pr, F.coalesce(field("partition_epoch"), F.lit(0))).alias(
            "partition_epoch"),
        *[(F.when(is_pr, F.coalesce(field(a), F.array().cast(_INTS)))
           .otherwise(field(a))).alias(a) for a in ARRAYS],
        F.when(is_pr, F.coalesce(lrs, F.lit(RECOVERED)))
        .when(lrs.isin(*LRS_VALUES), lrs).alias("leader_recovery_state"),
        F.when(is_pr, F.coalesce(field("directories"), F.array().cast("array<string>")))
        .otherwise(field("directories")).alias("directories"),
    )
    out = direct if known is None else direct.unionByName(
        _fanned_out(rec, direct, known, topic_names), allowMissingColumns=True)
    alive = topic_names if live_before is None else live_before
    if topic_records:
        out = _live_topics_only(out, rec, alive)
    else:
        out = out.join(_alive_before(alive), ["cluster_id", "topic_id"], "left_semi")
    return out.select(*KEY, "offset", "seq", "timestamp", "record_type", "source",
                      "is_reset", "is_delete", *STATE)


# the columns of a fan-out record its rows keep
_FAN_OUT_RECORD = ["offset", "seq", "position", "timestamp", "record_type", "source"]
# `fanned_out`'s rows: partition_changes' key and order columns, a delete or a clear
_FANNED_ARROW = pa.schema([
    ("cluster_id", pa.string()), ("topic_id", pa.string()), ("partition_id", pa.int32()),
    ("offset", pa.int64()), ("seq", pa.int32()), ("position", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("record_type", pa.string()),
    ("source", pa.string()), ("is_reset", pa.bool_()), ("is_delete", pa.bool_()),
    ("eligible_leader_replicas", pa.list_(pa.int32())),
    ("last_known_elr", pa.list_(pa.int32()))])


def _fanned_out(rec: DataFrame, direct: DataFrame, known: DataFrame,
                topic_names: DataFrame) -> DataFrame:
    """The rows RemoveTopicRecords and ClearElrRecords make: one per partition each reaches
    (`kraft.fanout.reached`), among the `known` ones and those `direct` (the increment's own
    partition records) creates. Spark runs `fanned_out` once per cluster: the records are
    few, the partitions one row each."""
    # A partition exists from before the increment (seeded, no `since`) or from a full state
    # in it (since, in fold order): each of them, since one after a RemoveTopicRecord of its
    # topic creates it again (a topic re-created under the same id in one increment)
    states = direct.filter("is_reset").select(
        *KEY, F.col("offset").alias("since_offset"), F.col("seq").alias("since_seq"))
    candidates = (known.select(*KEY).unionByName(states, allowMissingColumns=True)
                  .join(topic_names.select("cluster_id", "topic_id", "topic_name"),
                        ["cluster_id", "topic_id"], "left"))
    records = (rec.filter(F.col("record_type").isin(*FAN_OUT_TYPES))
               .select("cluster_id", field("topic_id").alias("topic_id"),
                       field("topic_name").alias("topic_name"), *_FAN_OUT_RECORD))
    return records.groupBy("cluster_id").cogroup(candidates.groupBy("cluster_id")) \
        .applyInArrow(fanned_out, from_arrow_schema(_FANNED_ARROW))


def fanned_out(records: pa.Table, candidates: pa.Table) -> pa.Table:
    """One cluster's fan-out rows (`_FANNED_ARROW`): a delete row per partition a
    RemoveTopicRecord reaches, a clear row (ELR = LastKnownElr = []) per partition a
    ClearElrRecord reaches; the kernel applies them (`PartitionRegistration.clear_elr`,
    and nothing where a clear changes nothing).

    `records`: the cluster's RemoveTopicRecords and ClearElrRecords (topic_id, topic_name,
    and `_FAN_OUT_RECORD`); `candidates`: the partitions that may exist (topic_id,
    partition_id, topic_name, and since_offset / since_seq: a full state in the increment
    from which it exists, null for a partition known before it; a partition may have
    several).

    The records are taken in log order over the partitions existing at each, as Kafka
    replays them: a partition exists from its first full state on, and no longer once a
    RemoveTopicRecord reached it (so a name reused by a topic created later names that
    one). A record of an unknown topic reaches nothing. Which topic is alive at each offset
    is not decided here: silver keeps the rows of live topics only (`_live_topics_only`).
    """
    parts: dict[str, set[int]] = {}  # topic id -> partitions existing so far
    ids: dict[str, str] = {}  # topic name -> topic id of those topics

    def exists(tid: str, pid: int, name: str | None) -> None:
        parts.setdefault(tid, set()).add(pid)
        if name is not None:
            ids[name] = tid

    created: list[tuple[tuple[int, int], str, int, str | None]] = []
    for tid, pid, name, off, seq in zip(*(candidates.column(c).to_pylist() for c in (
            "topic_id", "partition_id", "topic_name", "since_offset", "since_seq")),
            strict=True):
        if off is None:
            exists(tid, pid, name)
        else:
            created.append(((off, seq), tid, pid, name))
    created.sort()
    rec = {c: records.column(c).to_pylist() for c in (
        "topic_id", "topic_name", "offset", "seq", "position", "record_type")}
    at: list[int] = []  # the record of each row
    keys: list[tuple[str, int]] = []
    made = 0
    for i in sorted(range(records.num_rows),
                    key=lambda i: (rec["offset"][i], rec["seq"][i], rec["position"][i])):
        point = (rec["offset"][i], rec["seq"][i])
        while made < len(created) and created[made][0] < point:
            exists(*created[made][1:])
            made += 1
        kind, tid = rec["record_type"][i], rec["topic_id"][i]
        try:
            reach = reached(kind, tid, rec["topic_name"][i], parts, ids)
        except UnknownTopic:
            continue
        at += [i] * len(reach)
        keys += reach
        if kind == REMOVE_TOPIC_RECORD:
            del parts[tid]
            for name in [n for n, t in ids.items() if t == tid]:
                del ids[name]
    picked = records.take(pa.array(at, pa.int64()))
    clear = [t == CLEAR_ELR_RECORD for t in picked.column("record_type").to_pylist()]
    empty = pa.array([[] if c else None for c in clear], pa.list_(pa.int32()))
    return pa.table({
        "cluster_id": picked.column("cluster_id"),
        "topic_id": pa.array([k[0] for k in keys], pa.string()),
        "partition_id": pa.array([k[1] for k in keys], pa.int32()),
        **{c: picked.column(c) for c in _FAN_OUT_RECORD},
        "is_reset": pa.array([False] * len(keys), pa.bool_()),
        "is_delete": pa.array([not c for c in clear], pa.bool_()),
        "eligible_leader_replicas": empty, "last_known_elr": empty,
    }).cast(_FANNED_ARROW)


def snapshot_removals(rec: DataFrame, seed_keys: DataFrame) -> DataFrame:
    """Delete rows for seeded partitions a *reset* snapshot no longer has (1.9: full reset),
    each at the end of the snapshot that lacks it: several snapshots read as full states
    (the check snapshots anchoring uncertain states, `jobs.increment._anchors`) each remove
    what they lack, not only the newest."""
    resets = rec.filter(F.col("snapshot_role") == "reset")
    snap = ["cluster_id", "snapshot_end_offset"]
    snaps = resets.groupBy(*snap).agg(F.max("offset").alias("offset"),
                                      F.max("timestamp").alias("timestamp"))
    present = resets.filter(F.col("record_type") == PARTITION_RECORD).select(
        *snap, field("topic_id").alias("topic_id"),
        field("partition_id").alias("partition_id"))
    gone = seed_keys.select(*KEY).join(snaps, ["cluster_id"]).join(
        present, [*KEY, "snapshot_end_offset"], "left_anti")
    return gone.select(*KEY, "offset", F.lit(1).alias("seq"), "timestamp",
                       F.lit("SnapshotRemoval").alias("record_type"),
                       F.lit("snapshot").alias("source"), F.lit(False).alias("is_reset"),
                       F.lit(True).alias("is_delete"))
