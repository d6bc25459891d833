"""Where the gateway's Python time goes: cProfile of messageSearch or historySearch requests
served in this process (the real ASGI app, HTTP handling and pool; no socket) against a kept
benchmark database.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
      python -m bench.profile --reuse recall_bench_<pid> --case common --requests 300

The functions with the most own time and the most cumulative time go to stderr; a JSON summary
(requests, CPU per request with and without the profiler) to stdout. The profiler roughly
doubles the cost of a Python call, so read the shares, not the milliseconds. It counts CPU time
(time.process_time), so the shares hold on a machine shared with other work.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import sys
import time
from typing import Any

from app.db import connect, resolve_database_url
from app.settings import Settings
from bench.cluster import with_database
from bench.generate import (
    CJK_WORD,
    COMMON,
    LOWVIS,
    MID,
    PERSONA_HEAVY,
    PERSONA_LOWVIS,
    PHRASE,
    RARE,
    SCOUT_AGENT,
)
from bench.harness import HISTORY_SEARCH, MESSAGE_SEARCH, START_TURN
from bench.in_process import graphql

_CASES: dict[str, tuple[str, str | None]] = {
    "rare": (RARE, PERSONA_HEAVY),
    "mid": (MID, PERSONA_HEAVY),
    "common": (COMMON, PERSONA_HEAVY),
    "phrase": (f'"{PHRASE}"', PERSONA_HEAVY),
    "cjk": (CJK_WORD, PERSONA_HEAVY),
    "lowvis": (LOWVIS, PERSONA_LOWVIS),
    "history-rare": (RARE, None),
    "history-common": (COMMON, None),
}


async def _run(dsn: str, case: str, requests: int, top: int) -> dict[str, Any]:
    from app.data.tokens import issue_actor_token

    term, persona = _CASES[case]
    conn = await connect(dsn)
    try:
        if persona is not None:
            token = await issue_actor_token(conn, "bench", "member", persona)
        else:
            agent = await issue_actor_token(conn, "bench", "agent", SCOUT_AGENT)
            # The agent's DM with the heavy persona, as bench.explain's turn.
            scope = await conn.fetchval(
                "select id from scopes where key = $1", f"dm-{PERSONA_HEAVY}-{SCOUT_AGENT}"
            )
            requester = await conn.fetchval("select id from actors where key = $1", PERSONA_HEAVY)
    finally:
        await conn.close()
    async with graphql(dsn) as gql:
        if persona is None:
            from app.request.ids import encode_id

            turn = await gql(
                START_TURN,
                {
                    "scope": encode_id("Scope", scope),
                    "requester": encode_id("Member", requester),
                },
                agent,
            )
            token = turn["startTurn"]["token"]
            query, variables = HISTORY_SEARCH, {"q": term}
        else:
            query, variables = MESSAGE_SEARCH, {"q": term}
        for _ in range(20):  # warm: parse/validation caches, the pool, the plans' catalogs
            await gql(query, variables, token)
        plain = time.process_time()
        for _ in range(requests):
            await gql(query, variables, token)
        plain = (time.process_time() - plain) / requests
        # CPU time, not wall time: waiting on PostgreSQL (epoll) or on a busy machine's
        # scheduler is not the gateway's work.
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        profiled = time.process_time()
        for _ in range(requests):
            await gql(query, variables, token)
        profiled = (time.process_time() - profiled) / requests
        profiler.disable()
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(top)
        print(f"--- by {order} ---\n{out.getvalue()}", file=sys.stderr)
    return {
        "case": case,
        "requests": requests,
        "cpu_ms_per_request": round(plain * 1000, 3),
        "cpu_ms_per_request_profiled": round(profiled * 1000, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse", required=True, help="a database kept by bench.run --keep")
    parser.add_argument("--case", choices=sorted(_CASES), default="common")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    dsn = with_database(resolve_database_url(Settings()), args.reuse)
    print(json.dumps(asyncio.run(_run(dsn, args.case, args.requests, args.top))))


if __name__ == "__main__":
    main()
