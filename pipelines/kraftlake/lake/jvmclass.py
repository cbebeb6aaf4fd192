"""JVM classes the driver calls directly (Delta's log, Hadoop's Path), named in full.

`spark._jvm.org.apache.hadoop.fs.Path` walks the name a segment at a time, one py4j round
trip each, and py4j first tries every segment as a class (the bare name, then under each of
pyspark's imported packages): each such miss makes the JVM search all of Spark's ~280 jars.
`jvm.scala.Option` cost 9 misses, `jvm.org.apache.spark.sql.delta.DeltaLog` 12, and an
increment asked for them a few hundred times. Named in full, a class is one round trip that
finds it at once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this before it decides to start Spark
    from pyspark.sql import SparkSession


def java_class(spark: SparkSession, name: str):
    """The py4j handle of the JVM class `name` (fully qualified), for its static members."""
    return getattr(spark._jvm, name)


def has_jvm(spark: SparkSession) -> bool:
    """Whether `spark` drives a JVM of this process (a classic session) rather than being a
    Spark Connect client's session, which has no `_jvm` to call: a notebook connected to
    `kraftlake serve` reads the lake through Spark's DataFrame API alone. A process that
    never imported pyspark's Connect session class holds no Connect session."""
    connect = sys.modules.get("pyspark.sql.connect.session")
    return connect is None or not isinstance(spark, connect.SparkSession)
