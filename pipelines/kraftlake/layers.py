"""kraftlake's import order, written once: each module of the package imports only modules of
its own layer or of layers before it in `LAYERS`.

A layer is a sub-package (`kraft`, `codec`, ...) or a top-level module (`config`, `spark`,
...) of `kraftlake`; `__main__` and `__init__` (the package's face, which names what every
layer exports) come last. `docs/architecture.md` shows the order with the layers each one
imports, and `tests/test_architecture.py` derives the imports of every module (at module
level and inside functions alike) and fails on one against this order, on a cycle between
modules, and on a page that says otherwise.
"""

from __future__ import annotations

LAYERS: tuple[str, ...] = (
    # shared: no kraftlake import but among themselves
    "layers", "packaged", "uris", "config", "jvm", "python_daemon", "sqltext",
    # Kafka's rules, the bytes, and the models that read and write them
    "kraft", "codec", "reference", "simulate",
    # the lake and what feeds it
    "lake", "sources", "spark", "fold", "incidents", "quality", "jobs", "metrics",
    # readers and the command
    "report", "endpoint", "cli", "__main__", "__init__",
)
