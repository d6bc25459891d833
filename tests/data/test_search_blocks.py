"""The block summaries of messageSearch's walk (migrations/036, app.data.search_blocks) are
exact on every write path: each block's row holds the lexemes of its documents, no fewer (a
search of several words would lose matches) and no more (an edited or erased message's words
would stay behind). The importer writes them set-based, every other writer through the row
triggers; and a search of several words finds what live changes wrote, and no longer what
they removed."""

from __future__ import annotations

import io
from typing import Any

import asyncpg

from app.data.search_blocks import BLOCK
from app.data.tokens import issue_connector_token
from app.workspace_import.importer import import_fixture
from tests.changes_support import (
    INDEXED_BODIES,
    Connector,
    delete,
    each_document_write,
    edit,
    post,
)
from tests.client import GraphQLClient
from tests.history_support import bulk_channel, history_acme
from tests.message_search_support import keys, workspace
from tests.personas import globex, load

Blocks = list[tuple[int, list[str]]]


async def _kept(db: asyncpg.Connection, workspace_id: int) -> Blocks:
    rows = await db.fetch(
        "select block, tsvector_to_array(tsv) as lexemes from search_blocks"
        " where workspace_id = $1 order by block",
        workspace_id,
    )
    return [(r["block"], sorted(r["lexemes"])) for r in rows]


async def _summarized(db: asyncpg.Connection, workspace_id: int) -> Blocks:
    """The same blocks summarized afresh from the workspace's documents, BLOCK to a block."""
    # A block whose documents have no lexeme at all ("?!") has a row with an empty vector.
    rows = await db.fetch(
        "select d.global_seq / $2 as block,"
        " coalesce(array_agg(distinct l.lexeme) filter (where l.lexeme is not null), '{}')"
        " as lexemes"
        " from search_documents d"
        " left join lateral unnest(tsvector_to_array(d.tsv)) as l(lexeme) on true"
        " where d.workspace_id = $1 group by 1 order by 1",
        workspace_id,
        BLOCK,
    )
    return [(r["block"], sorted(r["lexemes"])) for r in rows]


async def _workspace(db: asyncpg.Connection, key: str) -> int:
    found: int = await db.fetchval("select workspace_id from workspace_keys where key = $1", key)
    return found


async def _holding(db: asyncpg.Connection, lexeme: str) -> int:
    """Block rows, of any workspace, that hold the lexeme."""
    found: int = await db.fetchval(
        "select count(*) from search_blocks where tsv @@ $1::tsquery", f"'{lexeme}'"
    )
    return found


async def test_an_import_writes_the_blocks_the_row_triggers_would_have(
    db: asyncpg.Connection,
) -> None:
    fixture = bulk_channel(history_acme(), 40)
    fixture["messages"] += [
        {"key": f"blk{i}", "scope": "random", "author": "alice", "at": f"2026-03-04T09:0{i}:00Z",
         "body": body}
        for i, body in enumerate(INDEXED_BODIES)
    ]  # fmt: skip
    await import_fixture(db, fixture, io.StringIO())
    await import_fixture(db, globex(), io.StringIO())
    for key in ("acme", "globex"):
        ws = await _workspace(db, key)
        imported = await _kept(db, ws)
        assert imported, key
        assert imported == await _summarized(db, ws), key
        # The same documents written again one row trigger at a time give back the same rows;
        # deleting them all leaves no block.
        async with db.transaction():
            await db.execute(
                "create temporary table saved on commit drop as"
                " select * from search_documents where workspace_id = $1",
                ws,
            )
            await db.execute("delete from search_documents where workspace_id = $1", ws)
            assert await _kept(db, ws) == [], key
            await db.execute("insert into search_documents select * from saved")
            assert await _kept(db, ws) == imported, key


