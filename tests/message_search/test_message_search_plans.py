"""How much a page reads, on real plans: a query of several lexemes reads only the documents of
the newest blocks that hold all its words (app.data.search_blocks); one whose matches are all
older than the newest WALK documents then reads its matches through the text index, not the
rest of the workspace in recency order (app.data.message_search.scan.rest_scan); and the
statement planned once (a generic plan, as the app runs it) takes the path the term statistics
choose: a rare word's matches through the text index, a common word's newest documents through
the recency index (app.data.message_search.words)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from app.data.audit import SearchAudit
from app.data.message_search.inputs import CandidateQuery
from app.data.message_search.scan import WALK
from app.data.message_search.statement import search_page
from app.data.search_blocks import BLOCK
from app.data.session import Session
from app.db import GENERIC_PLANNER_SETTINGS, create_pool
from app.workspace_import.importer import import_fixture
from tests.conftest import CITUS
from tests.message_search_support import workspace

OLD_MATCHES = 300
RARE = 30
NEWER = 3 * WALK


class _Recording(Session):
    """A request's session that keeps each statement it runs, with its values."""

    sent: list[tuple[str, tuple[object, ...]]]

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sent.append((sql, args))
        return await super().fetch(sql, *args)

    async def fetch_planned_once(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sent.append((sql, args))
        return await super().fetch_planned_once(sql, *args)


@pytest.mark.skipif(CITUS is not None, reason="plans on a Citus worker are not read here")
async def test_old_matches_of_two_words_are_read_through_the_text_index(
    db: asyncpg.Connection, dsn: str
) -> None:
    messages = [(f"old-{i}", "room", "ann", f"alpha beta note {i}") for i in range(OLD_MATCHES)]
    messages += [(f"new-{i}", "room", "ann", f"alpha filler {i}") for i in range(NEWER)]
    await import_fixture(db, workspace(messages), progress=io.StringIO())
    await db.execute("analyze search_documents")
    ws, ns, ann = await _ids(db)

    page, sql, args = await _page(dsn, ws, ns, ann, ["alpha", "beta"])
    assert len(page.hits) == 20  # the newest old matches, found past the walk
    read = await _read(db, sql, args)
    # The walk's WALK documents, then the matches (each at most twice: index and recheck).
    assert read <= WALK + 2 * OLD_MATCHES, f"{read} documents read"


@pytest.mark.skipif(CITUS is not None, reason="plans on a Citus worker are not read here")
async def test_a_page_found_among_the_newest_documents_reads_no_further(
    db: asyncpg.Connection, dsn: str
) -> None:
    """Fewer matches among the newest WALK documents than the probe, but more than a page of
    eligible ones: the page is cut inside the probe (its candidates are the first in search
    order), so the older matches are not read through the text index."""
    messages = [(f"old-{i}", "room", "ann", f"alpha beta note {i}") for i in range(OLD_MATCHES)]
    for i in range(WALK + 1000):
        body = f"alpha beta fresh {i}" if i % 400 == 0 else f"alpha filler {i}"
        messages.append((f"new-{i}", "room", "ann", body))
    fresh = len([m for m in messages if "fresh" in m[3]])
    walked = len([i for i in range(1000, WALK + 1000) if i % 400 == 0])
    assert 20 < walked < 41  # more than a page, fewer than the probe (2 * first + 1)
    await import_fixture(db, workspace(messages), progress=io.StringIO())
    await db.execute("analyze search_documents")
    ws, ns, ann = await _ids(db)

    page, sql, args = await _page(dsn, ws, ns, ann, ["alpha", "beta"])

    assert [h.candidate.message_id for h in page.hits] == await db.fetchval(
        "select array_agg(message_id order by global_seq desc) from (select d.message_id,"
        " d.global_seq from search_documents d join messages m on m.id = d.message_id"
        " where m.body like 'alpha beta fresh%' order by d.global_seq desc limit 20) x"
    )
    assert page.cut
    read = await _read(db, sql, args)
    # The walk's blocks that hold both words, each message of BLOCK with a match alone in
    # its block: their documents, and the walked matches again (not the older ones). Without
    # the blocks, the walk read all of the newest WALK documents.
    assert read <= BLOCK * walked + 2 * fresh, f"{read} documents read"


@pytest.mark.skipif(CITUS is not None, reason="a Citus coordinator plans every call")
async def test_planned_once_the_page_takes_the_path_the_term_statistics_choose(
    db: asyncpg.Connection, dsn: str
) -> None:
    """One generic plan for every word: a rare word's few old matches are fetched through the
    text index (not found by walking the 3 x WALK newer documents), also beside a common word,
    and a common word's newest page is walked through the recency index (not every match
    fetched and sorted)."""
    messages = [(f"old-{i}", "room", "ann", f"zephyr alpha note {i}") for i in range(RARE)]
    messages += [(f"new-{i}", "room", "ann", f"alpha filler {i}") for i in range(NEWER)]
    await import_fixture(db, workspace(messages), progress=io.StringIO())
    await db.execute("analyze search_documents")
    ws, ns, ann = await _ids(db)

    for word, expected, most_read in [
        # every match, each at most twice (the index, then the row)
        ("zephyr", [f"old-{i}" for i in reversed(range(RARE))], 2 * RARE),
        # the newest page and its probe (2 x 20 + 1), through the recency index
        ("alpha", [f"new-{i}" for i in reversed(range(NEWER - 20, NEWER))], 4 * 41),
        # two common words: the newest blocks that hold both, and their documents
        ("alpha filler", [f"new-{i}" for i in reversed(range(NEWER - 20, NEWER))], 4 * 41),
        # a rare word beside a common one: through the text index, not the newest WALK first
        ("zephyr alpha", [f"old-{i}" for i in reversed(range(RARE))], 2 * RARE),
    ]:
        page, sql, args = await _page(dsn, ws, ns, ann, word.split(), planned_once=True)
        keys = await db.fetch(
            "select key from messages where id = any($1::bigint[])",
            [h.candidate.message_id for h in page.hits],
        )
        assert sorted(r["key"] for r in keys) == sorted(expected[:20]), word
        generic = await asyncpg.connect(dsn, server_settings=GENERIC_PLANNER_SETTINGS)
        try:
            read = await _read_planned_once(generic, sql, args)
        finally:
            await generic.close()
        assert read <= most_read, f"{word}: {read} documents read"


async def _read_planned_once(conn: asyncpg.Connection, sql: str, args: tuple[object, ...]) -> int:
    """Documents a statement read on a connection that plans it once: its index entries and
    table rows read in a transaction, from the transaction's own statistics."""
    transaction = conn.transaction()
    await transaction.start()
    try:
        await conn.fetch(sql, *args)
        # Entries returned by the table's indexes, and rows by its sequential scans.
        read: int = await conn.fetchval(
            "select pg_stat_get_xact_tuples_returned('search_documents'::regclass)"
            " + coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)"
            " from pg_index i where i.indrelid = 'search_documents'::regclass"
        )
    finally:
        await transaction.rollback()
    return read


async def _page(
    dsn: str, ws: int, ns: int, ann: int, words: list[str], *, planned_once: bool = False
) -> tuple[Any, str, tuple[object, ...]]:
    """A page of 20 for ann, budget 200, and the page statement with its values."""
    pool = await create_pool(dsn, min_size=1, max_size=1)
    generic = await create_pool(dsn, min_size=1, max_size=1, generic_plans=True)
    try:
        session = _Recording(pool, planned_once=generic if planned_once else None)
        session.sent = []
        page = await search_page(
            session,
            CandidateQuery((ws, "members", ns, [ann]), words, []),
            after=None,
            first=20,
            budget=200,
            audit=SearchAudit("message_search", ann, None, "", {}, {}),
        )
        await session.close()
    finally:
        await pool.close()
        await generic.close()
    sql, args = session.sent[-1]
    return page, sql, args


async def _read(db: asyncpg.Connection, sql: str, args: tuple[object, ...]) -> int:
    """Documents the statement reads, from its EXPLAIN ANALYZE."""
    transaction = db.transaction()
    await transaction.start()
    try:
        plan = await db.fetchval(f"explain (analyze, format json) {sql}", *args)
    finally:
        await transaction.rollback()
    return sum(_documents_read(node) for node in _nodes(_root(plan)))


async def _ids(db: asyncpg.Connection) -> tuple[int, int, int]:
    row = await db.fetchrow(
        "select w.id as ws, w.default_namespace_id as ns, a.id as ann from workspaces w"
        " join actors a on a.workspace_id = w.id and a.key = 'ann' where w.key = 'lab'"
    )
    assert row is not None
    return row["ws"], row["ns"], row["ann"]


def _root(plan: Any) -> dict[str, Any]:
    explained = json.loads(plan) if isinstance(plan, str) else plan
    root: dict[str, Any] = explained[0]["Plan"]
    return root


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _documents_read(node: dict[str, Any]) -> int:
    if node.get("Relation Name") != "search_documents":
        return 0
    rows = node["Actual Rows"] + node.get("Rows Removed by Filter", 0)
    rows += node.get("Rows Removed by Index Recheck", 0)
    return int(rows * node["Actual Loops"])
