"""Statements cut at the `;` that ends them (`kraftlake sql -f` and the prompt), and the line
each starts on (a refused statement of a file is named by it)."""

from __future__ import annotations

from kraftlake.sqltext import Statement, has_statement, split


def test_a_semicolon_in_a_string_a_name_or_a_comment_ends_nothing() -> None:
    text = ("-- header; not a statement\n"
            "SELECT 'a;b' AS \"c;d\", `e;f`\n"
            "  FROM t /* ; */;\n"
            "\n"
            "SELECT 'it\\'s;' ;SELECT 3;\n"
            "SELECT 4")
    statements, rest = split(text)
    assert statements == [
        Statement("-- header; not a statement\nSELECT 'a;b' AS \"c;d\", `e;f`\n"
                  "  FROM t /* ; */", 2),
        Statement("SELECT 'it\\'s;'", 5),
        Statement("SELECT 3", 5)]
    assert rest == "\nSELECT 4"


def test_an_unfinished_string_or_comment_is_read_on() -> None:
    statements, rest = split("SELECT 'a;\n")
    assert statements == [] and rest == "SELECT 'a;\n"
    statements, _ = split(rest + "b';")
    assert statements == [Statement("SELECT 'a;\nb'", 1)]
    assert split("/* ; \n ; */ SELECT 1;") == ([Statement("/* ; \n ; */ SELECT 1", 2)], "")


def test_blanks_and_comments_are_no_statement() -> None:
    assert split(" ;\n-- x;\n;") == ([], "")
    assert not has_statement("  -- only a comment\n /* and another */ ")
    assert has_statement("-- a comment\nSELECT")
