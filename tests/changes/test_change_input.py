"""applyChanges' ChangeInput reaches the applier as the change object `recall apply` reads
from a line of NDJSON: the same object for every kind, built from the value graphql-core
coerced without an input instance in between (app.api.changes.types, its from_input hook)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from graphql import GraphQLInputObjectType
from graphql.utilities import coerce_input_value
from strawberry.types.arguments import convert_argument

from app.api.changes.types import ChangeInput
from app.api.schema import schema
from app.changes.model import parse_change

# Each kind as a client sends it (explicit nulls included) and as a change file holds it.
CASES: list[tuple[dict[str, Any], str]] = [
    (
        {"upsertMember": {"key": "ana", "name": None, "namespace": None}},
        '{"upsertMember": {"key": "ana"}}',
    ),
    (
        {
            "postMessage": {
                "key": "m1",
                "scope": "general",
                "author": "ana",
                "at": "2026-12-06T03:00:00+01:00",
                "body": "hello",
                "sources": None,
            }
        },
        '{"postMessage": {"key": "m1", "scope": "general", "author": "ana",'
        ' "at": "2026-12-06T02:00:00Z", "body": "hello", "evidence": true}}',
    ),
    (
        {
            "postMessage": {
                "key": "m2",
                "scope": "general",
                "author": "bot",
                "at": "2026-12-06T03:00:00Z",
                "body": "reply",
                "evidence": False,
                "sources": ["m1"],
                "memorySources": ["notes"],
            }
        },
        '{"postMessage": {"key": "m2", "scope": "general", "author": "bot",'
        ' "at": "2026-12-06T03:00:00Z", "body": "reply", "evidence": false,'
        ' "sources": ["m1"], "memorySources": ["notes"]}}',
    ),
    (
        {
            "createMemory": {
                "key": "notes",
                "audience": {"kind": "members", "readers": ["ana"], "namespace": None},
            }
        },
        '{"createMemory": {"key": "notes", "audience": {"kind": "members", "readers": ["ana"]}}}',
    ),
    (
        {"createScope": {"key": "t", "kind": "thread", "parent": "general", "root": "m1"}},
        '{"createScope": {"key": "t", "kind": "thread", "parent": "general", "root": "m1"}}',
    ),
    (
        {"addScopeMembers": {"scope": "general", "members": ["ana", "bo"]}},
        '{"addScopeMembers": {"scope": "general", "members": ["ana", "bo"]}}',
    ),
    ({"editMessage": {"key": "m1", "body": "hi"}}, '{"editMessage": {"key": "m1", "body": "hi"}}'),
    ({"deleteMessage": {"key": "m1"}}, '{"deleteMessage": {"key": "m1"}}'),
]


def _converted(value: dict[str, Any]) -> Any:
    """What applyChanges' resolver receives for one ChangeInput: graphql-core's coercion,
    then strawberry's conversion, as a request runs them."""
    graphql_type = schema._schema.get_type("ChangeInput")
    assert isinstance(graphql_type, GraphQLInputObjectType)
    coerced = coerce_input_value(value, graphql_type)
    return convert_argument(
        coerced, ChangeInput, schema.schema_converter.scalar_registry, schema.config
    )


@pytest.mark.parametrize(("sent", "line"), CASES, ids=[next(iter(c)) for c, _ in CASES])
def test_a_change_input_is_the_change_a_file_line_is(sent: dict[str, Any], line: str) -> None:
    converted = _converted(sent)
    # The change object itself: no input instance was built (a null is an absent field).
    assert isinstance(converted, dict)
    assert parse_change(0, converted) == parse_change(0, json.loads(line))
