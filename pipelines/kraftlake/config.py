"""Configuration: `conf/kraftlake.yaml` merged with the environment and CLI options.

One file holds every default so the same jobs run on a laptop (`local[*]`) and under
`spark-submit` on a cluster (a different master URL and lake path, nothing else).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_FILE = REPO / "conf" / "kraftlake.yaml"

_BUILTIN: dict[str, Any] = {
    "lake": "lake",
    "cluster_id": None,
    "min_insync_replicas_default": 1,
    "ingest": {"split_bytes": 32 * 1024 * 1024},
    "stream": {"trigger": "1s", "checkpoint": None, "compact_every": 100},
    "spark": {"master": "local[*]", "app_name": "kraftlake", "conf": {}},
}


@dataclass
class Config:
    lake: str  # a path, file:// or s3a:// URI (kraftlake.lake.hadoopfs.to_uri)
    cluster_id: str | None = None
    min_insync_replicas_default: int = 1
    split_bytes: int = 32 * 1024 * 1024
    trigger: str = "1s"
    checkpoint: str | None = None
    compact_every: int = 100  # a stream compacts the lake every N micro-batches (0 = never)
    spark_master: str = "local[*]"
    spark_app_name: str = "kraftlake"
    spark_conf: dict[str, str] = field(default_factory=dict)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def load_config(path: str | Path | None = None, **overrides: Any) -> Config:
    """Read the YAML file ($KRAFTLAKE_CONF, else conf/kraftlake.yaml) and apply overrides.

    Overrides whose value is None are ignored, so CLI options can be passed straight through.
    """
    file = Path(path or os.environ.get("KRAFTLAKE_CONF") or DEFAULT_FILE)
    raw = _BUILTIN
    if file.is_file():
        raw = _merge(_BUILTIN, yaml.safe_load(file.read_text()) or {})
    spark = raw["spark"]
    cfg = Config(
        lake=str(raw["lake"]),
        cluster_id=raw.get("cluster_id"),
        min_insync_replicas_default=int(raw["min_insync_replicas_default"]),
        split_bytes=int(raw["ingest"]["split_bytes"]),
        trigger=str(raw["stream"]["trigger"]),
        checkpoint=str(raw["stream"]["checkpoint"]) if raw["stream"].get("checkpoint") else None,
        compact_every=int(raw["stream"].get("compact_every") or 0),
        spark_master=os.environ.get("KRAFTLAKE_SPARK_MASTER", spark["master"]),
        spark_app_name=spark["app_name"],
        spark_conf={str(k): str(v) for k, v in (spark.get("conf") or {}).items()},
    )
    for key, value in overrides.items():
        if value is None:
            continue
        if not hasattr(cfg, key):
            raise TypeError(f"unknown configuration key {key!r}")
        if key in ("lake", "checkpoint"):
            value = str(value)
        setattr(cfg, key, value)
    return cfg
