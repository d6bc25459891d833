"""Every field of every change and fixture has declared bounds (issue 22, 5): a value out of
them is a clear BAD_USER_INPUT (applyChanges) or one line naming it (recall apply, recall
import), never a 5xx, a traceback or a PostgreSQL error, and nothing is written.

The property test takes a valid change of each kind and puts one random out-of-range value in
one of its fields.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.workspace_import.importer import import_fixture
from app.workspace_import.model import MAX_BODY, MAX_KEY, MAX_LIST, MAX_NAME
from tests.changes_support import APPLY
from tests.client import GraphQLClient
from tests.personas import acme, load_personas
from tests.test_cli import recall

# A valid change of every kind, against the personas (tests.personas).
VALID: dict[str, dict[str, Any]] = {
    "upsertMember": {"key": "dave", "name": "Dave"},
    "deactivateMember": {"key": "carol"},
    "upsertAgent": {"key": "bot", "name": "Bot", "owner": "alice"},
    "archiveAgent": {"key": "scout"},
    "deleteAgent": {"key": "scout"},
    "createScope": {"key": "new", "kind": "channel", "visibility": "public", "name": "new",
                    "members": ["alice"]},
    "addScopeMembers": {"scope": "general", "members": ["carol"]},
    "removeScopeMembers": {"scope": "general", "members": ["bob"]},
    "makeScopePrivate": {"key": "general"},
    "createMemory": {"key": "mem-new", "audience": {"kind": "members", "readers": ["alice"]}},
    "postMessage": {"key": "p1", "scope": "general", "author": "alice",
                    "at": "2026-05-01T10:00:00Z", "body": "hello"},
    "editMessage": {"key": "m1", "body": "edited"},
    "deleteMessage": {"key": "m1"},
    "eraseMemberMessages": {"key": "bob"},
}  # fmt: skip

# Out-of-range values by the kind of field they go into.
TOO_LONG_KEY = st.integers(MAX_KEY + 1, MAX_KEY * 40).map(lambda n: "k" * n)
BAD_KEY = st.one_of(TOO_LONG_KEY, st.just(""), st.just("a\x00b"), st.integers(), st.none())
BAD_TEXT = {
    "name": st.one_of(st.integers(MAX_NAME + 1, MAX_NAME * 200).map(lambda n: "n" * n),
                      st.just("a\x00b"), st.integers()),
    # Past the request limit the whole request is refused; these stay under it.
    "body": st.one_of(st.just("a\x00b"), st.integers(), st.none()),
}  # fmt: skip
BAD_AT = st.one_of(
    st.sampled_from([
        "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "1899-12-31T23:59:59Z",
        "2026-02-30T10:00:00Z", "2026-05-01T10:00:00", "yesterday", "", "99999-01-01T00:00:00Z",
    ]),
    st.integers(),
)  # fmt: skip
TOO_MANY = st.just(["alice"] * (MAX_LIST + 1))


def _bad_values(field: str) -> st.SearchStrategy[Any]:
    if field == "at":
        return BAD_AT
    if field in BAD_TEXT:
        return BAD_TEXT[field]
    if field in ("members", "readers"):
        return st.one_of(TOO_MANY, st.lists(BAD_KEY, min_size=1, max_size=3))
    if field == "visibility":
        return st.sampled_from(["secret", "", "PUBLIC"])
    if field == "kind":
        return st.sampled_from(["room", "", "Channel"])
    return BAD_KEY


def _fields(payload: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, value in payload.items():
        if isinstance(value, dict):
            out += _fields(value, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


CASES = [(kind, path) for kind, payload in VALID.items() for path in _fields(payload)]


def _with(payload: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy: dict[str, Any] = json.loads(json.dumps(payload))
    target = copy
    for name in path[:-1]:
        target = target[name]
    target[path[-1]] = value
    return copy


async def _snapshot(db: asyncpg.Connection) -> list[Any]:
    return [
        await db.fetchval(f"select count(*) from {table}")
        for table in ("actors", "scopes", "scope_members", "memories", "messages", "audiences")
    ] + [await db.fetchval("select coalesce(sum(documents), 0) from search_term_stats")]


@pytest.fixture
async def connector(db: asyncpg.Connection) -> str:
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    return await issue_connector_token(db, "acme")


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=st.sampled_from(CASES), data=st.data())
async def test_an_out_of_range_value_in_any_change_is_a_clear_error_and_writes_nothing(
    client: GraphQLClient, db: asyncpg.Connection, connector: str, case: Any, data: Any
) -> None:
    kind, path = case
    value = data.draw(_bad_values(path[-1]), label="value")
    change = {kind: _with(VALID[kind], path, value)}
    before = await _snapshot(db)
    result = await client.post(APPLY, {"changes": [change]}, token=connector)
    assert result.status in (200, 400), result.body
    assert result.codes and set(result.codes) == {"BAD_USER_INPUT"}, (change, result.body)
    for error in result.errors:
        message = error["message"]
        assert "Traceback" not in message and "SQLSTATE" not in message and "\n" not in message
    assert await _snapshot(db) == before


async def test_recall_apply_names_the_line_and_field_of_an_out_of_range_value(
    dsn: str, db: asyncpg.Connection, connector: str, tmp_path: Any
) -> None:
    before = await _snapshot(db)
    cases = [
        ("postMessage", ("at",), "0001-01-01T00:00:00+14:00", "postMessage.at"),
        ("postMessage", ("at",), "9999-12-31T23:59:59-14:00", "postMessage.at"),
        ("postMessage", ("key",), "k" * 10_000, "postMessage.key"),
        ("upsertMember", ("name",), "n" * 100_000, "upsertMember.name"),
        ("postMessage", ("body",), "b" * (MAX_BODY + 1), "postMessage.body"),
    ]
    for kind, path, value, named in cases:
        changes = tmp_path / "changes.ndjson"
        valid = json.dumps({"upsertMember": {"key": "eve", "name": "Eve"}})
        bad = json.dumps({kind: _with(VALID[kind], path, value)})
        changes.write_text(f"{valid}\n{bad}\n")
        done = recall("apply", "acme", str(changes), dsn=dsn)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert lines[0].startswith(f"recall: {changes}:2: {named}:"), lines[0]
        assert await _snapshot(db) == before


async def test_recall_import_names_the_path_of_an_out_of_range_value(
    dsn: str, db: asyncpg.Connection, tmp_path: Any
) -> None:
    cases: list[tuple[Callable[[dict[str, Any]], Any], str]] = [
        (lambda f: f["messages"][0].update(at="0001-01-01T00:00:00+14:00"), "messages[0].at"),
        (lambda f: f["members"][0].update(key="k" * 10_000), "members[0].key"),
        (lambda f: f["members"][1].update(name="n" * 100_000), "members[1].name"),
        (lambda f: f["scopes"][0].update(members=["alice"] * (MAX_LIST + 1)), "scopes[0].members"),
    ]
    for change, named in cases:
        fixture = acme()
        change(fixture)
        path = tmp_path / "fixture.json"
        path.write_text(json.dumps(fixture))
        done = recall("import", str(path), dsn=dsn)
        assert done.returncode == 1, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"recall: {named}:"), done.stderr
        assert await db.fetchval("select count(*) from workspaces") == 0


async def test_a_fixture_at_the_limits_imports(db: asyncpg.Connection) -> None:
    fixture = acme()
    fixture["members"][0]["name"] = "n" * MAX_NAME
    fixture["messages"].append(
        {"key": "k" * MAX_KEY, "scope": "general", "author": "alice",
         "at": "1900-01-01T00:00:00Z", "body": "word " * 2000}
    )  # fmt: skip
    await import_fixture(db, fixture, io.StringIO())
    assert await db.fetchval("select count(*) from messages where length(key) = $1", MAX_KEY) == 1
