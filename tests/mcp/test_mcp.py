"""Recall as an MCP server over Streamable HTTP (/mcp; docs/mcp.md), through the SDK's own
client: the tools answer what their GraphQL twins answer, under the same rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app.request.ids import encode_id
from app.settings import Settings
from tests.api.test_outages import outage_settings, proxied
from tests.client import GraphQLClient
from tests.history_support import SEARCH, gid, start_turn
from tests.mcp_support import McpApp, error_code, mcp_app, ok, text, tool_names
from tests.message_search_support import SEARCH as MESSAGE_SEARCH

MEMBER_TOOLS = {"search_messages", "read_conversation"}
AGENT_TOOLS = {"start_turn", "search_history", "post_reply"}

EVIDENCE = "{ viewer { turn { evidence { id } searches { status } } } }"
TURN_ID = "{ viewer { turn { id } } }"


@pytest.fixture
async def mcp(dsn: str, settings: Settings) -> AsyncIterator[McpApp]:
    async with mcp_app(settings, dsn) as app:
        yield app


@pytest.fixture
async def tokens(
    history_personas: None, issue_token: Any, db: asyncpg.Connection
) -> dict[str, str]:
    from app.data.tokens import issue_connector_token

    out = {who: await issue_token("member", "acme", who) for who in ("alice", "bob")}
    out["helper"] = await issue_token("agent", "acme", "helper")
    out["scout"] = await issue_token("agent", "acme", "scout")
    out["connector"] = await issue_connector_token(db, "acme")
    return out


async def test_each_token_kind_lists_only_its_tools(
    mcp: McpApp, tokens: dict[str, str], alice_turn: str
) -> None:
    async with mcp.client(tokens["alice"]) as member:
        assert await tool_names(member) == MEMBER_TOOLS
        tools = {t.name: t for t in (await member.list_tools()).tools}
        hints = tools["search_messages"].annotations
        assert hints is not None and hints.read_only_hint and hints.open_world_hint is False
        assert tools["search_messages"].output_schema is not None
    async with mcp.client(tokens["helper"]) as agent:
        assert await tool_names(agent) == AGENT_TOOLS
        # A tool its token may not use answers like one that does not exist.
        refused = await agent.call_tool("search_messages", {"query": "Acme"})
        unknown = await agent.call_tool("no_such_tool", {"query": "Acme"})
        assert refused.is_error and unknown.is_error
        assert text(refused).replace("search_messages", "X") == text(unknown).replace(
            "no_such_tool", "X"
        )
    async with mcp.client(alice_turn) as turn:
        assert await tool_names(turn) == {"search_history", "post_reply"}
    async with mcp.client(tokens["connector"]) as connector:
        assert await tool_names(connector) == set()


async def _message_search_ids(client: GraphQLClient, token: str, **variables: Any) -> list[str]:
    data = await client.gql(MESSAGE_SEARCH, variables, token=token)
    return [e["node"]["id"] for e in data["messageSearch"]["edges"]]


async def test_search_messages_returns_exactly_what_message_search_returns(
    mcp: McpApp, client: GraphQLClient, tokens: dict[str, str]
) -> None:
    async with mcp.client(tokens["alice"]) as member:
        for query in (
            "Acme",
            "salary",
            "budget",
            "friday",
            "nothing-matches-this",
            "from:@bob",
            "Acme in:#general -from:me",
            "in:#secret",
        ):
            found = ok(await member.call_tool("search_messages", {"query": query, "limit": 50}))
            ids = [m["message_id"] for m in found["messages"]]
            assert ids == await _message_search_ids(client, tokens["alice"], q=query, first=50)
        # Paging: the cursor continues the same search.
        first = ok(await member.call_tool("search_messages", {"query": "Acme", "limit": 2}))
        assert first["next_cursor"] is not None
        rest = ok(
            await member.call_tool(
                "search_messages", {"query": "Acme", "limit": 50, "cursor": first["next_cursor"]}
            )
        )
        everything = await _message_search_ids(client, tokens["alice"], q="Acme", first=50)
        paged = [m["message_id"] for m in first["messages"] + rest["messages"]]
        assert paged == everything


async def test_search_history_matches_history_search_and_joins_the_evidence(
    mcp: McpApp,
    client: GraphQLClient,
    db: asyncpg.Connection,
    issue_token: Any,
    history_personas: None,
) -> None:
    # Two equivalent turns (same agent, conversation, requester, window): one searched through
    # GraphQL, the other through MCP, named by its id with the agent's token.
    graphql_turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    mcp_turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    turn_id = (await client.gql(TURN_ID, token=mcp_turn))["viewer"]["turn"]["id"]
    helper = await issue_token("agent", "acme", "helper")
    async with mcp.client(helper) as agent:
        for query in ("Acme", "salary question"):
            expected = (await client.gql(SEARCH, {"q": query}, token=graphql_turn))["historySearch"]
            got = ok(await agent.call_tool("search_history", {"turn": turn_id, "query": query}))
            assert got["status"] == expected["status"]
            assert got["message_ids"] == expected["messageIds"]
            assert got["count"] == expected["count"] > 0
            assert [h["message_id"] for h in got["hits"]] == [
                e["node"]["message"]["id"] for e in expected["edges"]
            ]
            # The turns started a moment apart: recency differs in the last digits.
            assert [h["score"] for h in got["hits"]] == pytest.approx(
                [e["node"]["score"] for e in expected["edges"]], rel=1e-9
            )
            assert [h["text"] for h in got["hits"]] == [
                e["node"]["text"] for e in expected["edges"]
            ]
    # The same evidence and audit rows, read back through GraphQL.
    by_graphql = (await client.gql(EVIDENCE, token=graphql_turn))["viewer"]["turn"]
    by_mcp = (await client.gql(EVIDENCE, token=mcp_turn))["viewer"]["turn"]
    assert {m["id"] for m in by_mcp["evidence"]} == {m["id"] for m in by_graphql["evidence"]}
    assert len(by_mcp["evidence"]) > 0
    assert by_mcp["searches"] == by_graphql["searches"]
    audits = await db.fetch(
        "select turn_id from search_audit where surface = 'history_search' order by id"
    )
    assert len(audits) == 4


async def test_a_turn_token_searches_its_own_turn_without_naming_it(
    mcp: McpApp, client: GraphQLClient, alice_turn: str
) -> None:
    async with mcp.client(alice_turn) as turn:
        got = ok(await turn.call_tool("search_history", {"query": "Acme", "limit": 3}))
    assert got["count"] <= 3 and got["message_ids"]
    evidence = (await client.gql(EVIDENCE, token=alice_turn))["viewer"]["turn"]["evidence"]
    assert {m["id"] for m in evidence} == set(got["message_ids"])


async def test_another_agents_turn_or_a_made_up_one_is_indistinguishable_from_none(
    mcp: McpApp, client: GraphQLClient, tokens: dict[str, str], alice_turn: str
) -> None:
    helpers_turn = (await client.gql(TURN_ID, token=alice_turn))["viewer"]["turn"]["id"]
    made_up = encode_id("Turn", 987654)
    not_a_turn = encode_id("Message", 1)
    answers = []
    async with mcp.client(tokens["scout"]) as scout:
        for turn in (helpers_turn, made_up, not_a_turn, "garbage"):
            for tool, args in (
                ("search_history", {"query": "Acme"}),
                ("post_reply", {"body": "hello"}),
            ):
                result = await scout.call_tool(tool, {**args, "turn": turn})
                answers.append((tool, error_code(result), text(result)))
    # A turn token naming a turn other than its own answers the same.
    async with mcp.client(alice_turn) as turn_client:
        result = await turn_client.call_tool("search_history", {"query": "Acme", "turn": made_up})
        answers.append(("search_history", error_code(result), text(result)))
    assert {a[1:] for a in answers} == {("FORBIDDEN", "FORBIDDEN: " + _no_such_turn())}
    # Nothing was searched or posted.
    evidence = (await client.gql(EVIDENCE, token=alice_turn))["viewer"]["turn"]
    assert evidence == {"evidence": [], "searches": []}


def _no_such_turn() -> str:
    from app.mcp.tools import NO_SUCH_TURN

    return NO_SUCH_TURN


async def test_another_persons_dm_is_never_reachable_through_any_tool(
    mcp: McpApp,
    client: GraphQLClient,
    db: asyncpg.Connection,
    tokens: dict[str, str],
    issue_token: Any,
) -> None:
    da1 = await gid(db, "Message", "da1")  # alice's DM with helper: "my Acme salary question"
    async with mcp.client(tokens["bob"]) as bob:
        found = ok(await bob.call_tool("search_messages", {"query": "salary", "limit": 50}))
        assert found["messages"] == []
        everything = ok(await bob.call_tool("search_messages", {"query": "Acme", "limit": 50}))
        assert da1 not in [m["message_id"] for m in everything["messages"]]
        opened = await bob.call_tool("read_conversation", {"message_id": da1})
        made_up = await bob.call_tool(
            "read_conversation", {"message_id": encode_id("Message", 987654)}
        )
        assert error_code(opened) == error_code(made_up) == "FORBIDDEN"
        assert opened.content == made_up.content
    # Alice herself reads it in place.
    async with mcp.client(tokens["alice"]) as alice:
        around = ok(await alice.call_tool("read_conversation", {"message_id": da1}))
        assert [m["message_id"] for m in around["messages"] if m["is_target"]] == [da1]
    # An agent's turn for bob (in bob's DM) never shows alice's DM, nor quotes it.
    bob_turn = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    turn_id = (await client.gql(TURN_ID, token=bob_turn))["viewer"]["turn"]["id"]
    async with mcp.client(tokens["helper"]) as agent:
        for query in ("salary", "Acme salary question private"):
            got = ok(await agent.call_tool("search_history", {"turn": turn_id, "query": query}))
            assert da1 not in got["message_ids"]
            for hit in got["hits"]:
                assert "salary" not in hit["text"]


async def test_post_reply_with_a_client_id_retried_posts_once(
    mcp: McpApp, client: GraphQLClient, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    alice, dm = await gid(db, "Member", "alice"), await gid(db, "Scope", "dm-alice")
    async with mcp.client(tokens["helper"]) as agent:
        turn = ok(await agent.call_tool("start_turn", {"conversation": dm, "requester": alice}))
        # Keys work as well as ids.
        by_keys = ok(
            await agent.call_tool("start_turn", {"conversation": "dm-alice", "requester": "alice"})
        )
        assert by_keys["turn"] != turn["turn"]
        args = {"turn": turn["turn"], "body": "Here is your answer", "client_id": "reply-1"}
        first = ok(await agent.call_tool("post_reply", args))
        again = ok(await agent.call_tool("post_reply", args))
    assert first["delivered"] and again["delivered"]
    assert first["message_id"] == again["message_id"] is not None
    count = await db.fetchval("select count(*) from messages where body = 'Here is your answer'")
    assert count == 1


async def test_no_token_or_a_revoked_one_is_401_with_www_authenticate(
    mcp: McpApp, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    from app.data.tokens import hash_token

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"accept": "application/json, text/event-stream"}
    await db.execute(
        "update tokens set revoked_at = now() where token_hash = $1", hash_token(tokens["bob"])
    )
    for token in (None, "rcm_w1.unknown", tokens["bob"]):
        async with mcp.http(token) as http:
            response = await http.post("/mcp", json=body, headers=headers)
        assert response.status_code == 401, token
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "salary" not in response.text
    async with mcp.http(tokens["alice"]) as http:
        assert (await http.post("/mcp", json=body, headers=headers)).status_code != 401


async def test_a_tool_error_carries_the_recall_error_code(
    mcp: McpApp, tokens: dict[str, str], alice_turn: str
) -> None:
    async with mcp.client(tokens["alice"]) as member:
        cases: dict[str, dict[str, Any]] = {
            "INVALID_CURSOR": {"query": "Acme", "cursor": "not-a-cursor"},
            "BAD_USER_INPUT": {"query": "Acme", "limit": 51},
        }
        for code, args in cases.items():
            result = await member.call_tool("search_messages", args)
            assert result.is_error and error_code(result) == code, result.content
        # Arguments of the wrong type are BAD_USER_INPUT too, without their values.
        wrong = await member.call_tool("search_messages", {"query": "Acme", "limit": "many"})
        assert error_code(wrong) == "BAD_USER_INPUT"
        assert "many" not in text(wrong)
        far = await member.call_tool("read_conversation", {"message_id": "x", "before": 51})
        assert error_code(far) == "BAD_USER_INPUT"
    async with mcp.client(alice_turn) as turn:
        result = await turn.call_tool("search_history", {"query": "Acme", "limit": 21})
        assert error_code(result) == "BAD_USER_INPUT"
        result = await turn.call_tool("search_history", {"query": "Acme", "speaker": "boss"})
        assert error_code(result) == "BAD_USER_INPUT"
    async with mcp.client(tokens["helper"]) as agent:
        result = await agent.call_tool("search_history", {"query": "Acme"})
        assert error_code(result) == "BAD_USER_INPUT"  # no turn named


async def test_tool_calls_are_counted_by_tool_and_outcome(
    mcp: McpApp, tokens: dict[str, str]
) -> None:
    async with mcp.client(tokens["alice"]) as member:
        ok(await member.call_tool("search_messages", {"query": "Acme"}))
        await member.call_tool("search_messages", {"query": "Acme", "limit": 51})
    async with mcp.http() as http:
        metrics = (await http.get("/metrics")).text
    assert 'recall_mcp_tool_calls_total{outcome="ok",tool="search_messages"}' in metrics
    assert 'recall_mcp_tool_calls_total{outcome="bad_user_input",tool="search_messages"}' in metrics


async def test_a_database_outage_is_a_tool_error_not_a_hang(
    dsn: str, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    proxy, through = await proxied(dsn)
    try:
        async with (
            mcp_app(outage_settings(), through) as app,
            app.client(tokens["alice"]) as member,
        ):
            ok(await member.call_tool("search_messages", {"query": "Acme"}))
            proxy.cut()
            down = await member.call_tool("search_messages", {"query": "Acme"})
            assert error_code(down) in ("SERVICE_UNAVAILABLE", "TIMEOUT")
            assert "select" not in text(down).lower()
            proxy.restore()
            back = None
            for _ in range(3):
                back = await member.call_tool("search_messages", {"query": "Acme"})
                if not back.is_error:
                    break
            assert back is not None and not back.is_error
    finally:
        await proxy.stop()
