"""The one place a SparkSession is made, so every job shares settings and the DataSource.

Python workers must run the driver's interpreter (`PYSPARK_PYTHON`), otherwise they start
another Python that cannot import kraftlake and fail to connect back.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from .config import Config, load_config


def get_spark(cfg: Config | None = None, master: str | None = None,
              extra_conf: dict[str, str] | None = None) -> SparkSession:
    """Get (or create) the session described by the configuration; registers `kraft-metadata`.

    Under `spark-submit` the master given on the command line wins (we only set one when
    the launcher did not).
    """
    cfg = cfg or load_config()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(cfg.spark_app_name)
    if master or "spark.master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(master or cfg.spark_master)
    for k, v in {**cfg.spark_conf, **(extra_conf or {})}.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from .sources.datasource import KraftMetadataDataSource

    spark.dataSource.register(KraftMetadataDataSource)
    return spark
