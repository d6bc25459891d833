"""messageSearch's and Scope.messages' `liveEvent` over GraphQL-over-HTTP: the live log's
position read before the page, from which a subscription misses nothing committed after the
page was read (the Messages tab's gap between its first page and its subscription), and which
is only a position (the same for every reader of the workspace, whatever they search)."""

from __future__ import annotations

import asyncpg

from app.request.ids import encode_id
from tests.changes_support import post
from tests.live.conftest import Acme
from tests.live_support import (
    SCOPE_MESSAGES,
    SEARCH_UPDATES,
    connector,
    http_client,
    live_connection,
)

SEARCH = """query($q: String!) {
  messageSearch(query: $q, first: 50) { liveEvent edges { node { key } } }
}"""
# The same field through a fragment, as a client may ask for it.
SEARCH_FRAGMENT = """query($q: String!) {
  messageSearch(query: $q) { ...Live }
}
fragment Live on MessageSearchConnection { liveEvent }"""
TRANSCRIPT = """query($scope: ID!) {
  node(id: $scope) { ... on Scope { messages(last: 50) { liveEvent edges { node { key } } } } }
}"""


async def _scope_id(db: asyncpg.Connection, key: str) -> str:
    pk = await db.fetchval("select id from scopes where key = $1", key)
    return encode_id("Scope", pk)


async def test_a_subscription_from_a_pages_live_event_gets_what_was_posted_after_it(
    acme: Acme,
) -> None:
    async with (
        http_client(acme.base) as http,
        connector(acme.base, acme.connector) as c,
    ):
        await c.apply(post("z0", "general", "bob", "a zebra before the search"))
        page = (await http.gql(SEARCH, {"q": "zebra"}, token=acme.tokens["alice"]))["messageSearch"]
        assert [e["node"]["key"] for e in page["edges"]] == ["z0"]
        # Posted after the page was read and before the subscription started: the gap.
        await c.apply(
            post("z1", "general", "bob", "a zebra after the search"),
            post("z-dm-bob", "dm-bob", "bob", "a zebra in bob's DM"),
        )
        async with live_connection(acme.base, acme.tokens["alice"]) as live:
            sub = await live.subscribe(
                SEARCH_UPDATES, {"query": "zebra", "after": page["liveEvent"]}
            )
            added = await sub.next()
            assert (added["kind"], added["edge"]["node"]["key"]) == ("ADDED", "z1")
            assert added["event"] > page["liveEvent"]
            # Neither what the page showed already nor another person's DM.
            assert await sub.quiet() == []


async def test_a_transcripts_live_event_resumes_its_conversation(
    acme: Acme, db: asyncpg.Connection
) -> None:
    general = await _scope_id(db, "general")
    async with (
        http_client(acme.base) as http,
        connector(acme.base, acme.connector) as c,
    ):
        data = await http.gql(TRANSCRIPT, {"scope": general}, token=acme.tokens["alice"])
        messages = data["node"]["messages"]
        await c.apply(
            post("g-new", "general", "bob", "posted after the page"),
            post("s-new", "secret", "alice", "posted elsewhere"),
        )
        async with live_connection(acme.base, acme.tokens["alice"]) as live:
            sub = await live.subscribe(
                SCOPE_MESSAGES, {"scopeId": general, "after": messages["liveEvent"]}
            )
            added = await sub.next()
            assert (added["kind"], added["message"]["key"]) == ("ADDED", "g-new")
            assert await sub.quiet() == []


async def test_live_event_is_only_a_position_the_same_for_every_reader(
    acme: Acme, db: asyncpg.Connection
) -> None:
    general = await _scope_id(db, "general")
    async with (
        http_client(acme.base) as http,
        connector(acme.base, acme.connector) as c,
    ):
        # A message only alice may read moves the log for everyone: carol's position says
        # nothing about what alice can read that her own does not.
        await c.apply(post("s1x", "secret", "alice", "a zebra in secret"))
        alice = (await http.gql(SEARCH, {"q": "zebra"}, token=acme.tokens["alice"]))[
            "messageSearch"
        ]
        carol = (await http.gql(SEARCH, {"q": "nothing at all"}, token=acme.tokens["carol"]))[
            "messageSearch"
        ]
        through_fragment = (
            await http.gql(SEARCH_FRAGMENT, {"q": "zebra"}, token=acme.tokens["carol"])
        )["messageSearch"]
        assert alice["liveEvent"] == carol["liveEvent"] == through_fragment["liveEvent"]
        workspace = await db.fetchval("select id from workspaces where key = 'acme'")
        head = await db.fetchval(
            "select position from live_positions where workspace_id = $1", workspace
        )
        assert alice["liveEvent"] == f"{head:016x}-{workspace}"
        # Other tokens cannot subscribe: their transcripts carry no position.
        turnless = await http.post(TRANSCRIPT, {"scope": general}, token=acme.tokens["helper"])
        assert turnless.status == 200
        assert (
            turnless.data is None
            or (turnless.data["node"] or {}).get("messages") is None
            or (turnless.data["node"]["messages"]["liveEvent"] is None)
        )
