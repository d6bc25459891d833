"""`recall mcp`: the same server over stdio (RECALL_TOKEN), through the SDK's stdio client
spawning the command, answers like /mcp."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import asyncpg

from app.settings import Settings
from tests.history_support import gid
from tests.mcp.test_mcp import AGENT_TOOLS, MEMBER_TOOLS
from tests.mcp_support import RECALL, error_code, mcp_app, ok, stdio_client, tool_names


async def test_stdio_recall_mcp_answers_like_http(
    dsn: str,
    db: asyncpg.Connection,
    settings: Settings,
    history_personas: None,
    issue_token: Any,
) -> None:
    alice = await issue_token("member", "acme", "alice")
    helper = await issue_token("agent", "acme", "helper")
    search = {"query": "Acme", "limit": 50}
    async with mcp_app(settings, dsn) as app, app.client(alice) as http:
        over_http = ok(await http.call_tool("search_messages", search))
        http_error = await http.call_tool("search_messages", {"query": "Acme", "limit": 51})
    async with stdio_client(dsn, alice) as member:
        assert await tool_names(member) == MEMBER_TOOLS
        assert ok(await member.call_tool("search_messages", search)) == over_http
        stdio_error = await member.call_tool("search_messages", {"query": "Acme", "limit": 51})
        assert stdio_error.content == http_error.content
        assert error_code(stdio_error) == "BAD_USER_INPUT"
    # An agent's whole turn: start_turn -> search_history -> post_reply.
    async with stdio_client(dsn, helper) as agent:
        assert await tool_names(agent) == AGENT_TOOLS
        turn = ok(
            await agent.call_tool(
                "start_turn",
                {
                    "conversation": await gid(db, "Scope", "dm-alice"),
                    "requester": await gid(db, "Member", "alice"),
                },
            )
        )["turn"]
        found = ok(await agent.call_tool("search_history", {"turn": turn, "query": "Acme"}))
        assert found["status"] == "OK" and found["message_ids"]
        reply = ok(
            await agent.call_tool(
                "post_reply", {"turn": turn, "body": "From stdio", "client_id": "s-1"}
            )
        )
        assert reply["delivered"] is True
    evidence = await db.fetchval("select count(*) from turn_evidence")
    assert evidence == len(found["message_ids"])


async def _run_mcp(dsn: str, token: str | None) -> tuple[int, str]:
    env = {**os.environ, "DATABASE_URL": dsn}
    env.pop("RECALL_TOKEN", None)
    if token is not None:
        env["RECALL_TOKEN"] = token
    proc = await asyncio.create_subprocess_exec(
        str(RECALL),
        "mcp",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert out == b""  # stdout is the protocol's
    return proc.returncode or 0, err.decode()


async def test_recall_mcp_refuses_without_a_valid_token(dsn: str, history_personas: None) -> None:
    code, err = await _run_mcp(dsn, None)
    assert code == 2 and "RECALL_TOKEN" in err
    code, err = await _run_mcp(dsn, "rcm_w1.not-a-token")
    assert code == 2 and "RECALL_TOKEN is not a valid token" in err
