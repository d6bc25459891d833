"""The private names of strawberry-graphql and graphql-core that Recall reads are still there,
on the releases they were tested with.

pyproject.toml pins both libraries to the releases in app.api.engine.internals.TESTED; these
tests fail loudly, naming the change, when an upgrade moves a name or leaves the tested
releases, and prove the executor's fast path is really taken rather than silently off.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import graphql.pyutils
import pytest
from graphql import GraphQLObjectType
from strawberry.types.field import StrawberryField

from app.api.engine import internals
from app.api.engine.completion import _read
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


def test_the_installed_libraries_are_the_releases_the_engine_was_tested_with() -> None:
    assert internals.untested_versions() == [], (
        "app/api/engine reads these libraries' internals: run tests/api/test_engine_completion.py "
        "against the new release, then move TESTED and pyproject.toml's pins together"
    )


def test_pyproject_pins_the_tested_releases() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    pins = {
        m["name"]: m["version"]
        for d in dependencies
        if (m := re.fullmatch(r"(?P<name>[\w.-]+)==(?P<version>[\w.]+)", d)) is not None
    }
    assert {p: pins.get(p) for p in internals.TESTED} == internals.TESTED


def test_an_untested_release_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(internals.TESTED, "graphql-core", "3.3.1")
    assert internals.untested_versions() == [
        f"graphql-core {graphql.__version__} is installed; the engine was tested with 3.3.1"
    ]
