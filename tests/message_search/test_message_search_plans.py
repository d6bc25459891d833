"""How much a page reads, on real plans: a query of several lexemes whose matches are all older
than the newest WALK documents reads those and then its matches through the text index, not
the rest of the workspace in recency order (app.data.message_search.scan.rest_scan)."""

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
from app.data.session import Session
from app.db import create_pool
from app.workspace_import.importer import import_fixture
from tests.conftest import CITUS
from tests.message_search_support import workspace

OLD_MATCHES = 300
NEWER = 3 * WALK


class _Recording(Session):
    """A request's session that keeps each statement it runs, with its values."""

    sent: list[tuple[str, tuple[object, ...]]]

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sent.append((sql, args))
        return await super().fetch(sql, *args)


@pytest.mark.skipif(CITUS is not None, reason="plans on a Citus worker are not read here")
async def test_old_matches_of_two_words_are_read_through_the_text_index(
    db: asyncpg.Connection, dsn: str
) -> None:
    messages = [(f"old-{i}", "room", "ann", f"alpha beta note {i}") for i in range(OLD_MATCHES)]
    messages += [(f"new-{i}", "room", "ann", f"alpha filler {i}") for i in range(NEWER)]
    await import_fixture(db, workspace(messages), progress=io.StringIO())
    await db.execute("analyze search_documents")
    ws, ns, ann = await _ids(db)

    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        session = _Recording(pool)
        session.sent = []
        page = await search_page(
            session,
            CandidateQuery((ws, "members", ns, [ann]), ["alpha", "beta"], []),
            after=None,
            first=20,
            budget=200,
            audit=SearchAudit("message_search", ann, None, "", {}, {}),
        )
        await session.close()
    finally:
        await pool.close()
    assert len(page.hits) == 20  # the newest old matches, found past the walk
    sql, args = session.sent[-1]

    transaction = db.transaction()
    await transaction.start()
    try:
        plan = await db.fetchval(f"explain (analyze, format json) {sql}", *args)
    finally:
        await transaction.rollback()
    read = sum(_documents_read(node) for node in _nodes(_root(plan)))
    # The walk's WALK documents, then the matches (each at most twice: index and recheck).
    assert read <= WALK + 2 * OLD_MATCHES, f"{read} documents read"


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
