"""messageSearchUpdates through a real WebSocket client against a real server: a viewer
receives exactly the new messages a fresh messageSearch shows them, and never one it does not."""

from __future__ import annotations

import asyncpg

from tests.changes_support import delete, edit, keyed, post, remove_members
from tests.live.conftest import Acme
from tests.live_support import SEARCH_UPDATES, connector, http_client, live_connection

SEARCH = '{ messageSearch(query: "zebra", first: 50) { edges { node { key } } } }'


async def test_a_viewer_receives_exactly_the_new_hits_a_fresh_search_shows(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(
                post("z-general", "general", "bob", "a zebra in general"),
                post("z-dm-bob", "dm-bob", "bob", "a zebra in bob's DM"),
                post("z-secret", "secret", "alice", "a zebra in secret"),
                post("z-other", "general", "bob", "no stripes here"),
            )
        got = [await sub.next(), await sub.next()]
        assert [u["kind"] for u in got] == ["ADDED", "ADDED"]
        keys = {u["edge"]["node"]["key"] for u in got}
        assert await sub.quiet() == []
        async with http_client(acme.base) as http:
            data = await http.gql(SEARCH, token=acme.tokens["alice"])
        assert (
            keys
            == {e["node"]["key"] for e in data["messageSearch"]["edges"]}
            == {
                "z-general",
                "z-secret",
            }
        )
        assert got[0]["edge"]["highlights"]


async def test_an_edit_is_edited_and_an_edit_that_stops_matching_is_removed(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z1", "general", "bob", "a zebra"))
            added = await sub.next()
            await c.apply(edit("z1", "a zebra, edited"))
            edited = await sub.next()
            await c.apply(edit("z1", "a horse now"))
            removed = await sub.next()
        assert (added["kind"], edited["kind"], removed["kind"]) == ("ADDED", "EDITED", "REMOVED")
        assert edited["edge"]["node"]["body"] == "a zebra, edited"
        assert removed["removedId"] == added["edge"]["node"]["id"] and removed["edge"] is None
        assert added["event"] < edited["event"] < removed["event"]


async def test_a_deleted_message_is_removed_for_its_readers_only(acme: Acme) -> None:
    async with (
        live_connection(acme.base, acme.tokens["alice"]) as alice,
        live_connection(acme.base, acme.tokens["carol"]) as carol,
    ):
        as_alice = await alice.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        as_carol = await carol.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z-secret", "secret", "alice", "a zebra in secret"))
            added = await as_alice.next()
            await c.apply(delete("z-secret"))
        removed = await as_alice.next()
        assert removed == {**removed, "kind": "REMOVED", "removedId": added["edge"]["node"]["id"]}
        # carol never could read the secret channel: neither its post nor its deletion.
        assert await as_carol.quiet() == []


async def test_a_channel_the_viewer_left_sends_nothing_new(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z-before", "secret", "helper", "a zebra before"))
            before = await sub.next()
            await c.apply(remove_members("secret", "alice"))
            await c.apply(post("z-after", "secret", "helper", "a zebra after alice left"))
            await c.apply(post("z-mark", "general", "bob", "a zebra marker"))
            # What she read while a member she may still read (membership intervals): no
            # removal; what was posted after she left never arrives.
            marker = await sub.next()
        assert before["edge"]["node"]["key"] == "z-before"
        assert marker["edge"]["node"]["key"] == "z-mark"
        assert await sub.quiet() == []
        async with http_client(acme.base) as http:
            data = await http.gql(SEARCH, token=acme.tokens["alice"])
        assert {"z-before", "z-mark"} <= {e["node"]["key"] for e in data["messageSearch"]["edges"]}
        assert "z-after" not in {e["node"]["key"] for e in data["messageSearch"]["edges"]}


async def test_a_channel_made_private_removes_what_the_viewer_may_no_longer_read(
    acme: Acme,
) -> None:
    # carol never joined general: she reads it while it is public.
    async with live_connection(acme.base, acme.tokens["carol"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z-public", "general", "bob", "a zebra in public"))
            added = await sub.next()
            await c.apply(keyed("makeScopePrivate", "general"))
            removed = await sub.next()
            await c.apply(post("z-private", "general", "bob", "a zebra made private"))
        assert removed["kind"] == "REMOVED"
        assert removed["removedId"] == added["edge"]["node"]["id"]
        assert await sub.quiet() == []
        async with http_client(acme.base) as http:
            data = await http.gql(SEARCH, token=acme.tokens["carol"])
        assert data["messageSearch"]["edges"] == []


async def test_a_deactivated_member_s_subscription_ends(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["bob"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z1", "general", "alice", "a zebra"))
            await sub.next()
            await c.apply(keyed("deactivateMember", "bob"))
            await c.apply(post("z2", "general", "alice", "a zebra bob must not see"))
        assert await sub.error_codes() == ["UNAUTHENTICATED"]
        assert (await sub.message())["type"] == "complete"


async def test_a_revoked_token_ends_the_subscription(acme: Acme, db: asyncpg.Connection) -> None:
    async with live_connection(acme.base, acme.tokens["bob"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with http_client(acme.base) as http:
            await http.gql(SEARCH, token=acme.tokens["bob"])  # subscribed and answering
        await db.execute("update tokens set revoked_at = now() where revoked_at is null")
        # No write needed: the subscription looks on its own (RECALL_LIVE_POLL_INTERVAL).
        assert await sub.error_codes() == ["UNAUTHENTICATED"]


async def test_erasing_a_member_s_messages_removes_what_was_delivered(acme: Acme) -> None:
    async with live_connection(acme.base, acme.tokens["alice"]) as live:
        sub = await live.subscribe(SEARCH_UPDATES, {"query": "zebra"})
        async with connector(acme.base, acme.connector) as c:
            await c.apply(post("z-bob", "general", "bob", "a zebra bob wrote"))
            added = await sub.next()
            await c.apply(keyed("eraseMemberMessages", "bob"))
            removed = await sub.next()
        assert (added["kind"], removed["kind"]) == ("ADDED", "REMOVED")
        assert removed["removedId"] == added["edge"]["node"]["id"]
        assert await sub.quiet() == []
