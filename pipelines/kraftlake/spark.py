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
from .jvm import JarResolutionError, resolve
from .uris import s3_options

DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def _s3a_conf(conf: dict[str, str]) -> dict[str, str]:
    """Hadoop s3a settings from the AWS environment (`kraftlake.uris`), unless the conf
    sets them: the lake's writer then talks to the same store as the log readers."""
    opts = s3_options()
    out = {"spark.hadoop.fs.s3a.endpoint.region": opts["region"]}
    if "endpoint" in opts:
        out.update({"spark.hadoop.fs.s3a.endpoint": opts["endpoint"],
                    "spark.hadoop.fs.s3a.path.style.access": "true",
                    "spark.hadoop.fs.s3a.connection.ssl.enabled":
                        str(opts["endpoint"].startswith("https")).lower()})
    return {k: v for k, v in out.items() if k not in conf}


def _jars(conf: dict[str, str], uris: list[str]) -> str | None:
    """`spark.jars` for this session, or None when the launcher or the conf brings them."""
    submitted = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if "spark.jars" in conf or "--packages" in submitted or "--jars" in submitted:
        return None
    try:
        jars = resolve("delta")
        if any(str(u).startswith("s3a://") for u in uris):
            jars += resolve("s3")
    except JarResolutionError as exc:  # one line and exit status 1, not a traceback
        raise SystemExit(f"kraftlake: {exc}") from None
    return ",".join(jars)


# The driver's heap by the bytes a job reads, when nothing sets `spark.driver.memory`. The
# rows never gather in the driver (the fold runs in the executors' Python workers, the
# decoded source and the work frames are on disk), so the heap holds Spark's and Delta's
# own state and the sort and shuffle buffers of two tasks. A 4 GiB heap for a log of a few
# kilobytes made a small ingest's JVM grow to 2-3 GiB resident (examples/real-3-broker:
# process tree peak 4.3 GiB at 4g, 2.9 GiB at 1g); a 6-hour `large` log (~200 MB)
# ingests in 4g.
DRIVER_MEMORY_STEPS = ((64 << 20, "1g"), (512 << 20, "2g"))  # (input below, heap)
DRIVER_MEMORY_MAX = "4g"


def driver_memory(input_bytes: int) -> str:
    """The driver heap for a job reading `input_bytes` (see DRIVER_MEMORY_STEPS)."""
    return next((heap for below, heap in DRIVER_MEMORY_STEPS if input_bytes < below),
                DRIVER_MEMORY_MAX)


def get_spark(cfg: Config | None = None, master: str | None = None,
              extra_conf: dict[str, str] | None = None,
              uris: list[str] | None = None, input_bytes: int | None = None) -> SparkSession:
    """Get (or create) the session described by the configuration; registers `kraft-metadata`.

    Under `spark-submit` the master given on the command line wins (we only set one when
    the launcher did not). `uris`: the sources the job reads (the lake's is in `cfg`), so
    the s3a jars are added when one of them needs them. `input_bytes`: what the job reads,
    which sizes the driver's heap unless the configuration or the launcher sets it (without
    it, Spark's default: 1g; the commands that read only the lake take that).
    """
    cfg = cfg or load_config()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(cfg.spark_app_name)
    if master or "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(master or cfg.spark_master)
    conf = {**DELTA_CONF, **cfg.spark_conf, **(extra_conf or {})}
    launcher = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    if input_bytes is not None and "spark.driver.memory" not in conf \
            and "--driver-memory" not in launcher and "spark.driver.memory" not in launcher:
        conf["spark.driver.memory"] = driver_memory(input_bytes)
    locations = [str(cfg.lake), *(uris or [])]
    jars = _jars(conf, locations)
    if jars:
        conf["spark.jars"] = jars
    if any(u.startswith(("s3a://", "s3://")) for u in locations):
        conf.update(_s3a_conf(conf))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from .sources.datasource import KraftMetadataDataSource

    spark.dataSource.register(KraftMetadataDataSource)
    return spark
