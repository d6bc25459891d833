"""Live changes through applyChanges (docs/changes.md): every rule, seen through the surfaces
people and agents use (GraphQL over HTTP), on the personas of tests/personas.py."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from tests.changes_support import (
    Connector,
    add_members,
    delete,
    edit,
    every_kind_of_change,
    keyed,
    post,
    remove_members,
)
from tests.history_support import gid, hit_keys, shown_keys, start_turn
from tests.history_support import search as history_search
from tests.message_search_support import keys, search
from tests.personas import load_personas

NODE = "query($id: ID!) { node(id: $id) { ... on Message { key body } } }"
OPEN_HIT = """
query($id: ID!) {
  node(id: $id) { ... on Message { scope { messages(around: $id, first: 5, last: 5) {
    edges { node { key } } } } } }
}
"""
NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { ... on Message { key } } }"
AROUND = """
query($scope: ID!, $around: ID!) {
  node(id: $scope) { ... on Scope { messages(around: $around, first: 5, last: 5) {
    edges { node { key body } } } } }
}
"""


@pytest.fixture
async def live(db: asyncpg.Connection, client: Any, issue_token: Any) -> Any:
    """The personas, member tokens by name, and acme's connector."""
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    tokens = {p: await issue_token("member", "acme", p) for p in ("alice", "bob", "carol")}
    tokens["mallory"] = await issue_token("member", "globex", "mallory")
    connector = Connector(client, await issue_connector_token(db, "acme"))
    return tokens, connector


# --- posts ------------------------------------------------------------------------------


async def test_a_post_is_found_at_once_by_every_reader_who_may_read_it(
    client: Any, live: Any
) -> None:
    tokens, connector = live
    assert await connector.apply(post("n1", "general", "bob", "fresh zeppelin news")) == {
        "applied": 1, "unchanged": 0, "erasedMessages": 0,
    }  # fmt: skip
    for person in ("alice", "bob", "carol"):  # carol never joined the public channel
        assert await keys(client, tokens[person], "zeppelin") == ["n1"], person
    assert await keys(client, tokens["mallory"], "zeppelin") == []


