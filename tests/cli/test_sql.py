"""`kraftlake sql` through the real command on a real lake: Spark's refusals on one line
with exit status 2, and results bounded by `--limit`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kraftlake.cli import main
from kraftlake.cli.query import DEFAULT_LIMIT


def _sql(lake, *args: str):
    return CliRunner().invoke(main, ["sql", *args, "--lake", str(lake)])


@pytest.mark.parametrize("query, spark_says", [
    ("SELECT * FORM records", "[PARSE_SYNTAX_ERROR]"),
    ("SELECT * FROM no_such_table", "[TABLE_OR_VIEW_NOT_FOUND]"),
    ("SELECT no_such_column FROM records", "[UNRESOLVED_COLUMN"),
])
def test_a_query_spark_refuses_is_one_line_and_exit_2(sim_lake, query: str,
                                                       spark_says: str) -> None:
    out = _sql(sim_lake[0], query)
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: " + spark_says), out.output
    assert "Traceback" not in out.output


def _lake_tables_in_catalog(spark) -> list[str]:
    from kraftlake.lake.schema import table_names

    # SHOW TABLES, not spark.catalog.listTables(): that fails to decode the listing of a
    # view made by `Lake.register_views` ([EXPRESSION_DECODING_FAILED], Spark 4.2)
    return sorted(r.tableName for r in spark.sql("SHOW TABLES").collect()
                  if r.tableName in table_names() and not r.isTemporary)


def test_a_statement_registers_only_the_tables_it_names(sim_lake, spark) -> None:
    """Registering a table loads its Delta snapshot: a cold one-row `sql` registered all
    thirteen before answering. Now only those its statement names (any case); one that
    names none (SHOW TABLES) sees every table."""
    from kraftlake.lake.schema import table_names

    for name in _lake_tables_in_catalog(spark):  # the session is shared by the tests
        kind = "VIEW" if spark.catalog.getTable(name).tableType == "VIEW" else "TABLE"
        spark.sql(f"DROP {kind} {name}")
    out = _sql(sim_lake[0], "SELECT count(*) AS n FROM Records r JOIN topics t "
                            "ON r.offset = t.created_offset", "--format", "json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)[0]["n"] > 0
    assert _lake_tables_in_catalog(spark) == ["records", "topics"]
    out = _sql(sim_lake[0], "SHOW TABLES", "--format", "json")
    assert sorted(r["tableName"] for r in json.loads(out.stdout)) == table_names()


def test_a_huge_result_is_bounded_by_limit(sim_lake) -> None:
    lake = sim_lake[0]
    (total,) = json.loads(_sql(lake, "SELECT count(*) AS n FROM records", "--format",
                               "json").stdout)
    assert total["n"] > DEFAULT_LIMIT  # else the default bound is not exercised
    out = _sql(lake, "SELECT offset FROM records", "--format", "json")
    assert out.exit_code == 0
    assert len(json.loads(out.stdout)) == DEFAULT_LIMIT
    assert f"note: the first {DEFAULT_LIMIT} rows" in out.stderr
    out = _sql(lake, "SELECT offset FROM records", "--format", "json", "--limit", "7")
    assert len(json.loads(out.stdout)) == 7
    out = _sql(lake, "SELECT offset FROM records", "--format", "json", "--limit", "0")
    assert len(json.loads(out.stdout)) == total["n"] and "note:" not in out.stderr


def test_csv_lines_end_in_a_newline_alone(sim_lake) -> None:
    """`--format csv` for shell scripts: `$(kraftlake sql ... | tail -1)` must not carry
    a carriage return (Python's csv module ends lines in \\r\\n unless told)."""
    out = _sql(sim_lake[0], "SELECT offset FROM records ORDER BY offset", "--format", "csv",
               "--limit", "3")
    assert out.exit_code == 0, out.output
    lines = out.stdout.split("\n")
    assert "\r" not in out.stdout and lines[0] == "offset" and lines[-1] == ""
    assert [int(x) for x in lines[1:-1]] == sorted(int(x) for x in lines[1:-1])
    assert len(lines) == 5


def test_json_timestamps_are_utc_with_their_zone(sim_lake) -> None:
    """An instant in JSON names its zone: `...Z`, not a bare local-looking time."""
    import datetime as dt

    out = _sql(sim_lake[0], "SELECT max(timestamp) AS ts FROM records", "--format", "json")
    (row,) = json.loads(out.stdout)
    assert row["ts"].endswith("Z"), row
    when = dt.datetime.fromisoformat(row["ts"])
    assert when.utcoffset() == dt.timedelta(0)


def test_describe_history_to_a_pipe_shows_whole_timestamps(sim_lake) -> None:
    """The timestamp `TIMESTAMP AS OF` needs, whole (rich cut it in a narrow table), and
    usable as printed."""
    import re

    out = _sql(sim_lake[0], "DESCRIBE HISTORY partition_current")
    assert out.exit_code == 0, out.output
    assert "…" not in out.stdout
    stamps = re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", out.stdout)
    assert stamps, out.stdout
    back = _sql(sim_lake[0], f"SELECT count(*) AS n FROM partition_current TIMESTAMP AS OF "
                             f"'{stamps[0]}'", "--format", "json")
    assert back.exit_code == 0, back.output
