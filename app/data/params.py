"""Positional SQL parameters, numbered by the one builder every statement uses.

A statement that applies the eligibility fragments starts from the destination's $1-$4
(app.data.eligibility); every further value is added here and referenced by the placeholder
`add` returns, so no statement counts `$n` by hand.
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
