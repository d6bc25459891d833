"""The cached lineage summary (migrations/004): it may be missing, never stale.

Eligibility reads a message's cached lineage summary instead of walking its provenance per row;
these tests pin that the cache equals the live walk and that every write that could change a
lineage forgets the summaries it touches.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from app.data.eligibility import lineage_summary
from app.data.lineage import cache_summaries
from app.request.ids import encode_id
from tests.client import GraphQLClient
from tests.personas import load_personas
from tests.rows import one

NODE = "query($id: ID!) { node(id: $id) { ... on Message { key } } }"


async def _id(db: asyncpg.Connection, table: str, key: str) -> int:
    pk: int = await db.fetchval(f"select id from {table} where key = $1", key)
    return pk


async def _reads(client: GraphQLClient, token: str, message_id: int) -> bool:
    data = await client.gql(NODE, {"id": encode_id("Message", message_id)}, token=token)
    return data["node"] is not None


async def _public_chain(db: asyncpg.Connection) -> tuple[int, int]:
    """P (in #general, built from g1) and Q (built from P), both cached."""
    ws = await db.fetchval("select id from workspaces where key = 'acme'")
    general, helper = await _id(db, "scopes", "general"), await _id(db, "actors", "helper")
    audience = await db.fetchval("select origin_audience_id from scopes where id = $1", general)
    ids: list[int] = []
    for n, source in ((1, await _id(db, "messages", "g1")), (2, None)):
        source = source if source is not None else ids[-1]
        pk = await db.fetchval(
            """
            insert into messages (workspace_id, key, scope_id, seq, global_seq, author_id, body,
                                  created_at, audience_id, has_provenance)
            values ($1, $2, $3, 900 + $4, 900 + $4, $5, 'chain reply', now(), $6, true)
            returning id
            """,
            ws,
            f"chain-{n}",
            general,
            n,
            helper,
            audience,
        )
        await db.execute(
            "insert into message_sources (workspace_id, message_id, source_message_id)"
            " values ($1, $2, $3)",
            ws,
            pk,
            source,
        )
        ids.append(pk)
    await cache_summaries(db, ws, ids)
    return ids[0], ids[1]


async def test_imported_replies_are_cached_exactly_as_the_live_walk(db: asyncpg.Connection) -> None:
    await load_personas(db)
    rows = await db.fetch(
        "select workspace_id, id, key, lineage_audience_ids as cached, lineage_denied as denied"
        " from messages where has_provenance"
    )
    assert {r["key"] for r in rows} >= {"da2", "g3", "g4"}
    for r in rows:
        # The live walk, one statement per message.
        live = await db.fetchrow(
            f"select * from {lineage_summary('array[$2::bigint]')} s",
            r["workspace_id"],
            r["id"],
        )
        assert live is not None
        assert sorted(r["cached"]) == sorted(live["audience_ids"]), r
        assert r["denied"] == live["denied"], r


async def test_a_new_source_forgets_the_summaries_built_on_it(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    bob = await issue_token("member", "acme", "bob")
    p, q = await _public_chain(db)
    assert await _reads(client, bob, p) and await _reads(client, bob, q)
    # P turns out to be built from #secret too: neither P nor Q may reach bob any more.
    ws, s1 = one(await db.fetchrow("select workspace_id, id from messages where key = 's1'"))
    await db.execute(
        "insert into message_sources (workspace_id, message_id, source_message_id)"
        " values ($1, $2, $3)",
        ws,
        p,
        s1,
    )
    cached = await db.fetch(
        "select lineage_audience_ids from messages where id = any($1::bigint[])", [p, q]
    )
    assert [r["lineage_audience_ids"] for r in cached] == [None, None]
    assert not await _reads(client, bob, p)
    assert not await _reads(client, bob, q)


async def test_an_audience_change_forgets_the_summaries_that_included_it(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    bob = await issue_token("member", "acme", "bob")
    g4 = await _id(db, "messages", "g4")  # built from alice's private memory
    assert not await _reads(client, bob, g4)
    # The memory is re-scoped to the workspace: g4 must follow the new audience, not a cache.
    general = await db.fetchval("select origin_audience_id from scopes where key = 'general'")
    await db.execute("update memories set audience_id = $1 where key = 'mem-alice'", general)
    assert await db.fetchval("select lineage_audience_ids from messages where id = $1", g4) is None
    assert await _reads(client, bob, g4)
