"""SQL text cut into statements at the `;` that end them, for `kraftlake sql -f FILE` and
the prompt.

A `;` inside a string ('...', "..."), a quoted name (`...`) or a comment (`-- ...`,
`/* ... */`) does not end a statement, as in Spark's own SQL scripts. Each statement keeps
the line it starts on, so a refused statement of a file can be named by its line.
"""

from __future__ import annotations

from dataclasses import dataclass

_QUOTES = "'\"`"


@dataclass(frozen=True)
class Statement:
    text: str  # without its `;`, stripped
    line: int  # 1-based line of its first character that is not blank or comment


def split(text: str) -> tuple[list[Statement], str]:
    """The complete statements of `text` and what follows the last `;` (an unfinished
    statement: the prompt reads more lines, a file's last statement needs no `;`)."""
    out: list[Statement] = []
    start, line, first_line = 0, 1, None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        elif c in _QUOTES:
            if first_line is None:
                first_line = line
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\" and c != "`":
                    j += 1
                j += 1
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = (n if j < 0 else j) - 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j - 1
        elif c == ";":
            if first_line is not None:  # not only blanks and comments
                out.append(Statement(text[start:i].strip(), first_line))
            start, first_line = i + 1, None
        elif not c.isspace() and first_line is None:
            first_line = line
        i += 1
    return out, text[start:]


def has_statement(text: str) -> bool:
    """Whether `text` holds more than blanks and comments."""
    return bool(split(text + "\n;")[0])
