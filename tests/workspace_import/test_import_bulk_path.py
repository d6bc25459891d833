"""The importer's bulk path writes exactly the rows the live, per-row path writes.

`recall import` skips the per-row triggers and does their work set-based (documents, term
statistics, lineage summaries, foreign keys: app/workspace_import/importer.py, app/data/bulk_load.py).
The same fixture is built a second time through the live path — its people, agents, channels
and memories imported without messages, then every message posted with applyChanges' applier
in the import's order, each thread created once its root is posted — and every derived row is
compared by key.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import asyncpg
import pytest

from app.changes.apply import apply_changes
from app.changes.model import parse_change
from app.data import bulk_load, workspace_import
from app.workspace_import.importer import import_fixture
from tests.conftest import CITUS

FIXTURES = {
    # provenance, memories, every scope kind
    "valid": Path(__file__).parents[1] / "fixtures" / "valid.json",
    # a realistic chat: identifiers, CJK, threads, DMs with agents (docs/relevance.md)
    "eval": Path(__file__).parents[2] / "eval" / "data" / "fixture.json",
}


@pytest.mark.parametrize("vectors", ["in the transaction", "on a second connection"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
async def test_bulk_import_and_live_posts_write_identical_rows(
    db: asyncpg.Connection, dsn: str, name: str, vectors: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = json.loads(FIXTURES[name].read_text())
    bulk = copy.deepcopy(fixture)
    bulk["workspace"]["key"] = "bulk"
    computed = _spy_on_vectors(monkeypatch)
    beside = vectors == "on a second connection"
    await import_fixture(db, bulk, progress=io.StringIO(), dsn=dsn if beside else None)
    assert len(computed) == (len(fixture["messages"]) if beside else 0)
    live_id = await _build_live(db, fixture)

    bulk_id = await db.fetchval("select workspace_id from workspace_keys where key = 'bulk'")
    for what, query in _DERIVED.items():
        expected = sorted(map(tuple, await db.fetch(query, live_id)))
        got = sorted(map(tuple, await db.fetch(query, bulk_id)))
        assert expected, f"{what}: the live workspace has rows to compare"
        assert got == expected, f"{what} differ between the bulk and the live path"


def _spy_on_vectors(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The vectors computed beside the import (empty: not used)."""
    computed: list[bytes] = []
    real = workspace_import.DocumentVectors.vectors

    def spy(self: workspace_import.DocumentVectors) -> list[bytes] | None:
        out = real(self)
        computed.extend(out or [])
        return out

    monkeypatch.setattr(workspace_import.DocumentVectors, "vectors", spy)
    return computed


async def test_a_vectors_connection_that_fails_leaves_the_work_to_the_import(
    db: asyncpg.Connection, dsn: str
) -> None:
    """No second connection to be had (here: nothing listens at the address): the import's
    own connection computes the documents, the same ones."""
    fixture = json.loads(FIXTURES["eval"].read_text())
    await import_fixture(db, fixture, progress=io.StringIO())
    other = copy.deepcopy(fixture)
    other["workspace"]["key"] = "other"
    unreachable = "postgresql://postgres@127.0.0.1:1/nowhere"
    await import_fixture(db, other, progress=io.StringIO(), dsn=unreachable)
    ids = [
        await db.fetchval("select workspace_id from workspace_keys where key = $1", key)
        for key in (fixture["workspace"]["key"], "other")
    ]
    for what in ("search documents", "term statistics", "corpus statistics"):
        first, second = [sorted(map(tuple, await db.fetch(_DERIVED[what], i))) for i in ids]
        assert first and first == second, what


@pytest.mark.parametrize("beside", [0, 1, 2])
async def test_vectors_taken_in_batches_by_several_connections_come_back_in_order(
    db: asyncpg.Connection, dsn: str, beside: int
) -> None:
    """Connections of their own and the import's own take the next batch as they finish one;
    the vectors are still the bodies' in order (batches of 5, so 11 of them, some of CJK text
    and identifiers), and the import's connection reads tsvectors as text again after."""
    bodies = [f"note {i} about deploy-{i}.cfg" if i % 4 else f"数据库 {i} 迁移" for i in range(53)]
    work = workspace_import.DocumentVectors(bodies, batch=5)
    own = [asyncio.create_task(work.beside(dsn)) for _ in range(beside)]
    await work.join(db)
    await asyncio.gather(*own)
    conn = await asyncpg.connect(dsn)
    try:
        await workspace_import._raw_tsvectors(conn)
        expected = [r[0] for r in await conn.fetch(workspace_import._VECTORS, bodies)]
    finally:
        await conn.close()
    assert len(set(expected)) == len(bodies)  # each body's vector is its own
    assert work.vectors() == expected
    assert await db.fetchval("select 'a b'::tsvector") == "'a' 'b'"


async def test_vectors_with_a_batch_lost_are_none() -> None:
    """Vectors not all computed (here: the connection was refused) are none: the import then
    computes them all itself, in its transaction."""
    work = workspace_import.DocumentVectors(["a", "b", "c"], batch=1)
    with pytest.raises(OSError):
        await work.beside("postgresql://postgres@127.0.0.1:1/nowhere")
    assert work.vectors() is None


