"""startTurn and `recall turn`: the turn binds perspective, destination and requester."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.data.readers import reader_for_token
from app.errors import Forbidden, UsageError
from app.history_search.turns import start_turn_by_keys
from app.request.ids import encode_id
from tests.client import GraphQLClient
from tests.history_support import SEARCH, START, gid, start_turn

VIEWER_TURN = "{ viewer { turn { id scope { key } requester { key } evidence { key } } } }"


async def _start(
    client: GraphQLClient, db: asyncpg.Connection, token: str, **overrides: Any
) -> Any:
    variables = {
        "scope": await gid(db, "Scope", "dm-alice"),
        "requester": await gid(db, "Member", "alice"),
        "window": 30,
        **overrides,
    }
    return await client.post(START, variables, token=token)


async def test_start_turn_needs_an_agent_token(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    member = await issue_token("member", "acme", "alice")
    assert (await _start(client, db, member)).codes == ["FORBIDDEN"]
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert (await _start(client, db, turn)).codes == ["FORBIDDEN"]


async def test_agent_must_be_a_member_of_the_scope(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    scout = await issue_token("agent", "acme", "scout")
    for scope in ("secret", "dm-alice", "partners", "random"):
        result = await _start(client, db, scout, scope=await gid(db, "Scope", scope))
        assert result.codes == ["FORBIDDEN"], scope
    # Another workspace's scope and an id of another type are scopes it is not in, alike.
    lobby = await gid(db, "Scope", "lobby")
    assert (await _start(client, db, scout, scope=lobby)).codes == ["FORBIDDEN"]
    alice = await gid(db, "Member", "alice")
    assert (await _start(client, db, scout, scope=alice)).codes == ["FORBIDDEN"]
    # A thread's members are its parent's: scout is in #general, so in its thread.
    thread = await _start(client, db, scout, scope=await gid(db, "Scope", "t-general"))
    assert not thread.errors


async def test_requester_must_be_a_person_of_the_workspace(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    helper = await issue_token("agent", "acme", "helper")
    helper_pk = await db.fetchval("select id from actors where key = 'helper'")
    for requester in (
        await gid(db, "Member", "mallory"),
        str(encode_id("Member", helper_pk)),
        await gid(db, "Agent", "scout"),
    ):
        result = await _start(client, db, helper, requester=requester)
        assert result.codes == ["FORBIDDEN"], requester


async def test_window_is_between_0_and_100(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    helper = await issue_token("agent", "acme", "helper")
    for window in (-1, 101):
        assert (await _start(client, db, helper, window=window)).codes == ["BAD_USER_INPUT"]
    assert not (await _start(client, db, helper, window=100)).errors


async def test_trigger_must_be_a_message_of_the_scope(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    helper = await issue_token("agent", "acme", "helper")
    for trigger in ("g1", "x1"):
        result = await _start(client, db, helper, trigger=await gid(db, "Message", trigger))
        assert result.codes == ["BAD_USER_INPUT"], trigger
    assert not (await _start(client, db, helper, trigger=await gid(db, "Message", "da2"))).errors


async def test_turn_binds_scope_requester_trigger_and_window(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(
        client, db, issue_token, scope="general", requester="bob", trigger="g7", window=2
    )
    data = await client.gql(VIEWER_TURN, token=token)
    assert data["viewer"]["turn"]["scope"] == {"key": "general"}
    assert data["viewer"]["turn"]["requester"] == {"key": "bob"}
    assert data["viewer"]["turn"]["evidence"] == []
    row = await db.fetchrow(
        """
        select t.window_size, tm.key as trigger, array(select m.key from turn_window w
            join messages m on m.workspace_id = w.workspace_id and m.id = w.message_id
            where w.workspace_id = t.workspace_id and w.turn_id = t.id order by m.seq) as window,
            t.destination_audience_id = s.destination_audience_id as bound
        from turns t
        join messages tm on tm.workspace_id = t.workspace_id and tm.id = t.trigger_message_id
        join scopes s on s.workspace_id = t.workspace_id and s.id = t.scope_id
        """
    )
    assert row is not None
    assert (row["window_size"], row["trigger"], row["window"], row["bound"]) == (
        2,
        "g7",
        ["g2", "g6"],  # the two eligible messages before g7 (g3, g4, g5 are not eligible)
        True,
    )


async def test_turn_node_resolves_only_for_its_own_turn_token(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    mine = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    theirs = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    turn_id = (await client.gql(VIEWER_TURN, token=mine))["viewer"]["turn"]["id"]
    query = "query($id: ID!) { node(id: $id) { id ... on Turn { scope { key } } } }"
    assert (await client.gql(query, {"id": turn_id}, token=mine))["node"]["id"] == turn_id
    for other in (theirs, await issue_token("agent", "acme", "helper")):
        assert (await client.gql(query, {"id": turn_id}, token=other))["node"] is None
    member = await issue_token("member", "acme", "alice")
    assert (await client.gql(VIEWER_TURN, token=member))["viewer"]["turn"] is None


async def test_history_search_and_post_reply_need_a_turn_token(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    for token in (
        await issue_token("member", "acme", "alice"),
        await issue_token("agent", "acme", "helper"),
    ):
        assert (await client.post(SEARCH, {"q": "Acme"}, token=token)).codes == ["FORBIDDEN"]
        reply = 'mutation { postReply(body: "hi") { delivered } }'
        assert (await client.post(reply, token=token)).codes == ["FORBIDDEN"]


async def test_recall_turn_command_starts_the_same_turn_by_keys(
    db: asyncpg.Connection, history_personas: None
) -> None:
    token = await start_turn_by_keys(
        db,
        workspace_key="acme",
        agent_key="helper",
        scope_key="general",
        requester_key="alice",
        trigger_key="g8",
        window=5,
    )
    reader = await reader_for_token(db, token)
    assert reader is not None and reader.kind == "turn"
    # Fewer than 5 eligible messages precede g8 in #general: g1, g2, g6 and g7.
    assert await db.fetchval("select count(*) from turn_window") == 4
    with pytest.raises(UsageError, match="unknown scope 'nope'"):
        await start_turn_by_keys(
            db,
            workspace_key="acme",
            agent_key="helper",
            scope_key="nope",
            requester_key="alice",
            trigger_key=None,
            window=5,
        )
    with pytest.raises(Forbidden):
        await start_turn_by_keys(
            db,
            workspace_key="acme",
            agent_key="scout",
            scope_key="secret",
            requester_key="alice",
            trigger_key=None,
            window=5,
        )
    assert await db.fetchval("select count(*) from turns") == 1
