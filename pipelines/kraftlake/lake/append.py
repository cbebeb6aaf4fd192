"""An idempotent append as one Delta transaction opened by kraftlake, not by the writer.

Delta's DataFrame writer makes an append idempotent with the options `txnAppId` /
`txnVersion`: before writing it asks the table's snapshot which version the app id
committed last, and that question reconstructs the snapshot's whole state (Delta:
"Compute snapshot for version", three Spark jobs and 1-2 s on a table of an increment's
lake, every time: each commit makes a new snapshot). kraftlake has already asked, from the
version's checksum file, which costs milliseconds (`delta._done`), so an increment paid
that state once per appended table for an answer it held.

Here the append goes through the same Delta transaction API the writer uses
(`OptimisticTransaction.writeFiles` and `commit`, as Delta's own streaming sink does), with
the same actions: the data files, a `SetTransaction` of the app id and version, and a
`WRITE` commit carrying the user metadata, so the table's history, its checksum and every
reader see exactly what the writer would have written. The app id is registered as read
by the transaction (`readTxn`, what the writer's question does besides answering it), so a
concurrent commit of the same app id still fails Delta's conflict check
(`ConcurrentTransactionException`), which `delta._retrying` answers by asking again.

Only for a table that exists: a first write creates the table (partitioning, properties)
through the writer, which has no state to reconstruct then.
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame

from .jvmclass import java_class


def append_files(frame: DataFrame, path: str, snapshot, app_id: str, version: int,
                 user_metadata: str) -> None:
    """Append `frame` (rows conformed to the table) to the Delta table at `path`, whose
    snapshot `snapshot` was read to decide that (app_id, version) has not committed."""
    spark = frame.sparkSession
    some, none = java_class(spark, "scala.Some"), java_class(spark, "scala.Option").empty()
    log = java_class(spark, "org.apache.spark.sql.delta.DeltaLog").forTable(
        spark._jsparkSession, path)
    txn = log.startTransaction(none, some(snapshot))
    txn.readTxn().addOne(app_id)  # as the writer's own check would (see the module doc)
    files = txn.writeFiles(frame._jdf)
    txn_action = java_class(spark, "org.apache.spark.sql.delta.actions.SetTransaction")(
        app_id, version, some(int(time.time() * 1000)))
    # DeltaOperations.Write(mode, partitionBy, predicate, userMetadata, and five options
    # the writer leaves unset for an append)
    operation = java_class(spark, "org.apache.spark.sql.delta.DeltaOperations$Write")(
        java_class(spark, "org.apache.spark.sql.SaveMode").Append, none, none,
        some(user_metadata), none, none, none, none, none)
    txn.commit(files.appended(txn_action), operation)
