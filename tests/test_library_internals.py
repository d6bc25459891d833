"""The private names of strawberry-graphql and graphql-core that Recall reads are still there.

pyproject.toml bounds both libraries to the releases checked; these tests fail loudly, naming
the change, when an upgrade moves one (app/api/internals.py), and prove the executor's fast
path is really taken rather than silently off.
"""

from __future__ import annotations

import graphql.pyutils
import pytest
from graphql import GraphQLObjectType
from strawberry.types.field import StrawberryField

from app.api import internals
from app.api.execution import _read
from app.api.schema import schema


def _object(name: str) -> GraphQLObjectType:
    found = schema._schema.type_map[name]
    assert isinstance(found, GraphQLObjectType)
    return found


def test_every_private_name_recall_reads_is_there() -> None:
    assert internals.problems() == []
    assert internals.schema_problems(schema) == []


def test_the_fast_path_reads_plain_fields_of_this_schema() -> None:
    message = _object("Message")
    read = _read(message.fields["key"])
    assert read is not None and read.attribute == "key"
    edge = _object("MessageSearchEdge")
    assert _read(edge.fields["node"]) is not None


def test_a_changed_library_is_named_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(graphql.pyutils, "gather_with_cancel")
    monkeypatch.setattr(StrawberryField, "default_resolver", staticmethod(lambda *_: None))
    with pytest.raises(internals.LibraryChanged) as raised:
        internals.verify(schema)
    message = str(raised.value)
    assert "gather_with_cancel" in message and "getattr" in message
    assert "strawberry-graphql 0." in message and "graphql-core 3." in message


def test_a_resolver_no_longer_marked_default_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    field = _object("Message").fields["key"]
    monkeypatch.setattr(field, "resolve", lambda *_: None)
    assert any("_is_default" in p for p in internals.schema_problems(schema))
