"""A live identity link opens exactly one path (docs/identity.md); live push follows it while it
lives and takes back what it opened when it is revoked."""

from __future__ import annotations

from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from tests.changes_support import post
from tests.identity_support import link, linked_acme, revoke
from tests.live_support import SEARCH_UPDATES, connector, http_client, live_connection, live_server
from tests.personas import load

SEARCH = '{ messageSearch(query: "fresh", first: 50) { edges { node { key } } } }'


async def test_a_revoked_link_removes_what_it_opened_and_opens_nothing_more(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load(db, linked_acme())
    alice = await issue_token("member", "acme", "alice")
    alice_web = await issue_token("member", "acme", "alice-web")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn, RECALL_LIVE_POLL_INTERVAL=0.5) as base,
        http_client(base) as http,
        connector(base, token) as c,
    ):
        made = await link(http, alice, alice_web)
        async with live_connection(base, alice_web) as live:
            sub = await live.subscribe(SEARCH_UPDATES, {"query": "fresh"})
            await c.apply(
                post("f1", "dm-alice", "alice", "fresh zebra in alice's dm"),
                post("f2", "pair", "alice", "fresh zebra for two readers"),
            )
            # The one path a link opens: alice's single-reader DM; never a pair's channel.
            added = await sub.next()
            assert added["edge"]["node"]["key"] == "f1"
            assert await sub.quiet(1) == []
            await revoke(http, alice, made["id"])
            removed = await sub.next()
            assert removed["kind"] == "REMOVED"
            assert removed["removedId"] == added["edge"]["node"]["id"]
            await c.apply(post("f3", "dm-alice", "alice", "fresh zebra after the revocation"))
            assert await sub.quiet() == []
        data = await http.gql(SEARCH, token=alice_web)
        assert data["messageSearch"]["edges"] == []
