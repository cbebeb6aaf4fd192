"""kraftlake: history, incidents and data quality from Kafka's KRaft metadata log.

Layers: `kraftlake.layers.LAYERS`, each importing only the ones before it (the table in
docs/architecture.md, held by tests/test_architecture.py).

The names below are the package's face, what a notebook, a test or a benchmark calls:
ingest and stream into a lake, read and maintain the lake, decode a log, simulate a
cluster and score the pipeline against its ground truth, report. They are imported on
first use, so `import kraftlake` (and every command) stays quick and starts no JVM.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.9.0"

# name -> the module that defines it
_FACE: dict[str, str] = {
    # configuration and the SparkSession of a job
    "Config": "kraftlake.config", "load_config": "kraftlake.config",
    "get_spark": "kraftlake.spark",
    # ingest (batch) and stream
    "ingest": "kraftlake.jobs.batch", "ingest_dir": "kraftlake.jobs.batch",
    "start_stream": "kraftlake.jobs.stream", "read_cluster_id": "kraftlake.sources.files",
    # the lake
    "Lake": "kraftlake.lake.delta", "table_names": "kraftlake.lake.schema",
    "table_schema": "kraftlake.lake.schema", "maintain": "kraftlake.lake.maintain",
    "run_quality": "kraftlake.quality.runner",
    # decode
    "Record": "kraftlake.codec.records", "iter_path": "kraftlake.codec.logfiles",
    "EVENT_TYPES": "kraftlake.kraft.events",
    # simulate, and score against the simulator's ground truth
    "SCENARIOS": "kraftlake.simulate.scenarios", "simulate_cluster": "kraftlake.simulate.run",
    "read_labels": "kraftlake.simulate.score", "label_keys": "kraftlake.simulate.score",
    "event_keys": "kraftlake.simulate.score", "Score": "kraftlake.simulate.score",
    "compare": "kraftlake.simulate.score", "print_score": "kraftlake.simulate.score",
    # report
    "write_report": "kraftlake.report", "Window": "kraftlake.report.data",
    "lake_events": "kraftlake.report.data", "lake_current": "kraftlake.report.data",
    "print_incidents": "kraftlake.report.console",
}

__all__ = [
    "EVENT_TYPES", "SCENARIOS", "Config", "Lake", "Record", "Score", "Window", "__version__",
    "compare", "event_keys", "get_spark", "ingest", "ingest_dir", "iter_path", "label_keys",
    "lake_current", "lake_events", "load_config", "maintain", "print_incidents", "print_score",
    "read_cluster_id", "read_labels", "run_quality", "simulate_cluster", "start_stream",
    "table_names", "table_schema", "write_report",
]

if TYPE_CHECKING:
    from kraftlake.codec.logfiles import iter_path
    from kraftlake.codec.records import Record
    from kraftlake.config import Config, load_config
    from kraftlake.jobs.batch import ingest, ingest_dir
    from kraftlake.jobs.stream import start_stream
    from kraftlake.kraft.events import EVENT_TYPES
    from kraftlake.lake.delta import Lake
    from kraftlake.lake.maintain import maintain
    from kraftlake.lake.schema import table_names, table_schema
    from kraftlake.quality.runner import run_quality
    from kraftlake.report import write_report
    from kraftlake.report.console import print_incidents
    from kraftlake.report.data import Window, lake_current, lake_events
    from kraftlake.simulate.run import simulate_cluster
    from kraftlake.simulate.scenarios import SCENARIOS
    from kraftlake.simulate.score import (
        Score,
        compare,
        event_keys,
        label_keys,
        print_score,
        read_labels,
    )
    from kraftlake.sources.files import read_cluster_id
    from kraftlake.spark import get_spark


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use (PEP 562)."""
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The face only: not the helpers this module itself imports (`importlib`, `Any`)."""
    return sorted({*__all__, "__version__"})
