"""app.api.context.selects: whether a field's selection asks for a sub-field, read from the
document (fields, inline fragments, named fragments; @include and @skip with literals and
variables), never by alias."""

from __future__ import annotations

from typing import Any

import pytest
import strawberry

from app.api.context import selects


@strawberry.type
class Inner:
    flag: int = 1
    other: int = 2


@strawberry.type
class Query:
    @strawberry.field
    def probe(self, info: strawberry.Info) -> Inner:
        asked_about.append(selects(info, "flag"))
        return Inner()


asked_about: list[bool] = []
SCHEMA = strawberry.Schema(query=Query)


@pytest.mark.parametrize(
    ("document", "variables", "asked"),
    [
        ("{ probe { flag } }", {}, True),
        ("{ probe { other } }", {}, False),
        ("{ probe { flag: other } }", {}, False),
        ("{ probe { other: flag } }", {}, True),
        ("{ probe { ... on Inner { flag } } }", {}, True),
        ("{ probe { ...F } } fragment F on Inner { flag }", {}, True),
        ("{ probe { ...F } } fragment F on Inner { other }", {}, False),
        ("{ probe { flag @include(if: false) other } }", {}, False),
        ("{ probe { flag @skip(if: true) other } }", {}, False),
        ("{ probe { flag @skip(if: false) } }", {}, True),
        ("query($v: Boolean!) { probe { flag @include(if: $v) other } }", {"v": True}, True),
        ("query($v: Boolean!) { probe { flag @include(if: $v) other } }", {"v": False}, False),
        (
            "query($v: Boolean!) { probe { ...F @skip(if: $v) other } } fragment F on Inner { flag }",
            {"v": True},
            False,
        ),
        (
            "query($v: Boolean!) { probe { ... @include(if: $v) { flag } other } }",
            {"v": True},
            True,
        ),
        ("{ probe { other } again: probe { flag } }", {}, None),
    ],
)
async def test_selects_reads_the_selection_as_executed(
    document: str, variables: dict[str, Any], asked: bool | None
) -> None:
    asked_about.clear()
    result = await SCHEMA.execute(document, variable_values=variables)
    assert result.errors is None
    if asked is None:  # two fields: each is asked about its own selection
        assert asked_about == [False, True]
    else:
        assert asked_about == [asked]
