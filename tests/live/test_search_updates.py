"""messageSearchUpdates through a real WebSocket client against a real server: a viewer
receives exactly the new messages a fresh messageSearch shows them, and never one it does not."""

from __future__ import annotations

from tests.changes_support import post
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
        assert keys == {e["node"]["key"] for e in data["messageSearch"]["edges"]} == {
            "z-general",
            "z-secret",
        }
        assert got[0]["edge"]["highlights"]
