"""An erasure finishes on its own, in a quiet workspace (issue 33, 11).

eraseMemberMessages hides its messages at once; their text and search documents go in chunks
for as long as the request allows, and what is left used to wait for the workspace's next
batch: until then the text stayed stored and indexed, and a search for its words paged through
them (empty pages with a continuation). `recall serve` now removes it in the background
(app.changes.erasure_worker): these tests send no further batch and wait, with a bound.
"""

from __future__ import annotations

import asyncio
import io
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app.changes.apply import apply_changes
from app.changes.erasure_worker import remove_pending_text
from app.changes.model import parse_change
from app.data import deletions
from app.db import connect
from app.settings import Settings
from app.workspace_import.importer import import_fixture
from tests.changes_support import Connector, keyed, post
from tests.client import GraphQLClient, graphql_client
from tests.data.test_writers_and_readers import _stats_are_exact
from tests.history_support import history_acme

# More erased matches than one page's candidate budget (200): while their documents stayed,
# a search for their word answered an empty page with a continuation.
ERASED = 260
WORD = "quokkaword"
SEARCH = """
query($q: String!) { messageSearch(query: $q) {
  edges { node { key } } pageInfo { hasNextPage } candidateBudgetExhausted } }
"""
# How long a test waits for the background removal (it runs every 0.2 s here).
PATIENCE = 30.0


@pytest.fixture
def settings() -> Settings:
    return Settings(RECALL_EXPOSE_STATEMENT_COUNT=True, RECALL_TEXT_REMOVAL_INTERVAL=0.2)


@pytest.fixture
async def acme(db: asyncpg.Connection, client: GraphQLClient) -> tuple[int, Connector]:
    from app.data.tokens import issue_connector_token

    await import_fixture(db, history_acme(), io.StringIO())
    workspace: int = await db.fetchval("select id from workspaces where key = 'acme'")
    connector = Connector(client, await issue_connector_token(db, "acme"))
    for start in range(0, ERASED, 65):
        await connector.apply(
            *[
                post(f"q{i}", "general", "carol", f"{WORD} {i} " + "filler text " * 40)
                for i in range(start, min(start + 65, ERASED))
            ]
        )
    return workspace, connector


async def _stored(db: asyncpg.Connection, workspace: int) -> int:
    """carol's messages whose text or search document is still stored."""
    found: int = await db.fetchval(
        "select count(*) from messages m join actors a on a.workspace_id = m.workspace_id"
        " and a.id = m.author_id where m.workspace_id = $1 and a.key = 'carol'"
        " and (m.body <> '' or exists (select 1 from search_documents d"
        " where d.workspace_id = $1 and d.message_id = m.id))",
        workspace,
    )
    return found


async def _until_removed(db: asyncpg.Connection, workspace: int) -> None:
    deadline = time.monotonic() + PATIENCE
    while await _stored(db, workspace):
        assert time.monotonic() < deadline, "the erased text is still stored"
        await asyncio.sleep(0.1)


def _sample(text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


async def test_an_erasure_finishes_in_a_quiet_workspace_with_no_further_batch(
    acme: tuple[int, Connector],
    client: GraphQLClient,
    db: asyncpg.Connection,
    issue_token: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workspace, connector = acme
    alice = await issue_token("member", "acme", "alice")
    before = (await client.http.get("/metrics")).text
    background = 'recall_text_removed_messages_total{when="background"}'
    # The request's time for removing text runs out before its first chunk, as it does for a
    # person's 2,000 long messages: the erasure answers, hidden, with its text still stored.
    monkeypatch.setattr("app.api.changes.resolvers.TEXT_REMOVAL_SECONDS", 0.0)
    result = await connector.apply(keyed("eraseMemberMessages", "carol"))
    assert result["erasedMessages"] >= ERASED
    # No further batch: the server removes it on its own.
    await _until_removed(db, workspace)
    page = (await client.gql(SEARCH, {"q": WORD}, token=alice))["messageSearch"]
    assert page == {
        "edges": [],
        "pageInfo": {"hasNextPage": False},
        "candidateBudgetExhausted": False,
    }
    await _stats_are_exact(db, workspace)
    after = (await client.http.get("/metrics")).text
    assert _sample(after, "recall_text_removal_pending") == 0
    assert _sample(after, re.escape(background)) - _sample(before, re.escape(background)) > 0


async def test_an_erasure_its_process_died_in_is_finished_by_the_server(
    acme: tuple[int, Connector], client: GraphQLClient, db: asyncpg.Connection, dsn: str
) -> None:
    workspace, _ = acme
    # The batch commits, and its process dies before any text goes.
    conn = await connect(dsn)
    try:
        async with conn.transaction():
            await apply_changes(
                conn, workspace, [parse_change(0, keyed("eraseMemberMessages", "carol"))]
            )
    finally:
        await conn.close()
    await _until_removed(db, workspace)
    assert await deletions.text_removal_pending(db, workspace) == 0
    await _stats_are_exact(db, workspace)


@pytest.fixture
async def quiet_acme(db: asyncpg.Connection, dsn: str) -> AsyncIterator[tuple[int, asyncpg.Pool]]:
    """acme with carol's messages erased and their text pending, no server running; a pool."""
    await import_fixture(db, history_acme(), io.StringIO())
    workspace: int = await db.fetchval("select id from workspaces where key = 'acme'")
    async with db.transaction():
        await apply_changes(db, workspace, [parse_change(0, keyed("eraseMemberMessages", "carol"))])
    assert await deletions.text_removal_pending(db, workspace) > 0
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=3)
    try:
        yield workspace, pool
    finally:
        await pool.close()


async def test_background_removers_take_turns_per_workspace(
    quiet_acme: tuple[int, asyncpg.Pool], db: asyncpg.Connection, dsn: str
) -> None:
    """Another process removing a workspace's text (holding its claim) is left to it; once it
    is done (its transaction ends), the next pass removes everything, each message once."""
    workspace, pool = quiet_acme
    pending = await deletions.text_removal_pending(db, workspace)
    # What /metrics says meanwhile (a server with the background removal off).
    quiet = Settings(RECALL_TEXT_REMOVAL_INTERVAL=0)
    async with graphql_client(quiet, dsn) as server:
        scraped = (await server.http.get("/metrics")).text
        assert _sample(scraped, "recall_text_removal_pending") == pending
    other = await connect(dsn)
    try:
        async with other.transaction():
            assert await deletions.claim_text_removal(other, workspace)
            assert await remove_pending_text(pool, pause=0) == 0
            assert await deletions.text_removal_pending(db, workspace) == pending
    finally:
        await other.close()
    both = await asyncio.gather(remove_pending_text(pool, pause=0), remove_pending_text(pool))
    assert sum(both) == pending
    assert await deletions.text_removal_pending(db, workspace) == 0
    await _stats_are_exact(db, workspace)
    async with graphql_client(quiet, dsn) as server:
        scraped = (await server.http.get("/metrics")).text
        assert _sample(scraped, "recall_text_removal_pending") == 0
