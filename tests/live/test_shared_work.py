"""A commit costs live push statements per process, token and search, not per subscription
(app.live.feed): the log is read once for every subscriber of the workspace, the token once for
each token's subscriptions, and a search admitted once for the subscriptions of the same
reader (one person through any number of tokens) and query. Never across readers: two
people's subscriptions of the same query are admitted apart, each by their own reader."""

from __future__ import annotations

from typing import Any

import asyncpg

from app.data.tokens import issue_connector_token
from app.observability.metrics import LIVE_READS
from tests.changes_support import post
from tests.live_support import SEARCH_UPDATES, connector, live_connection, live_server
from tests.personas import load_personas

PER_PERSON = 6


def _reads() -> dict[str, float]:
    return {what: LIVE_READS.labels(what)._value.get() for what in ("log", "token", "admission")}


async def test_one_commit_costs_a_log_read_and_a_token_read_and_admission_per_reader(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    carol = await issue_token("member", "acme", "carol")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn, RECALL_LIVE_MAX_PER_TOKEN=PER_PERSON) as base,
        live_connection(base, alice) as as_alice,
        live_connection(base, carol) as as_carol,
        connector(base, token) as c,
    ):
        subs = {
            who: [
                await live.subscribe(SEARCH_UPDATES, {"query": "zebra"}) for _ in range(PER_PERSON)
            ]
            for who, live in (("alice", as_alice), ("carol", as_carol))
        }
        for who_subs in subs.values():  # every subscription past its first round
            for sub in who_subs:
                assert await sub.quiet(0.2) == []
        before = _reads()
        await c.apply(
            post("z-secret", "secret", "alice", "a zebra in secret"),
            post("z-general", "general", "bob", "a zebra in general"),
        )
        got = {
            who: [sorted([(await s.next())["edge"]["node"]["key"] for _ in range(n)]) for s in ss]
            for who, ss, n in (("alice", subs["alice"], 2), ("carol", subs["carol"], 1))
        }
        after = _reads()
    # Each reader's subscriptions got exactly what their own reader may see.
    assert got["alice"] == [["z-general", "z-secret"]] * PER_PERSON
    assert got["carol"] == [["z-general"]] * PER_PERSON
    spent = {what: after[what] - before[what] for what in after}
    # One read of the log for twelve subscriptions; a token read and an admission per person.
    assert spent == {"log": 1, "token": 2, "admission": 2}, spent


async def test_one_persons_tokens_share_an_admission_and_each_token_is_read(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    # Alice in two tabs (a token each), Carol in one.
    tabs = [await issue_token("member", "acme", "alice") for _ in range(2)]
    carol = await issue_token("member", "acme", "carol")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn) as base,
        live_connection(base, tabs[0]) as first_tab,
        live_connection(base, tabs[1]) as second_tab,
        live_connection(base, carol) as as_carol,
        connector(base, token) as c,
    ):
        subs = [
            await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            for live in (first_tab, second_tab, as_carol)
            for _ in range(2)
        ]
        for sub in subs:  # every subscription past its first round
            assert await sub.quiet(0.2) == []
        before = _reads()
        await c.apply(
            post("z-secret", "secret", "alice", "a zebra in secret"),
            post("z-general", "general", "bob", "a zebra in general"),
        )
        got = [
            sorted([(await s.next())["edge"]["node"]["key"] for _ in range(n)])
            for s, n in zip(subs, (2, 2, 2, 2, 1, 1), strict=True)
        ]
        after = _reads()
    assert got == [["z-general", "z-secret"]] * 4 + [["z-general"]] * 2
    spent = {what: after[what] - before[what] for what in after}
    # Every token is read (any of them may have been revoked); Alice's two tabs are one
    # reader, admitted once, and Carol's is admitted apart.
    assert spent == {"log": 1, "token": 3, "admission": 2}, spent
