"""Two trees of Recall served side by side on one kept benchmark database and asked in turn,
request by request: the A/B that a shared machine's drift cannot tilt.

    git worktree add /tmp/before <commit>
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
      python -m bench.interleaved --reuse recall_bench_<pid> --before /tmp/before --requests 200

Runs of `bench.run --reuse` one tree after the other are minutes apart, and on a shared 2-core
machine the speed of both cores drifts by more than a change is worth (the ILIKE scan of the
same rows took 1.22-1.47 s within one half hour here). Here each case sends one request to the
tree before (`--before`, a checkout) and one to this one, alternating which goes first, so
both see the same moment of the machine. Both `recall serve` processes share the cores, so
every latency is higher than in `bench.run`: compare the two columns, not other tables.

The cases are bench.run's (seed 1 workspace, the heavy member's page of 20 with highlights;
historySearch from the agent's turns). Progress on stderr; the JSON on stdout: p50, p99 and
the database's p50 (x-recall-database-ms) per tree and case, and each case's ratio to the
rare term, per tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.db import resolve_database_url
from app.request.ids import encode_id
from app.settings import Settings
from bench.cluster import with_database
from bench.generate import generate
from bench.harness import (
    HISTORY_SEARCH,
    MESSAGE_SEARCH,
    Discard,
    KeepAlive,
    free_port,
    pct,
    say,
    serve,
    start_turn,
)

TREES = ("before", "this tree")


async def _tokens(dsn: str, markers: dict[str, str]) -> tuple[dict[str, str], int, int]:
    from app.data.tokens import issue_actor_token

    conn = await asyncpg.connect(dsn)
    try:
        tokens = {
            "heavy": await issue_actor_token(conn, "bench", "member", markers["heavy_member"]),
            "agent": await issue_actor_token(conn, "bench", "agent", markers["scout_agent"]),
        }
        heavy = await conn.fetchval(
            "select a.id from actors a join workspaces w on w.id = a.workspace_id"
            " where w.key = 'bench' and a.key = $1",
            markers["heavy_member"],
        )
        dm = await conn.fetchval(
            "select s.id from scopes s join workspaces w on w.id = s.workspace_id"
            " where w.key = 'bench' and s.key = $1",
            markers["scout_dm"],
        )
    finally:
        await conn.close()
    return tokens, heavy, dm


async def run(args: argparse.Namespace) -> dict[str, Any]:
    dsn = with_database(resolve_database_url(Settings()), args.reuse)
    mk = generate(args.messages, args.seed, Discard()).markers
    tokens, heavy, dm = await _tokens(dsn, mk)
    ports = {tree: free_port() for tree in TREES}
    servers = [
        await serve(dsn, ports["before"], tree=args.before.resolve()),
        await serve(dsn, ports["this tree"]),
    ]
    try:
        # One turn per tree: a turn's shown messages and weights are its own.
        turns = {}
        for tree in TREES:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[tree]}") as http:
                body = await start_turn(
                    http, tokens["agent"], encode_id("Scope", dm), encode_id("Member", heavy)
                )
                turns[tree] = body["data"]["startTurn"]["token"]
        cases: list[tuple[str, str, str, bool]] = [
            ("messageSearch rare", MESSAGE_SEARCH, mk["rare"], False),
            ("messageSearch common", MESSAGE_SEARCH, mk["common"], False),
            ("messageSearch two words", MESSAGE_SEARCH, f"{mk['common']} {mk['mid']}", False),
            ("messageSearch phrase", MESSAGE_SEARCH, f'"{mk["phrase"]}"', False),
            ("messageSearch cjk", MESSAGE_SEARCH, mk["cjk"], False),
            ("historySearch rare", HISTORY_SEARCH, mk["rare"], True),
            ("historySearch common", HISTORY_SEARCH, mk["common"], True),
        ]
        results: dict[str, Any] = {}
        clients = {tree: KeepAlive(ports[tree]) for tree in TREES}
        for name, query, q, history in cases:
            latency: dict[str, list[float]] = {tree: [] for tree in TREES}
            database: dict[str, list[float]] = {tree: [] for tree in TREES}
            payload = json.dumps({"query": query, "variables": {"q": q}}).encode()
            for i in range(args.requests + 2):
                order = TREES if i % 2 == 0 else TREES[::-1]
                for tree in order:
                    token = turns[tree] if history else tokens["heavy"]
                    started = asyncio.get_running_loop().time()
                    status, headers, raw = await clients[tree].post(payload, token)
                    elapsed = (asyncio.get_running_loop().time() - started) * 1000
                    if status != 200 or json.loads(raw).get("errors"):
                        raise SystemExit(f"bench.interleaved: {tree}, {name}: {raw[:300]!r}")
                    if i >= 2:  # two rounds to warm both
                        latency[tree].append(elapsed)
                        database[tree].append(float(headers.get("x-recall-database-ms", "nan")))
            results[name] = {
                tree: {
                    "p50": round(statistics.median(latency[tree]), 2),
                    "p99": round(pct(latency[tree], 0.99), 2),
                    "db_p50": round(statistics.median(database[tree]), 2),
                }
                for tree in TREES
            }
            say(
                f"{name}: "
                + ", ".join(f"{tree} p50 {results[name][tree]['p50']} ms" for tree in TREES)
            )
        for c in clients.values():
            await c.close()
    finally:
        for s in servers:
            s.terminate()
            await s.wait()
    for tree in TREES:
        rare = results["messageSearch rare"][tree]["p50"]
        for name, row in results.items():
            if name.startswith("messageSearch"):
                row[tree]["to_rare"] = round(row[tree]["p50"] / rare, 2)
    return results


def cli(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.interleaved", description=__doc__.split("\n")[0]
    )
    p.add_argument("--reuse", required=True, metavar="NAME", help="database kept by bench.run")
    p.add_argument("--before", required=True, type=Path, help="a checkout of the tree before")
    p.add_argument("--messages", type=int, default=1_000_000, help="as the kept database's")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--requests", type=int, default=200, help="per tree and case")
    results = asyncio.run(run(p.parse_args(argv)))
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    cli()
