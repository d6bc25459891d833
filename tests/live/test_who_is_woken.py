"""A commit wakes only the subscribers it may concern (app.live.feed, app.data.live_sift). Posts
that meet no open search's words, or lie in a conversation nobody watches, cost the process one
read of the log and one sift — no token read, no admission, no subscriber woken — and what does
concern a subscriber still arrives, admitted for its own reader."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from app.observability.metrics import LIVE_READS
from app.request.ids import encode_id
from tests.changes_support import post
from tests.live_support import (
    SCOPE_MESSAGES,
    SEARCH_UPDATES,
    connector,
    live_connection,
    live_server,
)
from tests.personas import load_personas

READS = ("log", "sift", "token", "admission")


def _reads() -> dict[str, float]:
    return {what: LIVE_READS.labels(what)._value.get() for what in READS}


def _spent(before: dict[str, float]) -> dict[str, float]:
    now = _reads()
    return {what: now[what] - before[what] for what in READS}


async def _read_once(before: dict[str, float]) -> dict[str, float]:
    """What the commit cost once the process has read it (and a moment for anyone woken)."""
    for _ in range(200):
        if _spent(before)["log"] >= 1:
            break
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    return _spent(before)


async def test_posts_no_open_search_matches_wake_no_one(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    carol = await issue_token("member", "acme", "carol")
    general = encode_id("Scope", await db.fetchval("select id from scopes where key = 'general'"))
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn) as base,
        live_connection(base, alice) as as_alice,
        live_connection(base, carol) as as_carol,
        connector(base, token) as c,
    ):
        searches = [
            await live.subscribe(SEARCH_UPDATES, {"query": query})
            for live in (as_alice, as_carol)
            for query in ("zebra", "okapi")
        ]
        watching = await as_carol.subscribe(SCOPE_MESSAGES, {"scopeId": general})
        for sub in [*searches, watching]:  # every subscription past its first round
            assert await sub.quiet(0.2) == []

        before = _reads()
        await c.apply(
            post("woken-g1", "secret", "alice", "a giraffe in secret"),
            post("woken-g2", "secret", "alice", "another giraffe"),
        )
        # One read of the log and one sift for the five subscriptions; nobody woken.
        assert await _read_once(before) == {"log": 1, "sift": 1, "token": 0, "admission": 0}

        # What does concern them still arrives, each admitted by its own reader: a post the
        # words match wakes both zebra searches, and only alice's gets it.
        before = _reads()
        await c.apply(post("woken-z1", "secret", "alice", "a zebra in secret"))
        assert (await searches[0].next())["edge"]["node"]["key"] == "woken-z1"
        for sub in [*searches, watching]:
            assert await sub.quiet(0.2) == []
        assert _spent(before) == {"log": 1, "sift": 1, "token": 2, "admission": 2}

        before = _reads()
        await c.apply(post("woken-o1", "general", "bob", "an okapi in general"))
        assert (await searches[1].next())["edge"]["node"]["key"] == "woken-o1"
        assert (await searches[3].next())["edge"]["node"]["key"] == "woken-o1"
        assert (await watching.next())["message"]["key"] == "woken-o1"
        for sub in [*searches, watching]:
            assert await sub.quiet(0.2) == []
        # The okapi searches and carol's conversation; not the zebra searches.
        assert _spent(before) == {"log": 1, "sift": 1, "token": 2, "admission": 3}
