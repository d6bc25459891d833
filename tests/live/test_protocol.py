"""The subscription protocol: authentication, token kinds, resuming, limits and slow clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import asyncpg
import pytest

from app.data.tokens import issue_connector_token
from tests.changes_support import post
from tests.live.conftest import Acme
from tests.live_support import (
    SCOPE_MESSAGES,
    SEARCH_UPDATES,
    connector,
    http_client,
    live_connection,
    live_server,
    refused,
)
from tests.personas import load_personas


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"Authorization": "Bearer rcm_w1.nothing"},
        {"Authorization": "Basic abc"},
    ],
    ids=["missing", "unknown", "not-bearer"],
)
async def test_a_bad_or_missing_token_closes_the_socket_with_4401(
    acme: Acme, payload: dict[str, str]
) -> None:
    code, _reason = await refused(acme.base, payload)
    assert code == 4401


async def test_an_agent_or_connector_token_is_forbidden(acme: Acme) -> None:
    for token in (acme.tokens["helper"], acme.connector):
        async with live_connection(acme.base, token) as live:
            sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"}, listening=False)
            assert await sub.error_codes() == ["FORBIDDEN"]
            scope = await live.subscribe(SCOPE_MESSAGES, {"scopeId": "U2NvcGU6MQ"}, listening=False)
            assert await scope.error_codes() == ["FORBIDDEN"]


async def test_resuming_after_an_event_has_no_gaps_and_no_duplicates(acme: Acme) -> None:
    async with connector(acme.base, acme.connector) as c:
        async with live_connection(acme.base, acme.tokens["alice"]) as live:
            sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            await c.apply(post("z1", "general", "bob", "zebra one"))
            await c.apply(post("z2", "general", "bob", "zebra two"))
            first = [await sub.next(), await sub.next()]
        # Disconnected: what is posted meanwhile waits in the log.
        await c.apply(post("z3", "general", "bob", "zebra three"))
        await c.apply(
            post("x4", "general", "bob", "no match"), post("z5", "secret", "alice", "zebra five")
        )
        async with live_connection(acme.base, acme.tokens["alice"]) as live:
            sub = await live.subscribe(
                SEARCH_UPDATES, {"query": "zebra", "after": first[0]["event"]}
            )
            again = [await sub.next() for _ in range(3)]
            assert await sub.quiet() == []
    keys = [u["edge"]["node"]["key"] for u in first[:1] + again]
    assert keys == ["z1", "z2", "z3", "z5"]
    events = [u["event"] for u in first[:1] + again]
    assert again[0]["event"] == first[1]["event"]
    assert len(set(events)) == 4


async def test_an_event_older_than_the_log_keeps_is_an_invalid_cursor(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn, RECALL_LIVE_RETENTION=0.5, RECALL_LIVE_POLL_INTERVAL=0.5) as base,
        connector(base, token) as c,
        live_connection(base, alice) as live,
    ):
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        await c.apply(post("z0", "general", "bob", "zebra zero"))
        await c.apply(post("z1", "general", "bob", "zebra one"))
        old = (await sub.next())["event"]
        await sub.next()
        # Both pruned meanwhile (every tenth of the retention): the events after `old`
        # are no longer all there.
        await asyncio.sleep(1.5)
        await c.apply(post("z2", "general", "bob", "zebra two"))
        await sub.next()
        resumed = await live.subscribe(
            SEARCH_UPDATES, {"query": "zebra", "after": old}, listening=False
        )
        assert await resumed.error_codes() == ["INVALID_CURSOR"]
        forged = await live.subscribe(
            SEARCH_UPDATES, {"query": "zebra", "after": "abc"}, listening=False
        )
        assert await forged.error_codes() == ["INVALID_CURSOR"]


async def test_subscriptions_per_token_are_limited(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    async with (
        live_server(dsn, RECALL_LIVE_MAX_PER_TOKEN=1) as base,
        live_connection(base, alice) as one,
        live_connection(base, alice) as two,
    ):
        first = await one.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        assert await first.quiet(0.5) == []
        second = await two.subscribe(SEARCH_UPDATES, {"query": "zebra"}, listening=False)
        assert await second.error_codes() == ["LIMIT_EXCEEDED"]
        # On the same connection too, with the same code.
        third = await one.subscribe(SEARCH_UPDATES, {"query": "zebra"}, listening=False)
        assert await third.error_codes() == ["LIMIT_EXCEEDED"]


async def test_a_subscriber_too_far_behind_is_closed_with_4008(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn, RECALL_LIVE_MAX_BACKLOG=3) as base,
        connector(base, token) as c,
        live_connection(base, alice) as live,
    ):
        await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        await c.apply(*(post(f"z{i}", "general", "bob", f"zebra {i}") for i in range(5)))
        await asyncio.wait_for(live.ws.wait_closed(), 10)
        assert live.close_code == 4008


async def test_resuming_further_behind_than_a_subscriber_may_fall_is_an_invalid_cursor(
    dsn: str, db: asyncpg.Connection, issue_token: Any
) -> None:
    """Started, it would be closed as too slow (4008) at once, and a client that resumes after
    a 4008 (graphql-ws, the tab) would be closed again for ever: it is told to search again."""
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    token = await issue_connector_token(db, "acme")
    async with (
        live_server(dsn, RECALL_LIVE_MAX_BACKLOG=3) as base,
        connector(base, token) as c,
    ):
        async with live_connection(base, alice) as live:
            sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            await c.apply(post("z0", "general", "bob", "zebra zero"))
            seen = (await sub.next())["event"]
        await c.apply(*(post(f"z{i}", "general", "bob", f"zebra {i}") for i in range(1, 5)))
        async with live_connection(base, alice) as live:
            resumed = await live.subscribe(
                SEARCH_UPDATES, {"query": "zebra", "after": seen}, listening=False
            )
            assert await resumed.error_codes() == ["INVALID_CURSOR"]
            # The connection is not closed: a new subscription without `after` starts.
            fresh = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
            await c.apply(post("z9", "general", "bob", "zebra nine"))
            assert (await fresh.next())["edge"]["node"]["key"] == "z9"
            assert live.close_code is None


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        (SCOPE_MESSAGES, {"scopeId": "garbage!!"}),  # an ID the scalar refuses
        (SCOPE_MESSAGES, {}),  # a required variable missing
        (SEARCH_UPDATES, {"query": 12}),  # a variable of the wrong type
    ],
    ids=["malformed-id", "missing", "wrong-type"],
)
async def test_a_variable_the_schema_refuses_is_bad_user_input(
    acme: Acme, query: str, variables: dict[str, Any]
) -> None:
    """As over HTTP: the client sent something malformed, never INTERNAL_SERVER_ERROR."""
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(query, variables, listening=False)
        message = await sub.message()
        assert message["type"] == "error", message
        assert [e["extensions"]["code"] for e in message["payload"]] == ["BAD_USER_INPUT"]
        assert "Internal server error" not in json.dumps(message)


async def test_an_operator_value_a_search_refuses_is_refused_at_once(acme: Acme) -> None:
    """messageSearchUpdates reads its operators when it starts, as messageSearch does, not at
    the first post that wakes it."""
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        for query in ("zebra since:notadate", "zebra on:2026-13-45"):
            sub = await live.subscribe(SEARCH_UPDATES, {"query": query}, listening=False)
            assert await sub.error_codes(seconds=5) == ["BAD_USER_INPUT"], query


@pytest.mark.parametrize("frame", ["[]", '"connection_init"', "{not json", "[" * 100_000])
async def test_a_frame_that_is_not_a_json_object_closes_the_socket_with_4400(
    acme: Acme, frame: str
) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        await live.ws.send(frame)
        await asyncio.wait_for(live.ws.wait_closed(), 10)
        assert live.close_code == 4400


async def test_scope_messages_sends_one_readable_conversation(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        general = (await _scope_ids(acme))["general"]
        sub = await live.subscribe(SCOPE_MESSAGES, {"scopeId": general})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(
                post("m1", "general", "bob", "hello general"),
                post("m2", "secret", "alice", "not this conversation"),
            )
            added = await sub.next()
            await c.apply({"editMessage": {"key": "m1", "body": "hello, general"}})
            edited = await sub.next()
            await c.apply({"deleteMessage": {"key": "m1"}})
            removed = await sub.next()
        assert added["kind"] == "ADDED" and added["message"]["key"] == "m1"
        assert edited["kind"] == "EDITED" and edited["message"]["body"] == "hello, general"
        assert removed == {
            "event": removed["event"],
            "kind": "REMOVED",
            "removedId": added["message"]["id"],
            "message": None,
        }
        assert await sub.quiet() == []


async def test_scope_messages_of_a_conversation_the_viewer_may_not_read_is_refused(
    acme: Acme,
) -> None:
    ids = await _scope_ids(acme)
    async with live_connection(acme.base, acme.tokens["carol"]) as live:
        sub = await live.subscribe(SCOPE_MESSAGES, {"scopeId": ids["secret"]}, listening=False)
        assert await sub.error_codes() == ["BAD_USER_INPUT"]
        sub = await live.subscribe(SCOPE_MESSAGES, {"scopeId": "U2NvcGU6OTk5OTk5"}, listening=False)
        assert await sub.error_codes() == ["BAD_USER_INPUT"]


async def _scope_ids(acme: Acme) -> dict[str, str]:
    from tests.live_support import http_client

    async with http_client(acme.base) as http:
        data = await http.gql(
            "{ viewer { workspace { scopes { id key } } } }", token=acme.tokens["alice"]
        )
    return {s["key"]: s["id"] for s in data["viewer"]["workspace"]["scopes"]}


async def test_a_subscription_is_limited_like_a_query(acme: Acme) -> None:
    parents = "parent { " * 12 + "key" + " }" * 12
    deep = (
        'subscription { messageSearchUpdates(query: "zebra") {'
        f" edge {{ node {{ scope {{ {parents} }} }} }} }} }}"
    )
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(deep, {}, listening=False)
        assert await sub.error_codes() == ["QUERY_TOO_COMPLEX"]


async def test_a_subscription_over_http_is_refused_cleanly(acme: Acme) -> None:
    async with http_client(acme.base) as http:
        result = await http.post(
            'subscription { messageSearchUpdates(query: "zebra") { event } }',
            token=acme.tokens["alice"],
        )
    assert result.status < 500, result.body
    assert result.errors, result.body


async def test_a_long_body_loads_through_the_batch_s_own_session(acme: Acme) -> None:
    """A body longer than a hit's window is not in the admission statement's row: Message.body
    loads it, authorized again, with the session made for that wake-up."""
    long = "zebra " + "x" * 5000
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        general = (await _scope_ids(acme))["general"]
        sub = await live.subscribe(SCOPE_MESSAGES, {"scopeId": general})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("long", "general", "bob", long))
        added = await sub.next()
    assert added["message"]["body"] == long