async def test_a_post_in_a_private_channel_is_written_for_its_people_at_that_moment(
    client: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(post("n1", "secret", "alice", "zeppelin before bob"))
    await connector.apply(add_members("secret", "bob"))
    await connector.apply(post("n2", "secret", "alice", "zeppelin after bob"))
    assert await keys(client, tokens["alice"], "zeppelin") == ["n2", "n1"]
    # Interval membership: bob reads what was posted after he joined, nothing before.
    assert await keys(client, tokens["bob"], "zeppelin") == ["n2"]
    assert await keys(client, tokens["carol"], "zeppelin") == []


async def test_a_post_is_found_by_history_search_where_eligible(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    _, connector = live
    await connector.apply(
        post("n1", "general", "bob", "zeppelin launch is public"),
        post("n2", "secret", "alice", "zeppelin budget is private"),
    )
    # Bob's DM with helper: the public post, never the private channel's.
    from_dm = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    assert hit_keys(await history_search(client, from_dm, "zeppelin")) == ["n1"]
    in_secret = await start_turn(client, db, issue_token, scope="secret", requester="alice")
    assert set(hit_keys(await history_search(client, in_secret, "zeppelin"))) == {"n1", "n2"}


async def test_a_post_into_a_new_thread_inherits_its_channel(client: Any, live: Any) -> None:
    tokens, connector = live
    await connector.apply(
        post("n1", "secret", "alice", "root of a zeppelin thread"),
        {"createScope": {"key": "t-secret", "kind": "thread", "parent": "secret", "root": "n1"}},
        post("n2", "t-secret", "alice", "zeppelin reply in the thread"),
    )
    assert await keys(client, tokens["alice"], "zeppelin") == ["n2", "n1"]
    assert await keys(client, tokens["bob"], "zeppelin") == []


# --- edits and deletions ----------------------------------------------------------------


async def test_an_edit_changes_what_matches_and_what_is_shown(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(post("n1", "general", "bob", "meet at the old harbour"))
    await connector.apply(edit("n1", "meet at the new lighthouse"))
    assert await keys(client, tokens["alice"], "harbour") == []
    hits = await search(client, tokens["alice"], "lighthouse")
    edge = hits["edges"][0]
    assert edge["node"]["body"] == "meet at the new lighthouse"
    body = edge["node"]["body"]
    assert [body[h["start"] : h["end"]] for h in edge["highlights"]] == ["lighthouse"]
    message = await gid(db, "Message", "n1")
    node = await client.gql(NODE, {"id": message}, token=tokens["alice"])
    assert node["node"]["body"] == "meet at the new lighthouse"
    around = await client.gql(
        AROUND, {"scope": await gid(db, "Scope", "general"), "around": message},
        token=tokens["alice"],
    )  # fmt: skip
    shown = {e["node"]["key"]: e["node"]["body"] for e in around["node"]["messages"]["edges"]}
    assert shown["n1"] == "meet at the new lighthouse"


async def test_a_deleted_message_is_gone_from_every_surface(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(
        post("n1", "general", "bob", "zeppelin one"), post("n2", "general", "bob", "zeppelin two")
    )
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert set(hit_keys(await history_search(client, turn, "zeppelin"))) == {"n1", "n2"}
    await connector.apply(delete("n1"))

    assert await keys(client, tokens["alice"], "zeppelin") == ["n2"]
    message = await gid(db, "Message", "n1")
    assert (await client.gql(NODE, {"id": message}, token=tokens["alice"]))["node"] is None
    assert (await client.gql(NODES, {"ids": [message]}, token=tokens["alice"]))["nodes"] == [None]
    around = await client.gql(
        AROUND, {"scope": await gid(db, "Scope", "general"), "around": await gid(db, "Message", "n2")},
        token=tokens["alice"],
    )  # fmt: skip
    assert "n1" not in {e["node"]["key"] for e in around["node"]["messages"]["edges"]}
    later = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert "n1" not in shown_keys(await history_search(client, later, "zeppelin"))
    evidence = await client.gql("{ viewer { turn { evidence { key } } } }", token=turn)
    assert "n1" not in {m["key"] for m in evidence["viewer"]["turn"]["evidence"]}
    row = await db.fetchrow("select body, deleted from messages where key = 'n1'")
    assert row is not None and row["body"] == "" and row["deleted"]
    assert not await db.fetchval(
        "select count(*) from search_documents d join messages m on m.id = d.message_id"
        " where m.key = 'n1'"
    )


async def test_deleting_a_source_leaves_its_reply_exactly_as_hidden(client: Any, live: Any) -> None:
    tokens, connector = live
    await connector.apply(
        post("n1", "secret", "alice", "the zeppelin budget is 40k"),
        post("n2", "general", "helper", "zeppelin summary for everyone", sources=["n1"]),
    )
    assert await keys(client, tokens["alice"], "zeppelin summary") == ["n2"]
    assert await keys(client, tokens["bob"], "zeppelin summary") == []
    await connector.apply(delete("n1"))
    assert await keys(client, tokens["alice"], "zeppelin summary") == ["n2"]
    assert await keys(client, tokens["bob"], "zeppelin summary") == []


async def test_erase_member_messages_deletes_all_they_wrote_and_counts_them(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    tokens, connector = live
    written = await db.fetchval(
        "select count(*) from messages m join actors a on a.id = m.author_id where a.key = 'bob'"
    )
    result = await connector.apply(keyed("eraseMemberMessages", "bob"))
    assert result == {"applied": 1, "unchanged": 0, "erasedMessages": written}
    assert written > 0
    hits = await search(client, tokens["alice"], "acme", first=100)
    assert all(e["node"]["author"].get("key") != "bob" for e in hits["edges"])
    assert await keys(client, tokens["bob"], "bob private") == []
    again = await connector.apply(keyed("eraseMemberMessages", "bob"))
    assert again == {"applied": 0, "unchanged": 1, "erasedMessages": 0}


# --- membership and visibility ----------------------------------------------------------


async def test_a_removed_member_keeps_earlier_messages_and_never_sees_later_ones(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(
        add_members("secret", "bob"), post("n1", "secret", "alice", "zeppelin one")
    )
    await connector.apply(
        remove_members("secret", "bob"), post("n2", "secret", "alice", "zeppelin two")
    )
    assert await keys(client, tokens["bob"], "zeppelin") == ["n1"]
    # Nor through an agent: helper is in secret, but a turn for bob reads as bob.
    turn = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    assert "n2" not in shown_keys(await history_search(client, turn, "zeppelin"))
    # Nor by opening the conversation from what he still has: a channel he left no longer
    # opens for him at all (tests/message_search/test_message_search_transcript.py).
    opened = await client.gql(OPEN_HIT, {"id": await gid(db, "Message", "n1")}, token=tokens["bob"])
    assert opened["node"]["scope"]["messages"]["edges"] == []


async def test_removing_an_agent_ends_its_perspective(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    _, connector = live
    await connector.apply(post("n1", "secret", "alice", "zeppelin secret plan"))
    await connector.apply(remove_members("secret", "helper"))
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert "n1" not in shown_keys(await history_search(client, turn, "zeppelin"))


async def test_making_a_channel_private_narrows_its_whole_history_at_once(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(
        {"createScope": {"key": "dm-carol", "kind": "dm", "members": ["carol", "helper"]}}
    )
    assert await keys(client, tokens["carol"], "decided") == ["g1"]
    assert "t1" in await keys(client, tokens["carol"], "acme")
    turn = await start_turn(client, db, issue_token, scope="dm-carol", requester="carol")
    assert "g1" in shown_keys(await history_search(client, turn, "decided"))

    await connector.apply(keyed("makeScopePrivate", "general"))

    assert await keys(client, tokens["carol"], "decided") == []
    assert "t1" not in await keys(client, tokens["carol"], "acme")  # its thread too
    assert await keys(client, tokens["bob"], "decided") == ["g1"]  # a member keeps it
    later = await start_turn(client, db, issue_token, scope="dm-carol", requester="carol")
    assert "g1" not in shown_keys(await history_search(client, later, "decided"))
    around = await client.gql(
        AROUND, {"scope": await gid(db, "Scope", "general"), "around": await gid(db, "Message", "g1")},
        token=tokens["carol"],
    )  # fmt: skip
    assert around["node"] is None or around["node"]["messages"]["edges"] == []


async def test_making_a_channel_private_hides_a_reply_elsewhere_built_on_its_history(
    client: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(
        {"createScope": {"key": "dm-carol", "kind": "dm", "members": ["carol", "helper"]}},
        post("n1", "dm-carol", "helper", "zeppelin: the kickoff said Friday", sources=["g1"]),
    )
    assert await keys(client, tokens["carol"], "zeppelin") == ["n1"]
    await connector.apply(keyed("makeScopePrivate", "general"))
    assert await keys(client, tokens["carol"], "zeppelin") == []


async def test_a_private_channel_is_never_made_public(live: Any) -> None:
    _, connector = live
    born_private = {"createScope": {"key": "secret", "kind": "channel", "visibility": "public",
                                    "name": "secret", "members": ["alice", "helper"]}}  # fmt: skip
    refused = await connector.attempt(born_private)
    assert refused.codes == ["BAD_USER_INPUT"]
    assert "private" in refused.errors[0]["message"]
    dm = await connector.attempt(keyed("makeScopePrivate", "dm-alice"))
    assert dm.codes == ["BAD_USER_INPUT"]


async def test_a_replayed_creation_of_a_channel_since_made_private_is_unchanged(live: Any) -> None:
    _, connector = live
    create = {"createScope": {"key": "plans", "kind": "channel", "visibility": "public",
                              "name": "plans", "members": ["alice"]}}  # fmt: skip
    await connector.apply(create, keyed("makeScopePrivate", "plans"))
    assert await connector.apply(create, keyed("makeScopePrivate", "plans")) == {
        "applied": 0, "unchanged": 2, "erasedMessages": 0,
    }  # fmt: skip


# --- actors -----------------------------------------------------------------------------


async def test_a_deactivated_member_gets_401_and_their_messages_stay_searchable(
    client: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(post("n1", "general", "bob", "zeppelin from bob"))
    await connector.apply(keyed("deactivateMember", "bob"))
    refused = await client.post("{ viewer { member { key } } }", token=tokens["bob"])
    assert refused.status == 401 and refused.codes == ["UNAUTHENTICATED"]
    assert await keys(client, tokens["alice"], "zeppelin") == ["n1"]


AGENTS = "query($all: Boolean) { viewer { workspace { agents(includeArchived: $all) { key } } } }"


async def test_an_archived_agent_still_matches_author_filters_but_is_not_offered(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(keyed("archiveAgent", "scout"))
    scout = await gid(db, "Agent", "scout")
    bob = await gid(db, "Member", "bob")
    by_agent = {"kind": "AGENT", "id": scout}
    assert await keys(client, tokens["alice"], "scout", author=by_agent) == ["g8"]
    by_owner = {"kind": "MEMBER_AGENTS", "id": bob}
    assert await keys(client, tokens["alice"], "scout", author=by_owner) == ["g8"]
    listed = await client.gql(AGENTS, {"all": False}, token=tokens["alice"])
    assert [a["key"] for a in listed["viewer"]["workspace"]["agents"]] == ["helper"]
    everyone = await client.gql(AGENTS, {"all": True}, token=tokens["alice"])
    assert [a["key"] for a in everyone["viewer"]["workspace"]["agents"]] == ["helper", "scout"]


async def test_a_deleted_agent_is_reached_by_no_author_filter_and_its_messages_stay(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    tokens, connector = live
    scout = await gid(db, "Agent", "scout")
    bob = await gid(db, "Member", "bob")
    await connector.apply(keyed("deleteAgent", "scout"))
    by_agent = {"kind": "AGENT", "id": scout}
    assert await keys(client, tokens["alice"], "scout", author=by_agent) == []
    by_owner = {"kind": "MEMBER_AGENTS", "id": bob}
    assert await keys(client, tokens["alice"], "scout", author=by_owner) == []
    hits = await search(client, tokens["alice"], "scout reporting")
    assert [e["node"]["key"] for e in hits["edges"]] == ["g8"]
    assert hits["edges"][0]["node"]["author"]["__typename"] == "DeletedAgent"
    listed = await client.gql(AGENTS, {"all": True}, token=tokens["alice"])
    assert [a["key"] for a in listed["viewer"]["workspace"]["agents"]] == ["helper"]


# --- replays and atomicity --------------------------------------------------------------

_TABLES = ("actors", "scopes", "scope_members", "audiences", "memories", "messages",
           "message_sources", "search_documents", "tokens")  # fmt: skip


async def _snapshot(db: asyncpg.Connection) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in _TABLES:
        # A total order (ties of the first columns come back in any order on Citus).
        out[table] = await db.fetch(f"select * from {table} t order by t::text")
    return out


async def test_replaying_a_batch_changes_nothing(db: asyncpg.Connection, live: Any) -> None:
    _, connector = live
    batch = every_kind_of_change()
    first = await connector.apply(*batch)
    assert first["applied"] == len(batch)
    before = await _snapshot(db)
    again = await connector.apply(*batch)
    assert again == {"applied": 0, "unchanged": len(batch), "erasedMessages": 0}
    assert await _snapshot(db) == before


async def test_a_replayed_post_never_undoes_an_edit_or_brings_back_a_deletion(
    client: Any, live: Any
) -> None:
    tokens, connector = live
    await connector.apply(
        post("n1", "general", "bob", "zeppelin draft"), edit("n1", "zeppelin final")
    )
    await connector.apply(post("n2", "general", "bob", "zeppelin gone"), delete("n2"))
    replay = await connector.apply(
        post("n1", "general", "bob", "zeppelin draft"),
        post("n2", "general", "bob", "zeppelin gone"),
    )
    assert replay == {"applied": 0, "unchanged": 2, "erasedMessages": 0}
    hits = await search(client, tokens["alice"], "zeppelin")
    assert [(e["node"]["key"], e["node"]["body"]) for e in hits["edges"]] == [
        ("n1", "zeppelin final")
    ]


async def test_a_batch_with_one_bad_change_applies_nothing_and_names_it(
    db: asyncpg.Connection, live: Any
) -> None:
    _, connector = live
    before = await _snapshot(db)
    result = await connector.attempt(
        post("n1", "general", "bob", "fine"),
        edit("g1", "also fine"),
        post("n2", "nowhere", "bob", "unknown scope"),
    )
    assert result.codes == ["BAD_USER_INPUT"]
    assert result.errors[0]["extensions"]["change"] == 2
    assert "nowhere" in result.errors[0]["message"]
    assert await _snapshot(db) == before


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (post("g1", "secret", "alice", "same key elsewhere"), "another scope"),
        (post("n1", "general", "nobody", "x"), "nobody"),
        (post("n1", "general", "bob", "x", sources=["missing"]), "missing"),
        ({"createScope": {"key": "t9", "kind": "thread", "parent": "general"}}, "root"),
        (edit("missing", "x"), "missing"),
        ({"upsertAgent": {"key": "bob", "owner": "alice"}}, "member"),
        (
            {
                "postMessage": {
                    "key": "n1",
                    "scope": "general",
                    "author": "bob",
                    "body": "x",
                    "at": "2026-05-01T10:00:00",
                }
            },
            "timezone",
        ),
    ],
)
async def test_a_bad_change_is_refused_with_a_reason(
    live: Any, change: dict[str, Any], why: str
) -> None:
    _, connector = live
    result = await connector.attempt(change)
    assert result.codes == ["BAD_USER_INPUT"], result.body
    assert why in result.errors[0]["message"]


async def test_concurrent_batches_from_two_connectors_never_collide(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    from app.data.tokens import issue_connector_token

    tokens, first = live
    second = Connector(client, await issue_connector_token(db, "acme"))

    async def stream(connector: Connector, name: str) -> None:
        for b in range(6):
            await connector.apply(*[
                post(f"{name}-{b}-{i}", "general", "bob", f"zeppelin {name} {b} {i}")
                for i in range(10)
            ])  # fmt: skip

    await asyncio.gather(stream(first, "a"), stream(second, "b"))
    counts = await db.fetchrow(
        "select count(*) as n, count(distinct global_seq) as g, count(distinct (scope_id, seq)) as s"
        " from messages where workspace_id = (select id from workspaces where key = 'acme')"
    )
    assert counts is not None and counts["n"] == counts["g"] == counts["s"]
    found = await search(client, tokens["carol"], "zeppelin", first=100)
    assert len(found["edges"]) == 100
    second_page = await search(
        client, tokens["carol"], "zeppelin", first=100, after=found["pageInfo"]["endCursor"]
    )
    assert len(found["edges"]) + len(second_page["edges"]) == 120


# --- who may apply ----------------------------------------------------------------------


async def test_only_a_connector_token_may_apply_changes(
    client: Any, db: asyncpg.Connection, issue_token: Any, live: Any
) -> None:
    tokens, _ = live
    agent = await issue_token("agent", "acme", "helper")
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    for token in (tokens["alice"], agent, turn):
        refused = await Connector(client, token).attempt(post("n1", "general", "bob", "x"))
        assert refused.codes == ["FORBIDDEN"]
    assert await db.fetchval("select count(*) from messages where key = 'n1'") == 0


async def test_a_connector_token_reads_no_messages(
    client: Any, db: asyncpg.Connection, live: Any
) -> None:
    _, connector = live
    message = await gid(db, "Message", "g1")
    for query, variables in [
        ('{ messageSearch(query: "acme") { edges { node { key } } } }', {}),
        (NODE, {"id": message}),
        (NODES, {"ids": [message]}),
        ('{ historySearch(query: "acme") { count } }', {}),
    ]:
        refused = await client.post(query, variables, token=connector.token)
        assert refused.codes == ["FORBIDDEN"], query


async def test_a_batch_of_posts_costs_the_same_statements_whatever_its_size(live: Any) -> None:
    _, connector = live
    counts = []
    for n in (1, 10, 100):
        batch = [post(f"q{n}-{i}", "general", "bob", f"zeppelin {i}") for i in range(n)]
        result = await connector.attempt(*batch)
        assert not result.errors, result.body
        counts.append(result.statements)
    assert counts[0] == counts[1] == counts[2], counts