async def test_stopped_vectors_end_their_batch_in_flight_and_take_no_more(
    db: asyncpg.Connection, dsn: str
) -> None:
    """A refused fixture stops the vectors' connection rather than cancelling it (a connect or
    query cancelled midway leaves asyncpg's futures failing unread, printed at exit): the
    batch in flight ends, no other starts, and its own connection closes by itself."""
    work = workspace_import.DocumentVectors([f"note {i}" for i in range(40)], batch=10)
    fetched = 0

    class StopsDuringTheFirstBatch:
        async def fetch(self, *args: Any) -> list[asyncpg.Record]:
            nonlocal fetched
            fetched += 1
            work.stop()
            return await db.fetch(*args)

    await work._take(cast(asyncpg.Connection, StopsDuringTheFirstBatch()))
    assert fetched == 1
    assert work.vectors() is None  # not all computed: the import computes them itself
    await asyncio.wait_for(work.beside(dsn), 30)  # opens, takes nothing, closes


async def _build_live(db: asyncpg.Connection, fixture: dict[str, Any]) -> int:
    shell = copy.deepcopy(fixture)
    shell["workspace"]["key"] = "live"
    shell["messages"] = []
    threads = {s["key"]: s for s in fixture["scopes"] if s["kind"] == "thread"}
    shell["scopes"] = [s for s in fixture["scopes"] if s["kind"] != "thread"]
    await import_fixture(db, shell, progress=io.StringIO())
    workspace_id: int = await db.fetchval(
        "select workspace_id from workspace_keys where key = 'live'"
    )

    # The import's order: by time, ties in file order.
    at = [datetime.fromisoformat(m["at"]) for m in fixture["messages"]]
    order = sorted(range(len(at)), key=lambda i: (at[i], i))
    changes: list[dict[str, Any]] = []
    posted: set[str] = set()
    for i in order:
        message = fixture["messages"][i]
        thread = threads.pop(message["scope"], None)
        if thread is not None:
            assert thread["root"] in posted, "a thread's root comes before its replies"
            changes.append({"createScope": thread})
        changes.append({"postMessage": message})
        posted.add(message["key"])
    # Threads nobody replied in, after every root.
    changes += [{"createScope": t} for t in threads.values()]
    for start in range(0, len(changes), 500):
        batch = [parse_change(start + j, c) for j, c in enumerate(changes[start : start + 500])]
        async with db.transaction():
            await apply_changes(db, workspace_id, batch)
    return workspace_id


# Each query lists one workspace's derived rows by key ($1: the workspace id), ids left out.
_AUDIENCE = """(select a.kind || ':' || coalesce(array_to_string(array(
                    select x.key from unnest(a.readers) r(id)
                    join actors x on x.workspace_id = $1 and x.id = r.id
                    order by x.key), ','), '')
                from audiences a where a.workspace_id = $1 and a.id = {id})"""

_DERIVED = {
    "messages": f"""
        select m.key, s.key, m.seq, m.global_seq, au.key, m.body, m.created_at, m.evidence,
               m.has_provenance, {_AUDIENCE.format(id="m.audience_id")},
               array(select {_AUDIENCE.format(id="l.id")}
                     from unnest(m.lineage_audience_ids) l(id) order by 1)::text,
               m.lineage_denied
        from messages m
        join scopes s on s.workspace_id = $1 and s.id = m.scope_id
        join actors au on au.workspace_id = $1 and au.id = m.author_id
        where m.workspace_id = $1
    """,
    "search documents": """
        select m.key, s.key, r.key, au.key, d.global_seq, d.seq, d.created_at, d.tsv::text
        from search_documents d
        join messages m on m.workspace_id = $1 and m.id = d.message_id
        join scopes s on s.workspace_id = $1 and s.id = d.scope_id
        join scopes r on r.workspace_id = $1 and r.id = d.root_scope_id
        join actors au on au.workspace_id = $1 and au.id = d.author_id
        where d.workspace_id = $1
    """,
    "term statistics": """
        select lexeme, documents from search_term_stats where workspace_id = $1 and documents > 0
    """,
    "workspace": """
        select w.last_global_seq, n.name from workspaces w
        join namespaces n on n.workspace_id = $1 and n.id = w.default_namespace_id
        where w.id = $1
    """,
    "corpus statistics": """
        select documents, lexemes from search_corpus_stats where workspace_id = $1
    """,
    "scopes": f"""
        select s.key, s.kind, s.visibility, s.name, p.key, rm.key, s.last_seq,
               {_AUDIENCE.format(id="s.origin_audience_id")},
               {_AUDIENCE.format(id="s.destination_audience_id")}
        from scopes s
        left join scopes p on p.workspace_id = $1 and p.id = s.parent_id
        left join messages rm on rm.workspace_id = $1 and rm.id = s.root_message_id
        where s.workspace_id = $1
    """,
    "provenance": """
        select m.key, src.key from message_sources e
        join messages m on m.workspace_id = $1 and m.id = e.message_id
        join messages src on src.workspace_id = $1 and src.id = e.source_message_id
        where e.workspace_id = $1
        union all
        select m.key, 'memory:' || mem.key from message_memory_sources e
        join messages m on m.workspace_id = $1 and m.id = e.message_id
        join memories mem on mem.workspace_id = $1 and mem.id = e.memory_id
        where e.workspace_id = $1
    """,
}


