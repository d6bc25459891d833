"""messageSearch's statement planned for every call (the app's way) against planned once
(a generic plan), on a database kept by bench.run: the same statements, taken from the app's
own requests, run alternately on a connection of each kind; medians in ms and whether both
returned the same rows (docs/performance.md, Planning).

    python -m bench.plan_modes --reuse recall_bench_<pid> [--runs 12]

Progress on stderr, JSON on stdout. Every run is rolled back (the statement writes its audit
row).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from typing import Any

import asyncpg
import httpx

from app.data.tokens import issue_actor_token
from app.db import GENERIC_PLANNER_SETTINGS, PLANNER_SETTINGS, connect, resolve_database_url
from app.request.ids import encode_id
from app.server import create_app, in_process
from app.settings import Settings
from bench import generate as g
from bench.cluster import with_database
from bench.explain import Recorded, _record_reads
from bench.harness import MESSAGE_SEARCH

WARM = 2


async def _timed(conn: asyncpg.Connection, sql: str, args: tuple[Any, ...]) -> tuple[float, Any]:
    transaction = conn.transaction()
    await transaction.start()
    try:
        started = time.perf_counter()
        rows = await conn.fetch(sql, *args)
        # An audit row's id is new at every run: every other column must match.
        kept = [tuple(v for k, v in r.items() if "audit" not in k) for r in rows]
        return (time.perf_counter() - started) * 1000, kept
    finally:
        await transaction.rollback()


async def main(args: argparse.Namespace) -> None:
    dsn = with_database(resolve_database_url(Settings()), args.reuse)
    custom = await connect(dsn, server_settings=PLANNER_SETTINGS)
    generic = await connect(dsn, server_settings=GENERIC_PLANNER_SETTINGS)
    heavy = await custom.fetchval("select id from actors where key = $1", g.PERSONA_HEAVY)
    member = await issue_actor_token(custom, "bench", "member", g.PERSONA_HEAVY)
    lowvis = await issue_actor_token(custom, "bench", "member", g.PERSONA_LOWVIS)
    author = {"kind": "MEMBER", "id": encode_id("Member", heavy)}
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("rare", {"q": g.RARE}, member),
        ("mid", {"q": g.MID}, member),
        ("common", {"q": g.COMMON}, member),
        ("two words", {"q": f"{g.COMMON} {g.MID}"}, member),
        ("phrase", {"q": f'"{g.PHRASE}"'}, member),
        ("cjk", {"q": g.CJK_WORD}, member),
        ("author", {"q": g.COMMON, "author": author}, member),
        ("lowvis", {"q": g.LOWVIS}, lowvis),
        ("from: only", {"q": "from:me"}, member),
        ("in: only", {"q": "in:#pub-0000"}, member),
    ]
    recorded: Recorded = []
    _record_reads(recorded)
    statements: dict[str, tuple[str, tuple[Any, ...]]] = {}
    app = create_app(Settings(), dsn)
    async with (
        in_process(app) as asgi,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi), base_url="http://x") as http,
    ):
        for name, variables, token in cases:
            recorded.clear()
            await http.post(
                "/graphql",
                json={"query": MESSAGE_SEARCH, "variables": variables},
                headers={"authorization": f"Bearer {token}"},
            )
            # The page's statement: the longest the request sent.
            sql, params = max(recorded, key=lambda r: len(r[0]))
            statements[name] = (sql, tuple(params))
    out: dict[str, dict[str, Any]] = {}
    for name, (sql, params) in statements.items():
        times: dict[str, list[float]] = {"custom": [], "generic": []}
        rows: dict[str, Any] = {}
        for n in range(args.runs):
            order = [("custom", custom), ("generic", generic)]
            for label, conn in order if n % 2 == 0 else order[::-1]:
                ms, rows[label] = await _timed(conn, sql, params)
                times[label].append(ms)
        out[name] = {
            **{label: round(statistics.median(t[WARM:]), 2) for label, t in times.items()},
            "same_rows": rows["custom"] == rows["generic"],
        }
        print(f"bench.plan_modes: {name}: {out[name]}", file=sys.stderr)
    await custom.close()
    await generic.close()
    print(json.dumps(out, indent=2))


def cli(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.plan_modes", description=__doc__.split("\n")[0]
    )
    p.add_argument("--reuse", required=True, metavar="NAME", help="database kept by bench.run")
    p.add_argument("--runs", type=int, default=12, help="runs per plan mode and case")
    asyncio.run(main(p.parse_args(argv)))


if __name__ == "__main__":
    cli()
