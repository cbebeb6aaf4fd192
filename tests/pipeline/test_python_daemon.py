"""The Python workers of a session kraftlake starts import the installed pyspark, not the zip
Spark puts first on their path (`kraftlake.python_daemon`), and only a pip-installed
pyspark's own zips are moved; its JVM starts no Python to look for installed data sources
(`kraftlake.spark.NO_PYTHON_SOURCE_LOOKUP`); the workers' Arrow buffers come from the
allocator the driver's come from (`kraftlake.spark.arrow_pool`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyspark

from kraftlake.config import load_config
from kraftlake.python_daemon import installed_first
from kraftlake.spark import ARROW_POOL_ENV, get_spark

HOME = Path(pyspark.__file__).parent  # a pip install: its own SPARK_HOME


def _pyspark_file(batches):
    import pyspark

    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"file": pyspark.__file__}])


def test_the_workers_import_the_installed_pyspark(spark) -> None:
    (row,) = spark.range(1).coalesce(1).mapInArrow(_pyspark_file, "file string").collect()
    assert row.file == pyspark.__file__  # not .../python/lib/pyspark.zip/pyspark/__init__.py


def _arrow_pool(batches):
    import pyarrow as pa

    for _ in batches:
        yield pa.RecordBatch.from_pylist([{"pool": pa.default_memory_pool().backend_name}])


def test_the_workers_allocate_arrow_buffers_as_the_driver_does(spark) -> None:
    """pyarrow's own default is mimalloc; kraftlake's is jemalloc (the system's where this
    pyarrow has none), in the driver and, through Spark's executorEnv, in every worker."""
    expected = os.environ.get(ARROW_POOL_ENV) or (
        "jemalloc" if "jemalloc" in pa.supported_memory_backends() else "system")
    assert pa.default_memory_pool().backend_name == expected
    rows = spark.range(2).repartition(2).mapInArrow(_arrow_pool, "pool string").collect()
    assert {row.pool for row in rows} == {expected}


def test_the_jvm_looked_up_no_installed_python_data_source(spark) -> None:
    """Spark keeps what the lookup found (None until one ran) in `DataSourceManager`; the
    session has read Delta tables and registered kraftlake's own source by now, either of
    which runs the lookup when the JVM may (with $PYSPARK_DRIVER_PYTHON naming a command, or
    unset, it is Some: the test fails)."""
    spark.range(1).write.format("noop").mode("overwrite").save()  # a data source looked up
    manager = getattr(getattr(spark.sparkContext._jvm,
                              "org.apache.spark.sql.execution.datasources.DataSourceManager$"),
                      "MODULE$")
    assert manager.dataSourceBuilders().isEmpty()


def test_only_the_zips_of_the_installed_pyspark_move_behind_it() -> None:
    zips = [str(HOME / "python/lib/pyspark.zip"), str(HOME / "python/lib/py4j-src.zip")]
    rest = [p for p in sys.path if not p.endswith(".zip")]
    assert installed_first(["", *zips, *rest]) == ["", *rest, *zips]
    # another Spark distribution's zips (a $SPARK_HOME elsewhere) keep their place
    other = ["", "/opt/spark/python/lib/pyspark.zip", *rest]
    assert installed_first(other) == other


def test_a_master_named_only_in_the_launchers_arguments_still_gets_a_session(
        spark, monkeypatch) -> None:
    """`$PYSPARK_SUBMIT_ARGS` naming the master leaves it out of the session's settings:
    the daemon's choice must not look it up there (a KeyError before)."""
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--conf spark.master=local[2] pyspark-shell")
    assert get_spark(load_config()).sparkContext is spark.sparkContext
