"""Subscribers share the database with requests, not the other way round: a commit wakes every
subscriber of the workspace at once, and they read in turn on part of the pool
(app.live.hub.Hub.database_turn), so searches and the connector's batches sent meanwhile keep
a connection and never time out waiting for one."""

from __future__ import annotations

from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from tests.changes_support import post
from tests.live_support import (
    SEARCH_UPDATES,
    Subscription,
    connector,
    http_client,
    live_connection,
    live_server,
)
from tests.personas import load_personas

SUBSCRIPTIONS = 40
# Posts per commit: each subscriber's wake-up judges them all in one statement.
POSTS = 200
SEARCH = '{ messageSearch(query: "zebra", first: 5) { edges { node { key } } } }'


async def test_a_wake_up_of_many_subscribers_leaves_requests_a_connection(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(
            dsn,
            RECALL_POOL_MAX=2,
            RECALL_DB_ACQUIRE_TIMEOUT=0.1,
            RECALL_LIVE_MAX_PER_TOKEN=SUBSCRIPTIONS,
        ) as base,
        live_connection(base, alice) as live,
        connector(base, token) as c,
        http_client(base) as http,
    ):
        subs: list[Subscription] = [
            await live.subscribe(SEARCH_UPDATES, {"query": "zebra"}) for _ in range(SUBSCRIPTIONS)
        ]
        failures: list[Any] = []

        async def search() -> None:
            for _ in range(10):
                answer = await http.post(SEARCH, token=alice)
                if answer.status != 200 or answer.errors:
                    failures.append(answer.body)

        posted = []
        for round_ in range(2):
            keys = [f"z{round_}-{i:03d}" for i in range(POSTS)]
            await c.apply(*(post(k, "general", "bob", f"a zebra, {k}") for k in keys))
            posted += keys
            await search()  # while the subscribers judge the commit
        assert failures == []
        for sub in subs:  # and every subscriber still got every post
            assert [(await sub.next(30))["edge"]["node"]["key"] for _ in posted] == posted
