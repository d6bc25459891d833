"""The term statistics of historySearch's word weighting (migrations/014, 017) stay exact on
every write path: the importer writes them set-based for its new workspace, every other writer
through the per-document row triggers, and both give the rows a count of the documents would."""

from __future__ import annotations

import io
from typing import Any

import asyncpg

from app.workspace_import.importer import import_fixture
from tests.changes_support import INDEXED_BODIES, Connector, each_document_write
from tests.client import GraphQLClient
from tests.history_support import REPLY, bulk_channel, history_acme, search, start_turn
from tests.personas import globex

Stats = tuple[list[tuple[str, int]], tuple[int, int] | None]


async def _kept(db: asyncpg.Connection, workspace_id: int) -> Stats:
    """The workspace's statistics as stored; a lexeme no document has any more keeps its row
    at zero (the triggers never delete one), which counts as absent."""
    terms = await db.fetch(
        "select lexeme, documents from search_term_stats"
        " where workspace_id = $1 and documents <> 0 order by lexeme",
        workspace_id,
    )
    corpus = await db.fetchrow(
        "select documents, lexemes from search_corpus_stats where workspace_id = $1",
        workspace_id,
    )
    return [tuple(r) for r in terms], None if corpus is None else tuple(corpus)


async def _counted(db: asyncpg.Connection, workspace_id: int) -> Stats:
    """The same statistics counted afresh from the workspace's documents."""
    terms = await db.fetch(
        "select l.lexeme, count(*)::int from search_documents d"
        " cross join unnest(tsvector_to_array(d.tsv)) as l(lexeme)"
        " where d.workspace_id = $1 group by 1 order by 1",
        workspace_id,
    )
    corpus = await db.fetchrow(
        "select count(*), coalesce(sum(length(d.tsv)), 0)::bigint from search_documents d"
        " where d.workspace_id = $1 having count(*) > 0",
        workspace_id,
    )
    return [tuple(r) for r in terms], None if corpus is None else tuple(corpus)


async def _workspace(db: asyncpg.Connection, key: str) -> int:
    found: int = await db.fetchval("select workspace_id from workspace_keys where key = $1", key)
    return found


async def _all_rows(db: asyncpg.Connection, workspace_id: int) -> tuple[list[Any], list[Any]]:
    terms = await db.fetch(
        "select * from search_term_stats where workspace_id = $1 order by lexeme", workspace_id
    )
    corpus = await db.fetch(
        "select * from search_corpus_stats where workspace_id = $1", workspace_id
    )
    return [tuple(r) for r in terms], [tuple(r) for r in corpus]


def _fixture() -> dict[str, Any]:
    fixture = bulk_channel(history_acme(), 40)
    fixture["messages"] += [
        {"key": f"stat{i}", "scope": "random", "author": "alice", "at": f"2026-03-04T09:0{i}:00Z",
         "body": body}
        for i, body in enumerate(INDEXED_BODIES)
    ]  # fmt: skip
    return fixture


async def test_an_import_writes_the_rows_the_row_triggers_would_have(
    db: asyncpg.Connection,
) -> None:
    await import_fixture(db, _fixture(), io.StringIO())
    await import_fixture(db, globex(), io.StringIO())
    for key in ("acme", "globex"):
        ws = await _workspace(db, key)
        imported = await _all_rows(db, ws)
        assert imported[0] and imported[1], key
        assert await _kept(db, ws) == await _counted(db, ws), key
        # The same documents written again through the live path: removing them leaves every
        # count at zero, and inserting them one row trigger at a time gives back exactly the
        # rows the import wrote (after the zeros it starts from are cleared away).
        async with db.transaction():
            await db.execute(
                "create temporary table saved on commit drop as"
                " select * from search_documents where workspace_id = $1",
                ws,
            )
            await db.execute("delete from search_documents where workspace_id = $1", ws)
            terms, corpus = await _all_rows(db, ws)
            assert {r[2] for r in terms} == {0} and [r[1:] for r in corpus] == [(0, 0)], key
            await db.execute("delete from search_term_stats where workspace_id = $1", ws)
            await db.execute("delete from search_corpus_stats where workspace_id = $1", ws)
            await db.execute("insert into search_documents select * from saved")
            assert await _all_rows(db, ws) == imported, key


async def test_live_posts_edits_deletes_and_replies_keep_the_statistics_exact(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    from app.data.tokens import issue_connector_token

    acme, other = await _workspace(db, "acme"), await _workspace(db, "globex")
    untouched = await _all_rows(db, other)
    connector = Connector(client, await issue_connector_token(db, "acme"))

    async def exact(step: str) -> None:
        assert await _kept(db, acme) == await _counted(db, acme), step
        assert await _all_rows(db, other) == untouched, step

    await each_document_write(connector, exact)

    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await search(client, turn, "launch")
    reply = await client.gql(REPLY, {"body": "The launch is on retry.policy v2"}, token=turn)
    assert reply["postReply"]["delivered"] is True
    await exact("a reply")
