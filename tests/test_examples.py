"""The clients in examples/ against a real server: `recall serve` (uvicorn) on a free
127.0.0.1 port over a fresh database holding the personas (tests/personas.py).

The Python examples always run (their library, gql, is in the `examples` extra, part of `dev`);
the Node one runs where `node` and `npm` exist, installing examples/node from its lock file
once if .ci/run has not already.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.message_search_support import SEARCH
from tests.personas import load_personas
from tests.servers import start_serve, wait_ready

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
HIT = re.compile(r"^\[([^\]]+)\] ", re.MULTILINE)


async def _run(*argv: str, env: dict[str, str], seconds: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    out, err = await asyncio.wait_for(proc.communicate(), seconds)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def server(dsn: str, db: asyncpg.Connection, tmp_path: Path) -> AsyncIterator[str]:
    """The GraphQL URL of a real server over the personas' database."""
    await load_personas(db)
    log = tmp_path / "server.log"
    proc, base = await start_serve(dsn, log)
    try:
        await wait_ready(proc, base, log, 30)
        yield f"{base}/graphql"
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 15)


@pytest.fixture
async def tokens(issue_token: Any) -> dict[str, str]:
    return {
        "alice": await issue_token("member", "acme", "alice"),
        "helper": await issue_token("agent", "acme", "helper"),
    }


async def _all_keys(url: str, token: str, query: str) -> list[str]:
    """What one unpaged messageSearch finds: what the examples must print, page by page."""
    async with httpx.AsyncClient() as http:
        response = await http.post(
            url,
            json={"query": SEARCH, "variables": {"q": query, "first": 100}},
            headers={"authorization": f"Bearer {token}"},
        )
    body = response.json()
    assert "errors" not in body, body
    return [e["node"]["key"] for e in body["data"]["messageSearch"]["edges"]]


async def test_python_search_follows_end_cursor_across_pages(
    server: str, tokens: dict[str, str]
) -> None:
    expected = await _all_keys(server, tokens["alice"], "acme")
    assert len(expected) > 3
    code, out, err = await _run(
        sys.executable,
        str(EXAMPLES / "python_search.py"),
        "acme",
        "--first",
        "3",
        env={"RECALL_URL": server, "RECALL_TOKEN": tokens["alice"]},
    )
    assert code == 0, err
    assert HIT.findall(out) == expected
    pages = -(-len(expected) // 3)
    assert out.strip().splitlines()[-1] == f"{len(expected)} hits in {pages} pages"
    assert "«Acme»" in out  # highlights, sliced as UTF-16


async def test_python_search_reports_graphql_errors_by_code(
    server: str, tokens: dict[str, str]
) -> None:
    code, _, err = await _run(
        sys.executable,
        str(EXAMPLES / "python_search.py"),
        "acme",
        "--since",
        "2026-03-02T10:00:00Z",
        "--until",
        "2026-03-02T10:00:00Z",
        env={"RECALL_URL": server, "RECALL_TOKEN": tokens["alice"]},
    )
    assert code == 1
    assert "error BAD_USER_INPUT: since must be earlier than until" in err
    code, _, err = await _run(
        sys.executable,
        str(EXAMPLES / "python_search.py"),
        "acme",
        env={"RECALL_URL": server, "RECALL_TOKEN": "rcm_not-a-token"},
    )
    assert code == 1
    assert "error UNAUTHENTICATED" in err  # the 401 carries a GraphQL error body


async def test_agent_turn_starts_a_turn_searches_and_posts_a_reply(
    server: str, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    code, out, err = await _run(
        sys.executable,
        str(EXAMPLES / "agent_turn.py"),
        "acme",
        "--scope",
        "general",
        "--requester",
        "alice",
        "--window",
        "0",
        env={"RECALL_URL": server, "RECALL_AGENT_TOKEN": tokens["helper"]},
    )
    assert code == 0, err + out
    assert "historySearch 'acme': status OK" in out
    assert HIT.findall(out), out
    reply_key = re.search(r"^reply delivered as (\S+)$", out, re.MULTILINE)
    assert reply_key, out
    row = await db.fetchrow(
        "select s.key as scope, a.key as author, m.body,"
        " (select count(*) from message_sources x"
        "  where x.workspace_id = m.workspace_id and x.message_id = m.id) as sources"
        " from messages m join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id"
        " join actors a on a.workspace_id = m.workspace_id and a.id = m.author_id"
        " where m.key = $1",
        reply_key.group(1),
    )
    assert row is not None
    assert (row["scope"], row["author"]) == ("general", "helper")
    assert row["body"].startswith("Here is what I found about “acme”")
    assert row["sources"] > 0  # the hits it showed are the reply's provenance


async def test_mcp_turn_starts_a_turn_searches_and_posts_a_reply_over_mcp(
    server: str, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    mcp_url = server.removesuffix("/graphql") + "/mcp"
    code, out, err = await _run(
        sys.executable,
        str(EXAMPLES / "mcp_turn.py"),
        "acme",
        "--scope",
        "general",
        "--requester",
        "alice",
        env={"RECALL_MCP_URL": mcp_url, "RECALL_AGENT_TOKEN": tokens["helper"]},
    )
    assert code == 0, err + out
    assert "search_history 'acme': status OK" in out
    assert re.search(r"^reply delivered as (\S+)$", out, re.MULTILINE), out
    count = await db.fetchval(
        "select count(*) from turn_evidence e join turns t on t.workspace_id = e.workspace_id"
        " and t.id = e.turn_id"
    )
    assert count > 0  # what it showed is the turn's evidence


def _node_tools() -> tuple[str, str] | None:
    node, npm = shutil.which("node"), shutil.which("npm")
    return (node, npm) if node and npm else None


@pytest.mark.skipif(_node_tools() is None, reason="node and npm are not installed")
async def test_node_search_follows_end_cursor_across_pages(
    server: str, tokens: dict[str, str]
) -> None:
    tools = _node_tools()
    assert tools is not None
    node, npm = tools
    if not (EXAMPLES / "node" / "node_modules" / "@urql" / "core").is_dir():
        code, out, err = await _run(
            npm, "ci", "--no-audit", "--no-fund", "--prefix", str(EXAMPLES / "node"),
            env={}, seconds=180,
        )  # fmt: skip
        assert code == 0, err + out
    expected = await _all_keys(server, tokens["alice"], "acme")
    code, out, err = await _run(
        node,
        str(EXAMPLES / "node_search.mjs"),
        "acme",
        "--first",
        "4",
        env={"RECALL_URL": server, "RECALL_TOKEN": tokens["alice"]},
    )
    assert code == 0, err
    assert HIT.findall(out) == expected
    pages = -(-len(expected) // 4)
    assert out.strip().splitlines()[-1] == f"{len(expected)} hits in {pages} pages"
    assert "«Acme»" in out
