"""Positional SQL parameters, numbered by the one builder every composed statement uses.

The rule: a statement composed of SQL fragments — any statement whose text interpolates a
fragment that reads or binds a parameter (app.data.eligibility's, which read the destination
as $1-$4, or any helper given a placeholder) — binds every value of its own through
`Params.add` and writes the placeholder `add` returns; no placeholder is numbered by hand. The
fixed leading parameters a fragment reads are the values `Params` starts from (the destination
for the eligibility fragments, the workspace alone for fragments that read only $1). So a
fragment may be moved, added or left out without renumbering anything, and a value can never
be bound to another's number by miscounting.

A constant statement — its placeholders all written in its own text, nothing interpolated
that holds one (a column list may be) — keeps literal `$1..$n` matching its argument list in
order: asyncpg's own form, read at a glance.
"""

from __future__ import annotations

from collections.abc import Sequence


class Params:
    def __init__(self, first: Sequence[object] = ()) -> None:
        self.values = list(first)

    def add(self, value: object, cast: str | None = None) -> str:
        """Bind `value` and return its placeholder (`$n`), with its cast when given
        (`$n::bigint[]`): PostgreSQL types a parameter by its first use, so one whose use does
        not fix its type (a comparison with null, an array) says it here."""
        self.values.append(value)
        placeholder = f"${len(self.values)}"
        return f"{placeholder}::{cast}" if cast else placeholder