async def test_a_broken_foreign_key_is_found_by_the_set_based_check(db: asyncpg.Connection) -> None:
    fixture = json.loads(FIXTURES["valid"].read_text())
    await import_fixture(db, fixture, progress=io.StringIO())
    workspace_id = await db.fetchval("select workspace_id from workspace_keys where key = 'acme'")
    scope_id = await db.fetchval(
        "select id from scopes where workspace_id = $1 and key = 'general'", workspace_id
    )
    tr = db.transaction()
    await tr.start()
    try:
        if CITUS is not None:
            # As the importer has it (workspace_import.skip_row_triggers): the setting reaches
            # the shards, whose triggers check the keys.
            await db.execute("set local citus.propagate_set_commands = 'local'")
        assert await bulk_load.defer_row_checks(db)
        assert await bulk_load.check_foreign_keys(db, workspace_id, ["scope_members"]) is None
        # No such actor: the per-row trigger is off, so only the set-based check can see it.
        await db.execute(
            "insert into scope_members (workspace_id, scope_id, actor_id) values ($1, $2, -1)",
            workspace_id,
            scope_id,
        )
        broken = await bulk_load.check_foreign_keys(db, workspace_id, ["scope_members"])
        assert broken is not None and broken.startswith("scope_members_")
    finally:
        await tr.rollback()


@pytest.mark.skipif(CITUS is not None, reason="the importer keeps every index on Citus")
async def test_a_first_import_builds_the_indexes_it_dropped_as_they_were(
    db: asyncpg.Connection,
) -> None:
    """Into a database without messages the importer loads unindexed and builds the
    secondary indexes at the end: the same names, definitions and settings come back. Into
    one with data it keeps them (and takes no lock that would hold up its searches)."""
    before = await _secondary_indexes(db)
    assert any(name == "search_documents_tsv" for name, _, _ in before)
    first = io.StringIO()
    await import_fixture(db, json.loads(FIXTURES["valid"].read_text()), progress=first)
    assert f"{len(before)} indexes built" in first.getvalue()
    assert await _secondary_indexes(db) == before

    second, fixture = io.StringIO(), json.loads(FIXTURES["valid"].read_text())
    fixture["workspace"]["key"] = "second"
    await import_fixture(db, fixture, progress=second)
    assert "indexes built" not in second.getvalue()
    assert await _secondary_indexes(db) == before


async def _secondary_indexes(db: asyncpg.Connection) -> list[tuple[Any, ...]]:
    rows = await db.fetch(
        """
        select c.relname, pg_get_indexdef(i.indexrelid), c.reloptions
        from pg_index i join pg_class c on c.oid = i.indexrelid
        where i.indrelid = any(array['messages', 'search_documents']::regclass[])
          and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
        """
    )
    return sorted(map(tuple, rows))


async def test_a_role_that_may_not_skip_row_checks_imports_the_same_rows(
    db: asyncpg.Connection, dsn: str
) -> None:
    """The ordinary path (per-row foreign keys, the index's own pending list) for a role that
    is neither superuser nor the tables' owner, as in many deployments."""
    role = f"importer_{uuid.uuid4().hex[:8]}"
    await db.execute(f"create role {role} login")
    try:
        await db.execute(
            f"grant select, insert, update, delete on all tables in schema public to {role}"
        )
        await db.execute(f"grant usage, select on all sequences in schema public to {role}")
        conn = await asyncpg.connect(dsn, user=role)
        try:
            assert not await _defers(conn)
            summary = await import_fixture(
                conn, json.loads(FIXTURES["eval"].read_text()), progress=io.StringIO()
            )
        finally:
            await conn.close()
        workspace_id = await db.fetchval(
            "select workspace_id from workspace_keys where key = $1", summary["workspace"]
        )
        bulk = copy.deepcopy(json.loads(FIXTURES["eval"].read_text()))
        bulk["workspace"]["key"] = "bulk"
        await import_fixture(db, bulk, progress=io.StringIO())
        bulk_id = await db.fetchval("select workspace_id from workspace_keys where key = 'bulk'")
        for what, query in _DERIVED.items():
            expected = sorted(map(tuple, await db.fetch(query, workspace_id)))
            assert expected and sorted(map(tuple, await db.fetch(query, bulk_id))) == expected, what
        limit = await db.fetchval(
            "select reloptions from pg_class where oid = 'search_documents_tsv'::regclass"
        )
        assert limit == ["gin_pending_list_limit=256"], "the index keeps its own setting"
    finally:
        await db.execute(f"drop owned by {role}")
        await db.execute(f"drop role {role}")


async def _defers(conn: asyncpg.Connection) -> bool:
    async with conn.transaction():
        return await bulk_load.defer_row_checks(conn)
