"""One command line: the same option names, defaults and help in every command, read from
the real click command group (no Spark); every module that registers a command is imported
and every command has its README section (docs/architecture.md "How to add ...")."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kraftlake.cli import main

COMMANDS = sorted(main.commands)
# the commands that start Spark (`spark_options`) and those that read or write a lake
SPARK = ["demo", "ingest", "maintain", "quality", "report", "serve", "sql", "stream", "timeline",
         "upgrade"]
LAKE = ["ingest", "maintain", "quality", "report", "serve", "sql", "stream", "timeline",
        "upgrade"]


def _options(name: str) -> dict[str, click.Option]:
    return {o: p for p in main.commands[name].params if isinstance(p, click.Option)
            for o in p.opts}


def test_the_command_list_is_what_this_test_knows() -> None:
    assert set(SPARK) | set(LAKE) <= set(COMMANDS)
    assert {c for c in COMMANDS if "--master" in _options(c)} == set(SPARK)
    # `demo --lake` is a new directory of its own (default a temporary one), not a lake's URI
    assert {c for c in COMMANDS if "--lake" in _options(c)} == {*LAKE, "demo"}


def test_every_module_that_registers_a_command_is_imported() -> None:
    """A module of `kraftlake.cli` that registers a command is imported by `cli/__init__.py`:
    one left out would be a command silently missing, every other test still passing."""
    cli = Path(sys.modules["kraftlake.cli"].__file__).parent
    registering = {p.stem for p in cli.glob("*.py") if "@main.command(" in p.read_text()}
    assert registering
    assert sorted(m for m in registering if f"kraftlake.cli.{m}" not in sys.modules) == []


README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_has_a_section_for_every_command() -> None:
    """README's "Commands" has a section headed "### `kraftlake NAME ..." for each command."""
    text = README.read_text(encoding="utf-8")
    assert [c for c in COMMANDS if f"### `kraftlake {c}" not in text] == []


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_every_help_shows_an_example(name: str) -> None:
    out = CliRunner().invoke(main, [*name.split(), "--help"])
    assert out.exit_code == 0, out.output
    examples = out.output.split("Examples:", 1)
    assert len(examples) == 2, out.output
    assert "kraftlake " + name in examples[1]


@pytest.mark.parametrize("name", SPARK)
def test_every_command_that_starts_spark_takes_conf_master_and_verbose(name: str) -> None:
    opts = _options(name)
    assert {"--conf", "--master", "--verbose"} <= set(opts), sorted(opts)


def test_lake_is_one_option_everywhere() -> None:
    """The same help, the same default (the configuration's), and a URI, not a local
    directory click checks (report took only an existing directory)."""
    lake = [_options(c)["--lake"] for c in LAKE]
    assert {o.help for o in lake} == {lake[0].help} and "s3a://" in lake[0].help
    assert all(o.default is None and not o.required for o in lake)
    assert all(not isinstance(o.type, click.Path) for o in lake)


def test_cluster_id_is_one_name() -> None:
    named = {c for c in COMMANDS if "--cluster-id" in _options(c)}
    assert {"ingest", "stream", "timeline", "report"} <= named
    assert all(p.hidden for c in COMMANDS for o, p in _options(c).items() if o == "--cluster")


def test_quality_says_where_its_results_go() -> None:
    out = CliRunner().invoke(main, ["quality", "--help"])
    assert "appended to the lake's `quality_results`" in " ".join(out.output.split())


@pytest.mark.parametrize("option", [["--lake", "x"], ["--master", "local[1]"],
                                    ["--conf", "x.yaml"]], ids=lambda o: o[0])
@pytest.mark.parametrize("name", ["sql", "timeline", "report"])
def test_remote_and_a_local_spark_option_together_is_a_usage_error(
        name: str, option: list[str]) -> None:
    """With --remote the lake, the master and the settings are the server's: a --lake,
    --master or --conf beside it is refused at once, not silently ignored."""
    extra = {"sql": ["SELECT 1"], "timeline": ["--topic", "t", "--partition", "0"],
             "report": ["--out", "r.html"]}[name]
    out = CliRunner().invoke(main, [name, "--remote", "sc://127.0.0.1:1", *option, *extra])
    assert out.exit_code == 2, out.output
    assert f"give --remote or {option[0]}, not both" in out.output
