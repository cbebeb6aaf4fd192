"""A stream's trigger interval, parsed without Spark, so a bad `--trigger` is refused before
a JVM starts (`kraftlake stream`) and not once the query does."""

from __future__ import annotations

import re

_UNITS = {"ms": "milliseconds", "s": "seconds", "sec": "seconds", "m": "minutes",
          "min": "minutes", "h": "hours"}


def processing_time(trigger: str) -> str:
    """A trigger interval as Spark parses it: "1s" -> "1 seconds" ("500ms", "5m", "1h" too).

    The README and the defaults use the short form; Spark's processingTime rejects it ("1s" is
    not an interval to Spark) and would only fail once the query starts. Spark's own
    spelling ("1 second") passes through.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*", trigger.lower())
    if m and m.group(2) in _UNITS:
        return f"{m.group(1)} {_UNITS[m.group(2)]}"
    if m and m.group(2).rstrip("s") in {"millisecond", "second", "minute", "hour"}:
        return trigger.strip()
    raise ValueError(f"trigger {trigger!r}: expected a number and a unit, e.g. 500ms, 1s, "
                     f"5m, 1h")
