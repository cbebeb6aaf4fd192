"""The expectation suites in `expectations/<table>.json` (GX 1.x JSON), loaded and checked.

The JSON files are the single definition of every check: `kraftlake quality` hands them to
Great Expectations, and `record_checks` turns their record-level part into Spark predicates
for the ingest path. Each expectation's `meta` carries what GX itself does not:

* `name` - stable id used in results, reports and tests (unique within the suite);
* `severity` - `error` (the run fails, exit 1) or `warning` (reported only);
* `scope` - `record` if it can be decided on one bronze row (then ingest also runs it);
* `invariant` - the invariant's number in docs/semantics.md section 5, when there is one;
* `found` - optional: what Data Docs says was found when the expectation fails, a template
  of `$unexpected_count`, `$checked_count` (non-null values checked), `$element_count` (rows)
  and the expectation's kwargs (`$max_value`...), for a check whose values are not rows.

GX silently drops an expectation whose configuration it cannot parse (it only logs), so
loading verifies that every JSON entry became an expectation.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..packaged import EXPECTATIONS

SUITES = ["records", "partition_changes", "partition_timeline", "partition_events",
          "partition_current", "partition_intervals", "incidents"]
SEVERITIES = ("error", "warning")
# The verdict of a run or a suite, the same words in the terminal summary and Data Docs.
PASSED, WARNINGS, FAILED = "passed", "passed with warnings", "failed"


def verdict(failed_severities: Iterable[str]) -> str:
    """failed when an error-severity expectation failed (exit status 1), passed with warnings
    when only warning-severity ones did (exit status 0), else passed."""
    failed = set(failed_severities)
    return FAILED if "error" in failed else WARNINGS if failed else PASSED


@dataclass(frozen=True)
class Check:
    """One expectation of a suite, with the kraftlake metadata from its `meta`."""

    suite: str
    name: str
    severity: str
    scope: str
    invariant: str | None
    type: str
    kwargs: dict[str, Any]
    description: str

    @property
    def column(self) -> str | None:
        return self.kwargs.get("column")


@cache
def _raw(suite: str) -> dict[str, Any]:
    path = EXPECTATIONS / f"{suite}.json"
    if not path.is_file():
        raise KeyError(f"no expectation suite {path}")
    return json.loads(path.read_text())


def _load_raw(suite: str) -> dict[str, Any]:
    """The suite's JSON document (a copy: GX mutates what it is given)."""
    return copy.deepcopy(_raw(suite))


def checks(suite: str) -> list[Check]:
    """Every expectation of `suite` with its metadata; raises on missing or bad metadata."""
    out: list[Check] = []
    seen: set[str] = set()
    for exp in _raw(suite)["expectations"]:
        meta = exp.get("meta") or {}
        name, sev = meta.get("name"), meta.get("severity")
        if not name or name in seen:
            raise ValueError(f"{suite}: expectation without a unique meta.name: {exp}")
        if sev not in SEVERITIES:
            raise ValueError(f"{suite}.{name}: meta.severity must be one of {SEVERITIES}")
        seen.add(name)
        out.append(Check(suite, name, sev, meta.get("scope", "table"), meta.get("invariant"),
                         exp["type"], dict(exp["kwargs"]), exp.get("description", "")))
    return out


def check(suite: str, name: str) -> Check:
    for c in checks(suite):
        if c.name == name:
            return c
    raise KeyError(f"{suite}: no expectation {name!r}")


def gx_suite(suite: str, names: frozenset[str] | None = None):
    """A `great_expectations.ExpectationSuite` built from the JSON, every entry accounted for;
    with `names`, only those expectations (a suite of its own name)."""
    import great_expectations as gx

    raw = _load_raw(suite)
    checks(suite)  # validates the kraftlake metadata
    exps = raw["expectations"]
    name = raw["name"]
    if names is not None:
        exps = [e for e in exps if e["meta"]["name"] in names]
        name = f"{name}[{','.join(sorted(names))}]"
    built = gx.ExpectationSuite(name=name, expectations=exps,
                                suite_parameters=raw.get("suite_parameters") or {},
                                meta=raw.get("meta"), notes=raw.get("notes"))
    if len(built.expectations) != len(exps):
        raise ValueError(f"{suite}: GX accepted {len(built.expectations)} of "
                         f"{len(exps)} expectations (see the GX log)")
    return built
