"""The one place a SparkSession is made, so every job shares settings and the DataSource.

Python workers must run the driver's interpreter (`PYSPARK_PYTHON`), otherwise they start
another Python that cannot import kraftlake and fail to connect back.

Delta is Spark's own connector (delta-spark): its SQL extension and catalog are set here,
and its jars come from the pinned set resolved at setup (`kraftlake.jvm`), plus hadoop-aws
when a URI the job touches is `s3a://`. A launcher that already brings jars (`spark-submit
--packages io.delta:...`, or `spark.jars` in the conf) is left to do so.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from .config import Config, load_config
from .jvm import resolve

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _jars(conf: dict[str, str], uris: list[str]) -> str | None:
    """`spark.jars` for this session, or None when the launcher or the conf brings them."""
    submitted = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "spark.jars" in conf or "--packages" in submitted or "--jars" in submitted:
        return None
    jars = resolve("delta")
    if any(str(u).startswith("s3a://") for u in uris):
        jars += resolve("s3")
    return ",".join(jars)


def get_spark(cfg: Config | None = None, master: str | None = None,
              extra_conf: dict[str, str] | None = None,
              uris: list[str] | None = None) -> SparkSession:
    """Get (or create) the session described by the configuration; registers `kraft-metadata`.

    Under `spark-submit` the master given on the command line wins (we only set one when
    the launcher did not). `uris`: the sources the job reads (the lake's is in `cfg`), so
    the s3a jars are added when one of them needs them.
    """
    cfg = cfg or load_config()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(cfg.spark_app_name)
    if master or "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(master or cfg.spark_master)
    conf = {**DELTA_CONF, **cfg.spark_conf, **(extra_conf or {})}
    jars = _jars(conf, [str(cfg.lake), *(uris or [])])
    if jars:
        conf["spark.jars"] = jars
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from .sources.datasource import KraftMetadataDataSource

    spark.dataSource.register(KraftMetadataDataSource)
    return spark
