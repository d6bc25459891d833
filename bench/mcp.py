"""A tool call against its GraphQL twin: `search_messages` over MCP (the SDK's client, /mcp)
and `messageSearch` over /graphql, the same search with the same member token, on one app in
this process (its lifespan running, no socket). The target (issue 25): a tool call costs no
more than its GraphQL twin plus 1 ms.

    .venv/bin/python -m bench.mcp [--calls 200] [--query "postgres migration"]

Needs a PostgreSQL server (BENCH_DATABASE_URL, else DATABASE_URL, else the local
postgres@127.0.0.1:5432); it creates a database with the demo workspace and drops it after.
Prints JSON on stdout: median and p95 of each, in milliseconds, and their difference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from app.data.tokens import issue_actor_token
from app.db import connect
from app.demo import ensure_demo
from app.migrate import migrate
from app.server import create_app, in_process
from app.settings import Settings
from bench.cluster import with_database

SEARCH = """
query($q: String!, $first: Int) {
  messageSearch(query: $q, first: $first) {
    edges { node { id key body createdAt scope { key name } author { ... on Member { name } } }
            highlights { start end } }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
  }
}
"""


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
    }


async def _timed(call: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        out.append((time.perf_counter() - started) * 1000)
    return out


async def run(server: str, calls: int, query: str) -> dict[str, Any]:
    name = f"recall_bench_mcp_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'create database "{name}"')
    dsn = with_database(server, name)
    try:
        conn = await connect(dsn)
        try:
            await migrate(conn)
            info = await ensure_demo(conn, progress=sys.stderr)
            token = await issue_actor_token(conn, info.workspace_key, "member", info.member_key)
        finally:
            await conn.close()
        headers = {"authorization": f"Bearer {token}"}
        async with in_process(create_app(Settings(), dsn)) as asgi:
            gql_http = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=asgi), base_url="http://127.0.0.1"
            )
            mcp_http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=asgi),
                base_url="http://127.0.0.1",
                headers=headers,
            )
            async with (
                gql_http,
                mcp_http,
                Client(streamable_http_client("http://127.0.0.1/mcp", http_client=mcp_http)) as mcp,
            ):
                variables = {"q": query, "first": 20}

                async def graphql() -> None:
                    r = await gql_http.post(
                        "/graphql",
                        json={"query": SEARCH, "variables": variables},
                        headers=headers,
                    )
                    assert r.status_code == 200 and "errors" not in r.json(), r.text

                async def tool() -> None:
                    result = await mcp.call_tool("search_messages", {"query": query, "limit": 20})
                    assert not result.is_error, result.content

                await mcp.list_tools()  # the client learns the output schemas once
                for warm in (graphql, tool):
                    await _timed(warm, 20)
                # Interleaved rounds, so drift (caches, the machine) hits both alike.
                g_ms: list[float] = []
                t_ms: list[float] = []
                for _ in range(4):
                    g_ms += await _timed(graphql, calls // 4)
                    t_ms += await _timed(tool, calls // 4)
        g, t = _summary(g_ms), _summary(t_ms)
        return {
            "query": query,
            "calls": len(g_ms),
            "graphql_messageSearch": g,
            "mcp_search_messages": t,
            "median_overhead_ms": round(t["median_ms"] - g["median_ms"], 3),
            "p95_overhead_ms": round(t["p95_ms"] - g["p95_ms"], 3),
            "within_1ms": t["median_ms"] - g["median_ms"] <= 1.0,
        }
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="search_messages over MCP vs messageSearch")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--query", default="postgres migration")
    args = p.parse_args(argv)
    server = (
        os.environ.get("BENCH_DATABASE_URL")
        or os.environ.get("DATABASE_URL")
        or "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    print(json.dumps(asyncio.run(run(server, args.calls, args.query)), indent=2))


if __name__ == "__main__":
    main()
