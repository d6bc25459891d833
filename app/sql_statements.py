"""A migration file split into its statements, so that each is sent on its own.

Why: Citus propagates some DDL on a distributed table (`alter table … add constraint`,
`create index`) by sending the command's original query string to the shards; when that string
holds several commands (a whole migration file sent at once) it fails with "cannot insert
multiple commands into a prepared statement". A database migrated before its tables were
distributed never sees this; one distributed already (every upgrade of a running cluster)
does. Each statement alone is one command, in the same transaction as before.

The split follows PostgreSQL's lexical rules for what can hide a semicolon: `--` and `/* */`
comments (nested, as PostgreSQL nests them), single-quoted strings (`''` inside), quoted
identifiers and dollar-quoted bodies (`$$ … $$`, `$tag$ … $tag$`). Nothing is rewritten: the
statements, joined, are the file.
"""

from __future__ import annotations

import re

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def split_statements(sql: str) -> list[str]:
    """The statements of `sql`, each with its terminating `;` and whatever precedes it
    (comments, blank lines); a trailing part with no statement in it (only comments or spaces)
    is left out. `"".join(...)` of the result plus that part is `sql`."""
    pieces: list[str] = []
    start = i = 0
    n = len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end + 1
        elif c == "/" and sql.startswith("/*", i):
            i = _block_comment_end(sql, i)
        elif c == "'" or c == '"':
            i = _quoted_end(sql, i, c)
        elif c == "$" and (m := _DOLLAR_TAG.match(sql, i)) and not _in_identifier(sql, i):
            close = sql.find(m.group(0), m.end())
            i = n if close == -1 else close + len(m.group(0))
        elif c == ";":
            i += 1
            pieces.append(sql[start:i])
            start = i
        else:
            i += 1
    rest = sql[start:]
    if _has_code(rest):
        pieces.append(rest)
    return pieces


def _block_comment_end(sql: str, i: int) -> int:
    depth = 0
    while i < len(sql):
        if sql.startswith("/*", i):
            depth += 1
            i += 2
        elif sql.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return len(sql)


def _quoted_end(sql: str, i: int, quote: str) -> int:
    i += 1
    while i < len(sql):
        if sql[i] == quote:
            if sql.startswith(quote * 2, i):  # '' or "" inside: an escaped quote
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def _in_identifier(sql: str, i: int) -> bool:
    """`$` inside a name (`a$b`) or a parameter (`$1`) does not start a dollar quote."""
    return i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")


def _has_code(text: str) -> bool:
    without_comments = re.sub(r"--[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    return bool(without_comments.strip())
