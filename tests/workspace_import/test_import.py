"""`recall import`: a checked fixture lands whole, with derived audiences and sequences, or not at all."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from app.errors import UsageError
from app.workspace_import.importer import import_fixture, import_fixture_file
from app.workspace_import.model import FixtureError
from tests.personas import people

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VALID = FIXTURES / "valid.json"


def valid() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VALID.read_text(encoding="utf-8"))
    return data


def other_workspace() -> dict[str, Any]:
    return {
        "workspace": {"key": "globex", "name": "Globex"},
        "namespace": "slack:globex",
        "members": people("mallory"),
        "scopes": [{"key": "lobby", "kind": "channel", "visibility": "private",
                    "members": ["mallory"]}],
        "memories": [{"key": "mem", "audience": {"kind": "members", "readers": ["mallory"]}}],
        "messages": [{"key": "x1", "scope": "lobby", "author": "mallory",
                      "at": "2026-03-02T09:00:00Z", "body": "hello"}],
    }  # fmt: skip


async def table_counts(db: asyncpg.Connection) -> dict[str, int]:
    """Rows in every table: a failed import must leave each count as it was."""
    tables = await db.fetch("select tablename from pg_tables where schemaname = 'public'")
    return {
        t["tablename"]: await db.fetchval(f'select count(*) from "{t["tablename"]}"')
        for t in tables
    }


async def audiences_by_id(
    db: asyncpg.Connection,
) -> dict[int, tuple[str, str | None, tuple[str, ...]]]:
    """Each audience as (kind, namespace name, reader keys in stored order)."""
    rows = await db.fetch(
        """
        select a.id, a.kind, n.name as namespace, a.readers,
               array(select x.key from unnest(a.readers) with ordinality r(id, i)
                     join actors x on x.workspace_id = a.workspace_id and x.id = r.id
                     order by r.i) as reader_keys
        from audiences a
        left join namespaces n on n.workspace_id = a.workspace_id and n.id = a.namespace_id
        join workspaces w on w.id = a.workspace_id
        where w.key = 'acme'
        """
    )
    for r in rows:
        assert list(r["readers"]) == sorted(set(r["readers"])), "readers are sorted and distinct"
    return {r["id"]: (r["kind"], r["namespace"], tuple(r["reader_keys"])) for r in rows}


async def test_valid_fixture_imports_with_counts_and_progress(db: asyncpg.Connection) -> None:
    progress = io.StringIO()
    summary = await import_fixture_file(db, VALID, progress=progress)

    assert summary["workspace"] == "acme"
    counts = {k: summary[k] for k in ("members", "agents", "scopes", "threads", "audiences",
                                      "memories", "messages", "message_sources",
                                      "message_memory_sources")}  # fmt: skip
    assert counts == {
        "members": 5, "agents": 2, "scopes": 8, "threads": 2, "audiences": 8, "memories": 4,
        "messages": 14, "message_sources": 2, "message_memory_sources": 2,
    }  # fmt: skip
    assert summary["seconds"] >= 0 and summary["messages_per_second"] > 0
    json.dumps(summary)
    assert "imported 14/14 messages" in progress.getvalue()

    tables = await table_counts(db)
    assert tables["workspaces"] == 1 and tables["namespaces"] == 1
    assert tables["actors"] == 7 and tables["scopes"] == 8 and tables["memories"] == 4
    assert tables["messages"] == 14 and tables["audiences"] == 8
    # The importer indexes every message (its own INSERT ... SELECT; the row trigger is off).
    assert tables["search_documents"] == 14
    assert await db.fetchval("select read_ready from search_readiness") is True


async def test_actors_keep_distinct_keys_and_owners(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    rows = await db.fetch(
        """
        select a.key, a.kind, a.name, o.key as owner
        from actors a left join actors o on o.workspace_id = a.workspace_id and o.id = a.owner_id
        order by a.id
        """
    )
    assert [(r["key"], r["kind"], r["name"], r["owner"]) for r in rows] == [
        ("alice", "member", "Alice", None),
        ("bob", "member", "Bob", None),
        ("carol", "member", "Carol", None),
        ("sam1", "member", "Sam", None),
        ("sam2", "member", "Sam", None),
        ("helper", "agent", "Helper", "alice"),
        ("scout", "agent", "Scout", "bob"),
    ]
    ns = await db.fetchval(
        "select n.name from workspaces w join namespaces n"
        " on n.workspace_id = w.id and n.id = w.default_namespace_id"
    )
    assert ns == "slack:acme"


async def test_scope_and_memory_audiences_are_derived(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    audiences = await audiences_by_id(db)
    rows = await db.fetch(
        "select key, origin_audience_id as o, destination_audience_id as d from scopes"
    )
    scopes = {r["key"]: (audiences[r["o"]], audiences[r["d"]]) for r in rows}

    ns = "slack:acme"
    workspace = ("workspace", ns, ())
    alice_only = ("members", ns, ("alice",))
    assert scopes["general"] == (workspace, workspace)
    assert scopes["secret"] == (alice_only, alice_only), "agents are never readers"
    assert scopes["partners"] == (
        ("members", ns, ("alice", "carol")),
        ("external", ns, ("alice", "carol")),
    )
    assert scopes["lobby"] == (("public", None, ()), ("external", ns, ()))
    assert scopes["dm-alice"] == (alice_only, alice_only)
    group = ("members", ns, ("alice", "bob", "carol"))
    assert scopes["dm-group"] == (group, group), "readers sorted by id, not file order"
    # A thread's audiences are its parent's.
    assert scopes["t-general"] == scopes["general"]
    assert scopes["t-secret"] == scopes["secret"]

    memories = {
        r["key"]: audiences[r["audience_id"]]
        for r in await db.fetch("select key, audience_id from memories")
    }
    assert memories == {
        "mem-alice": alice_only,
        "mem-team": workspace,
        "mem-faq": ("public", None, ()),
        "mem-pair": ("members", ns, ("alice", "bob")),
    }
    # Equal audiences are one row: secret, dm-alice and mem-alice share it.
    ids = await db.fetch(
        "select origin_audience_id as id from scopes where key in ('secret', 'dm-alice')"
        " union select audience_id from memories where key = 'mem-alice'"
    )
    assert len(ids) == 1


async def test_threads_have_parent_root_and_no_members(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    rows = await db.fetch(
        """
        select s.key, p.key as parent, m.key as root, s.visibility,
               (select count(*) from scope_members sm
                where sm.workspace_id = s.workspace_id and sm.scope_id = s.id) as members
        from scopes s
        left join scopes p on p.workspace_id = s.workspace_id and p.id = s.parent_id
        left join messages m on m.workspace_id = s.workspace_id and m.id = s.root_message_id
        order by s.id
        """
    )
    got = {r["key"]: (r["parent"], r["root"], r["visibility"], r["members"]) for r in rows}
    assert got["t-general"] == ("general", "m1", None, 0)
    assert got["t-secret"] == ("secret", "s1", None, 0)
    assert got["partners"] == (None, None, "shared", 3)
    assert got["dm-group"] == (None, None, None, 3)


async def test_messages_are_sequenced_by_time_then_file_order(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    rows = await db.fetch(
        """
        select m.key, s.key as scope, m.seq, m.global_seq, m.evidence, m.has_provenance,
               m.created_at, m.audience_id = o.origin_audience_id as scope_origin
        from messages m
        join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
        join scopes o on o.workspace_id = s.workspace_id and o.id = coalesce(s.parent_id, s.id)
        order by m.global_seq
        """
    )
    assert [(r["key"], r["scope"], r["seq"], r["global_seq"]) for r in rows] == [
        ("s1", "secret", 1, 1),
        ("ts1", "t-secret", 1, 2),
        ("m1", "general", 1, 3),
        ("m0", "general", 2, 4),  # 11:00:30+01:00 is 10:00:30 UTC
        ("m2", "general", 3, 5),  # tie at 10:01: file order decides
        ("m3", "general", 4, 6),
        ("t1", "t-general", 1, 7),
        ("p1", "partners", 1, 8),
        ("o1", "lobby", 1, 9),
        ("d1", "dm-alice", 1, 10),
        ("d2", "dm-alice", 2, 11),
        ("g1", "dm-group", 1, 12),
        ("l1", "general", 5, 13),
        ("r1", "general", 6, 14),
    ]
    assert all(r["scope_origin"] for r in rows), "each message has its scope's (parent's) origin"
    assert [r["key"] for r in rows if not r["evidence"]] == ["l1"]
    assert [r["key"] for r in rows if r["has_provenance"]] == ["d2", "r1"]
    m0 = next(r for r in rows if r["key"] == "m0")
    assert m0["created_at"] == datetime(2026, 3, 2, 10, 0, 30, tzinfo=UTC)

    last = await db.fetch("select key, last_seq from scopes")
    assert {r["key"]: r["last_seq"] for r in last} == {
        "general": 6, "secret": 1, "partners": 1, "lobby": 1, "dm-alice": 2, "dm-group": 1,
        "t-general": 1, "t-secret": 1,
    }  # fmt: skip
    assert await db.fetchval("select last_global_seq from workspaces") == 14
    ids = [r["id"] for r in await db.fetch("select id from messages order by global_seq")]
    assert ids == sorted(ids), "ids follow global order"


async def test_provenance_rows(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    sources = await db.fetch(
        """
        select m.key, s.key as source from message_sources ms
        join messages m on m.workspace_id = ms.workspace_id and m.id = ms.message_id
        join messages s on s.workspace_id = ms.workspace_id and s.id = ms.source_message_id
        """
    )
    assert {(r["key"], r["source"]) for r in sources} == {("d2", "d1"), ("d2", "s1")}
    memories = await db.fetch(
        """
        select m.key, mem.key as memory from message_memory_sources ms
        join messages m on m.workspace_id = ms.workspace_id and m.id = ms.message_id
        join memories mem on mem.workspace_id = ms.workspace_id and mem.id = ms.memory_id
        """
    )
    assert {(r["key"], r["memory"]) for r in memories} == {("d2", "mem-alice"), ("r1", "mem-faq")}


async def test_two_workspaces_keep_their_own_rows(db: asyncpg.Connection) -> None:
    await import_fixture(db, other_workspace(), progress=io.StringIO())
    await import_fixture_file(db, VALID, progress=io.StringIO())
    shared = await db.fetchval(
        "select count(*) from audiences a join audiences b on a.id = b.id"
        " where a.workspace_id <> b.workspace_id"
    )
    assert shared == 0
    assert await db.fetchval("select count(*) from workspaces") == 2


async def test_reimport_is_an_error_and_changes_nothing(db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    before = await table_counts(db)
    for attempt in (
        import_fixture_file(db, VALID, progress=io.StringIO()),
        import_fixture(db, valid(), progress=io.StringIO()),
    ):
        with pytest.raises(UsageError) as raised:
            await attempt
        assert str(raised.value) == (
            "workspace.key: workspace 'acme' already exists; nothing was imported"
        )
    assert await table_counts(db) == before


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """A mutation setting a value at a dotted path (`messages.0.scope`)."""

    def mutate(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _drop(path: str) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return mutate


BAD: list[tuple[str, Mutation, str]] = [
    ("dangling scope", _set("messages.0.scope", "gneral"),
     "messages[0].scope: unknown scope 'gneral'"),
    ("dangling author", _set("messages.4.author", "zed"),
     "messages[4].author: unknown member or agent 'zed'"),
    ("dangling source", _set("messages.10.sources", ["d1", "nope"]),
     "messages[10].sources[1]: unknown message 'nope'"),
    ("dangling memory source", _set("messages.13.memorySources", ["mem-x"]),
     "messages[13].memorySources[0]: unknown memory 'mem-x'"),
    ("own source", _set("messages.10.sources", ["d2"]),
     "messages[10].sources[0]: a message cannot be its own source"),
    ("repeated source", _set("messages.10.sources", ["d1", "d1"]),
     "messages[10].sources[1]: duplicate source 'd1'"),
    ("dangling scope member", _set("scopes.1.members", ["alice", "zed"]),
     "scopes[1].members[1]: unknown member or agent 'zed'"),
    ("repeated scope member", _set("scopes.1.members", ["alice", "alice"]),
     "scopes[1].members[1]: duplicate member 'alice'"),
    ("dangling owner", _set("agents.1.owner", "zed"), "agents[1].owner: unknown member 'zed'"),
    ("agent owned by an agent", _set("agents.1.owner", "helper"),
     "agents[1].owner: 'helper' is an agent; an agent's owner must be a member"),
    ("dangling thread root", _set("scopes.6.root", "zz"), "scopes[6].root: unknown message 'zz'"),
    ("thread root outside its parent", _set("scopes.6.root", "s1"),
     "scopes[6].root: message 's1' is not in the parent scope 'general'"),
    ("dangling thread parent", _set("scopes.6.parent", "nowhere"),
     "scopes[6].parent: unknown scope 'nowhere'"),
    ("thread under a thread", _set("scopes.7.parent", "t-general"),
     "scopes[7].parent: 't-general' is a thread; a thread's parent is a channel or dm"),
    ("thread with members", _set("scopes.6.members", ["alice"]),
     "scopes[6].members: a thread lists no members (it has its parent's)"),
    ("thread without parent", _drop("scopes.6.parent"),
     "scopes[6].parent: a thread needs a parent channel or dm"),
    ("thread with visibility", _set("scopes.6.visibility", "public"),
     "scopes[6].visibility: only a channel has a visibility, not a thread"),
    ("channel without visibility", _drop("scopes.0.visibility"),
     "scopes[0].visibility: a channel needs one: 'public', 'private', 'shared' or 'open'"),
    ("dm with visibility", _set("scopes.4.visibility", "private"),
     "scopes[4].visibility: only a channel has a visibility, not a dm"),
    ("channel with a root", _set("scopes.0.root", "m1"), "scopes[0].root: only a thread has a root"),
    ("private channel of agents only", _set("scopes.1.members", ["helper"]),
     "scopes[1].members: a private channel needs at least one member who is a person"),
    ("dm of agents only", _set("scopes.4.members", ["helper", "scout"]),
     "scopes[4].members: a dm needs at least one member who is a person"),
    ("dangling memory reader", _set("memories.0.audience.readers", ["zed"]),
     "memories[0].audience.readers[0]: unknown member 'zed'"),
    ("agent as memory reader", _set("memories.0.audience.readers", ["helper"]),
     "memories[0].audience.readers[0]: 'helper' is an agent; a reader must be a member"),
    ("members audience without readers", _set("memories.0.audience.readers", []),
     "memories[0].audience.readers: a members audience needs at least one reader"),
    ("workspace audience with readers", _set("memories.1.audience.readers", ["alice"]),
     "memories[1].audience.readers: only a members audience has readers"),
    ("duplicate member key", lambda d: d["members"].append({"key": "bob", "name": "Bobby"}),
     "members[5].key: duplicate key 'bob'"),
    ("agent reusing a member key", _set("agents.1.key", "bob"), "agents[1].key: duplicate key 'bob'"),
    ("duplicate scope key", _set("scopes.1.key", "general"),
     "scopes[1].key: duplicate key 'general'"),
    ("duplicate memory key", _set("memories.2.key", "mem-team"),
     "memories[2].key: duplicate key 'mem-team'"),
    ("duplicate message key", _set("messages.2.key", "m2"), "messages[2].key: duplicate key 'm2'"),
    ("body of the wrong type", _set("messages.1.body", 42),
     "messages[1].body: expected a string, got a number"),
    ("evidence of the wrong type", _set("messages.12.evidence", "no"),
     "messages[12].evidence: expected true or false, got a string"),
    ("members of the wrong type", _set("scopes.0.members", "alice"),
     "scopes[0].members: expected a list, got a string"),
    ("scope of the wrong type", _set("scopes.3", "lobby"),
     "scopes[3]: expected an object, got a string"),
    ("unknown scope kind", _set("scopes.2.kind", "chanel"),
     "scopes[2].kind: unknown kind 'chanel' (expected 'channel', 'dm' or 'thread')"),
    ("unknown visibility", _set("scopes.2.visibility", "secret"),
     "scopes[2].visibility: unknown visibility 'secret'"
     " (expected 'public', 'private', 'shared' or 'open')"),
    ("unknown audience kind", _set("memories.1.audience.kind", "everyone"),
     "memories[1].audience.kind: unknown kind 'everyone'"
     " (expected 'members', 'workspace' or 'public')"),
    ("unknown field", _set("members.0.email", "alice@example.com"),
     "members[0].email: unknown field"),
    ("missing field", _drop("messages.3.at"), "messages[3].at: required field is missing"),
    ("missing workspace", _drop("workspace"), "workspace: required field is missing"),
    ("time without a timezone", _set("messages.3.at", "2026-03-02T10:00:30"),
     "messages[3].at: '2026-03-02T10:00:30' has no timezone (write it like 2026-03-02T10:00:00Z)"),
    ("time as a number", _set("messages.3.at", 1772445630),
     "messages[3].at: expected an ISO 8601 date-time string, got a number"),
    ("time that is not one", _set("messages.3.at", "yesterday"),
     "messages[3].at: 'yesterday' is not an ISO 8601 date-time"),
    ("empty key", _set("members.0.key", ""), "members[0].key: must not be empty"),
    ("NUL in a body", _set("messages.1.body", "a\x00b"),
     "messages[1].body: contains a NUL character"),
    ("bad namespace", _set("namespace", "acme"),
     "namespace: expected 'type:name', like 'slack:acme'"),
    ("line break in a key stays on one line", _set("messages.0.scope", "gen\neral"),
     "messages[0].scope: unknown scope 'gen\\neral'"),
]  # fmt: skip


@pytest.mark.parametrize(("mutate", "expected"), [(m, e) for _, m, e in BAD],
                         ids=[name for name, _, _ in BAD])  # fmt: skip
async def test_bad_fixture_fails_with_one_line_and_changes_nothing(
    db: asyncpg.Connection, dsn: str, tmp_path: Path, mutate: Mutation, expected: str
) -> None:
    await import_fixture(db, other_workspace(), progress=io.StringIO())
    before = await table_counts(db)
    data = copy.deepcopy(valid())
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")

    for attempt in (
        import_fixture_file(db, path, progress=io.StringIO()),
        import_fixture(db, data, progress=io.StringIO()),
        # With a second connection computing the vectors from the unchecked bodies.
        import_fixture_file(db, path, progress=io.StringIO(), dsn=dsn),
    ):
        with pytest.raises(FixtureError) as raised:
            await attempt
        assert str(raised.value) == expected
    assert await table_counts(db) == before


async def test_unreadable_files_fail_with_one_line(db: asyncpg.Connection, tmp_path: Path) -> None:
    before = await table_counts(db)
    cases = {
        FIXTURES / "invalid_json.json": "invalid JSON at line 6 column 3: Expecting value",
        tmp_path / "missing.json": "no such file",
        tmp_path: "is a directory, not a fixture file",
    }
    top_level = tmp_path / "list.json"
    top_level.write_text("[1, 2]", encoding="utf-8")
    cases[top_level] = "expected a JSON object at the top level, got a list"
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"workspace": "caf\xe9"}'.encode("latin-1"))
    cases[latin1] = "invalid JSON: the file is not UTF-8 text"
    for path, message in cases.items():
        with pytest.raises(FixtureError) as raised:
            await import_fixture_file(db, path, progress=io.StringIO())
        assert str(raised.value) == f"{path}: {message}"
    assert await table_counts(db) == before


async def recall(*args: str, dsn: str) -> tuple[int, str, str]:
    """Run the real `recall` command line against the test database."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "app.cli", *args,
        env={**os.environ, "DATABASE_URL": dsn},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_cli_import_prints_a_json_summary(dsn: str, db: asyncpg.Connection) -> None:
    code, out, err = await recall("import", str(VALID), dsn=dsn)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["workspace"] == "acme" and summary["messages"] == 14
    assert await db.fetchval("select count(*) from messages") == 14


async def test_cli_bad_files_exit_nonzero_with_one_line(dsn: str, db: asyncpg.Connection) -> None:
    await import_fixture_file(db, VALID, progress=io.StringIO())
    before = await table_counts(db)
    missing = FIXTURES / "missing.json"
    cases = {
        FIXTURES / "unknown_scope.json": "messages[1].scope: unknown scope 'gneral'",
        FIXTURES / "invalid_json.json": (
            f"{FIXTURES / 'invalid_json.json'}: invalid JSON at line 6 column 3: Expecting value"
        ),
        missing: f"{missing}: no such file",
        VALID: "workspace.key: workspace 'acme' already exists; nothing was imported",
    }
    for path, message in cases.items():
        code, out, err = await recall("import", str(path), dsn=dsn)
        assert code != 0
        assert out == ""
        assert err.splitlines() == [f"recall: {message}"]
    assert await table_counts(db) == before
