"""Configuration: the packaged defaults (`conf/kraftlake.yaml`, package `kraftlake.conf`),
then a user's file (`--conf` or $KRAFTLAKE_CONF), then the environment and CLI options.

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

from .packaged import DEFAULT_CONF

# Every default, in one file shipped with the package (`kraftlake.conf`).
_BUILTIN: dict[str, Any] = yaml.safe_load(DEFAULT_CONF.read_text())


class ConfigError(ValueError):
    """A configuration file kraftlake cannot use (missing, or naming keys it does not know)."""


@dataclass
class Config:
    """A job's configuration: the lake, the ingest's and the stream's settings, Spark's.

    Made by `load_config` from the packaged defaults, a user's file and overrides; each
    field is a key of `conf/kraftlake.yaml`.

    Example:
        >>> from kraftlake import Config
        >>> Config(lake="/tmp/lake").trigger
        '1s'
    """

    lake: str  # a path, file:// or s3a:// URI (kraftlake.lake.hadoopfs.to_uri)
    cluster_id: str | None = None
    min_insync_replicas_default: int = 1
    split_bytes: int = 32 * 1024 * 1024
    driver_fold_max_records: int = 10_000  # an increment this small folds on the driver
    driver_max_bytes: int = 1024 * 1024  # an increment reading this little is decoded there
    trigger: str = "1s"
    checkpoint: str | None = None
    compact_every: int = 100  # a stream compacts the lake every N micro-batches (0 = never)
    discover_every: float = 10.0  # seconds between a stream's looks for new log directories
    concurrent_batches: int | None = None  # a fleet stream's micro-batches at once (None: cores)
    noop_every: float = 10.0  # a stream reads a tail of NoOpRecords alone at most every N s
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


def _unknown_keys(given: dict[str, Any], known: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted names of `given`'s keys that `known` does not have (spark.conf is free-form)."""
    out = []
    for k, v in given.items():
        name = f"{prefix}{k}"
        if k not in known:
            out.append(name)
        elif isinstance(v, dict) and isinstance(known[k], dict) and name != "spark.conf":
            out += _unknown_keys(v, known[k], f"{name}.")
    return out


def load_config(path: str | Path | None = None, **overrides: Any) -> Config:
    """The defaults, merged with a user's YAML file (`path`, else $KRAFTLAKE_CONF, if either
    is given), then `overrides`.

    Overrides whose value is None are ignored, so CLI options can be passed straight through.
    A file named by `--conf` or $KRAFTLAKE_CONF must exist, and a key kraftlake does not
    know (a typo such as `min_insync_replica_default`) is refused rather than silently
    ignored: both raise `ConfigError` naming the file and the key.

    Args:
        path: a YAML file of settings (None: $KRAFTLAKE_CONF if set, else the defaults).
        **overrides: fields of `Config` set last, e.g. `lake="/tmp/lake"`.

    Returns:
        The `Config`.

    Example:
        >>> from kraftlake import load_config
        >>> cfg = load_config(lake="/tmp/lake", trigger=None)
        >>> cfg.lake, cfg.trigger
        ('/tmp/lake', '1s')
    """
    named = path or os.environ.get("KRAFTLAKE_CONF")
    raw = _BUILTIN
    if named:
        file = Path(named)
        if not file.is_file():
            how = "--conf" if path else "$KRAFTLAKE_CONF"
            raise ConfigError(f"configuration file {file} (from {how}) does not exist")
        given = yaml.safe_load(file.read_text()) or {}
        if not isinstance(given, dict):
            raise ConfigError(f"{file}: expected a mapping of settings, found "
                              f"{type(given).__name__}")
        unknown = _unknown_keys(given, _BUILTIN)
        if unknown:
            raise ConfigError(f"{file}: unknown configuration key(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(_BUILTIN))})")
        raw = _merge(_BUILTIN, given)
    spark = raw["spark"]
    cfg = Config(
        lake=str(raw["lake"]),
        cluster_id=raw.get("cluster_id"),
        min_insync_replicas_default=int(raw["min_insync_replicas_default"]),
        split_bytes=int(raw["ingest"]["split_bytes"]),
        driver_fold_max_records=int(raw["ingest"]["driver_fold_max_records"]),
        driver_max_bytes=int(raw["ingest"]["driver_max_bytes"]),
        trigger=str(raw["stream"]["trigger"]),
        checkpoint=str(raw["stream"]["checkpoint"]) if raw["stream"].get("checkpoint") else None,
        compact_every=int(raw["stream"].get("compact_every") or 0),
        discover_every=float(raw["stream"]["discover_every"]),
        concurrent_batches=int(raw["stream"]["concurrent_batches"] or 0) or None,
        noop_every=float(raw["stream"]["noop_every"] or 0),
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
