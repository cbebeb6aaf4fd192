"""Every place that lists the event types, the trouble kinds or the tables' layers says what
the code says: a new event type or trouble kind fails here until the expectation suites,
the tables' column docs and the README name it too (an event type also the simulator's
label rules and docs/testing.md's row of what Kafka holds it against), the README's and the
architecture page's layer of each table is its schema's, and a new table fails here until
an increment writes it (or the cut leaves it out, as `quality_results`), it has a
checkpoint interval and its suite, if it has one, is run (docs/architecture.md "How to
add ...")."""

from __future__ import annotations

import json
import re

import pytest

from kraftlake.jobs.increment import ORDER
from kraftlake.kraft.events import EVENT_TYPES
from kraftlake.kraft.troubles import KINDS
from kraftlake.lake.cut import CUT_EXCLUDED
from kraftlake.lake.delta import CHECKPOINT_INTERVALS
from kraftlake.lake.schema import table_names, table_schema
from kraftlake.quality.suites import SUITES
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def _value_set(suite: str, column: str) -> list[str]:
    """The value set expectation suite `suite` allows in `column`."""
    data = json.loads((REPO / "expectations" / f"{suite}.json").read_text())
    (values,) = [e["kwargs"]["value_set"] for e in data["expectations"]
                 if e["type"] == "expect_column_values_to_be_in_set"
                 and e["kwargs"]["column"] == column]
    return list(values)


def _column_doc(table: str, column: str) -> str:
    (doc,) = [c["doc"] for c in table_schema(table).columns if c["name"] == column]
    return str(doc)


def _alternatives(doc: str) -> list[str]:
    """A column doc's `a (why) | b | ...` split at the bars outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in doc:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p.strip() for p in [*parts, current]]


def _readme_list(heading: str) -> list[str]:
    """The words in backticks of the README's sentence that starts with `heading`, up to its
    closing period; `a` / `_b` after `a_x` is `a_b` (`reassignment_started` / `_completed`)."""
    start = README.index(heading) + len(heading)
    text = README[start:README.index(";", start) if heading.startswith("Event") else
                  README.index(" (`", start)]
    words: list[str] = []
    for word in re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", text)):
        if word.startswith("_"):
            word = words[-1].rsplit("_", 1)[0] + word
        words.append(word)
    return words


@pytest.mark.parametrize(("names", "suite", "table", "column", "heading"), [
    (EVENT_TYPES, "partition_events", "partition_events", "event_type",
     "Event types (`partition_events.event_type`):"),
    (KINDS, "partition_intervals", "partition_intervals", "kind",
     "Trouble kinds (`partition_intervals.kind`):"),
], ids=["event types", "trouble kinds"])
def test_every_list_names_what_the_code_names(names: tuple[str, ...], suite: str, table: str,
                                              column: str, heading: str) -> None:
    assert _value_set(suite, column) == list(names), f"expectations/{suite}.json"
    documented = [part.split()[0] for part in _alternatives(_column_doc(table, column))]
    assert documented == list(names), f"schemas/tables/{table}.json {column}"
    assert [w for w in _readme_list(heading) if w != column] == list(names), "README.md"


@pytest.mark.parametrize("page", ["README.md", "docs/architecture.md"])
def test_the_pages_give_each_table_its_schemas_layer(page: str) -> None:
    """Rows `| layer | table ...` of the page's table of tables."""
    text = (REPO / page).read_text()
    shown = {table: layer
             for layer, cell in re.findall(r"^\| (\w+) \| ([^|]+) \|", text, flags=re.M)
             for table in re.findall(r"`(\w+)`", cell) if table in table_names()}
    assert set(shown) == set(table_names()), page
    assert {t: table_schema(t).layer for t in shown} == shown, page


def test_every_event_type_has_a_label_rule_and_a_kafka_check() -> None:
    """The simulator's label rules (a line `* name — ...` each) and the first column of
    docs/testing.md's "What each event type is held against" name every event type."""
    rules = (REPO / "pipelines" / "kraftlake" / "simulate" / "README.md").read_text()
    labelled = set(re.findall(r"`(\w+)` —", rules))
    testing = (REPO / "docs" / "testing.md").read_text()
    section = testing.split("### What each event type is held against", 1)[1].split("\n#", 1)[0]
    held = {word for cell in re.findall(r"^\| ([^|]+) \|", section, flags=re.M)
            for word in re.findall(r"`(\w+)`", cell)}
    assert sorted(set(EVENT_TYPES) - labelled) == [], "pipelines/kraftlake/simulate/README.md"
    assert sorted(set(EVENT_TYPES) - held) == [], "docs/testing.md"


def test_every_table_is_written_checkpointed_and_checked() -> None:
    """A table an increment does not write is read outside the cut (`CUT_EXCLUDED`, as
    `kraftlake quality`'s `quality_results` is); every table has its own checkpoint
    interval (`lake/delta.py`); every suite file is in `SUITES`, which
    `kraftlake quality` runs (a file missing there would be silently skipped)."""
    assert sorted(CHECKPOINT_INTERVALS) == table_names(), "lake/delta.py CHECKPOINT_INTERVALS"
    assert set(table_names()) - set(ORDER) == set(CUT_EXCLUDED) - set(ORDER), \
        "jobs/increment.py ORDER or lake/cut.py CUT_EXCLUDED"
    suites = sorted(p.stem for p in (REPO / "expectations").glob("*.json"))
    assert sorted(SUITES) == suites, "quality/suites.py SUITES"
    assert set(SUITES) <= set(table_names())