async def test_live_posts_edits_deletes_and_erasure_keep_every_block_exact(
    client: GraphQLClient, db: asyncpg.Connection, history_personas: None
) -> None:
    acme, other = await _workspace(db, "acme"), await _workspace(db, "globex")
    untouched = await _kept(db, other)
    connector = Connector(client, await issue_connector_token(db, "acme"))

    async def exact(step: str) -> None:
        assert await _kept(db, acme) == await _summarized(db, acme), step
        assert await _kept(db, other) == untouched, step

    async def exact_and_forgotten(step: str) -> None:
        await exact(step)
        if step == "posts":
            assert await _holding(db, "zanzibarquux") == 1
        elif step != "import":
            # Edited-away words are in no summary (a block is summarized again from its
            # documents).
            assert await _holding(db, "zanzibarquux") == 0, step
            assert await _holding(db, "err_payment_declined") == 0, step

    await each_document_write(connector, exact_and_forgotten)


async def test_several_words_find_what_live_changes_wrote_and_not_what_they_removed(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    # Both pairs are in a third of the documents: common enough that the page is found by
    # walking the newest blocks, not by fetching every match through the text index.
    messages = []
    for i in range(300):
        body = ("alpha beta", "alpha delta", "filler words")[i % 3]
        messages.append((f"m{i}", "room", "ann", f"{body} {i}"))
    await load(db, workspace(messages))
    ann = await issue_token("member", "lab", "ann")
    connector = Connector(client, await issue_connector_token(db, "lab"))

    assert await keys(client, ann, "alpha beta", first=1) == ["m297"]
    # A block of its own but for chatter: its summary has the words only if the post added them.
    at = "2026-02-01T00:00:00Z"
    await connector.apply(*[post(f"c{i}", "room", "ben", "chatter", at=at) for i in range(BLOCK)])
    await connector.apply(post("fresh", "room", "ann", "alpha beta fresh", at=at))
    assert await keys(client, ann, "alpha beta", first=1) == ["fresh"]
    await connector.apply(edit("fresh", "alpha delta fresh"))
    assert await keys(client, ann, "alpha beta", first=1) == ["m297"]
    assert await keys(client, ann, "alpha delta", first=1) == ["fresh"]
    await connector.apply(delete("fresh"))
    assert await keys(client, ann, "alpha delta", first=1) == ["m298"]
    # The walk read blocks: the text index alone would have found the same pages.
    ws = await _workspace(db, "lab")
    assert await _kept(db, ws) == await _summarized(db, ws)


async def test_every_lexeme_of_a_query_is_what_a_block_must_hold(db: asyncpg.Connection) -> None:
    """recall_every_lexeme: a phrase's lexemes become an AND (a block's vector has no positions,
    so it matches no phrase), lexemes that need quoting read back unchanged, a prefix stays a
    prefix; and a block holding them all matches, one missing any does not."""

    async def every(query: str) -> str | None:
        found: str | None = await db.fetchval(
            "select recall_every_lexeme($1::tsquery)::text", query
        )
        return found

    assert await every("'cach' <-> 'stamped' & 'orbit'") == "'cach' & 'stamped' & 'orbit'"
    assert await every("'cach' <2> 'stamped'") == "'cach' & 'stamped'"
    quoted = "'it''s' <-> 'a\\\\b' & 'billing.retry_interval'"
    assert await every(quoted) == "'it''s' & 'a\\\\b' & 'billing.retry_interval'"
    assert await every("'pre':* & 'orbit'") == "'pre':* & 'orbit'"
    assert await db.fetchval("select recall_every_lexeme(null)") is None
    holds = "select array_to_tsvector($1::text[]) @@ recall_every_lexeme($2::tsquery)"
    phrase = "'cach' <-> 'stamped'"
    assert await db.fetchval(holds, ["stamped", "x", "cach"], phrase) is True
    assert await db.fetchval(holds, ["stamped", "x"], phrase) is False
    assert await db.fetchval(holds, ["prefix", "orbit"], "'pre':* & 'orbit'") is True
