"""The plans of the app's own search statements, as the app sends them.

    python -m bench.explain --reuse recall_bench_1m --messages 1000000 --out docs/results/plans-1m.md

Runs each benchmark case once through the GraphQL app (in process) against a database kept by
`bench.run --keep`, records every read statement the request sent with its parameters, and then
runs `EXPLAIN (ANALYZE, BUFFERS)` of each on a connection set up like the app's pool (custom
plans). Writes one Markdown section per case; stdout gets a JSON summary of execution times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.data.session import Session
from app.data.tokens import issue_actor_token
from app.db import PLANNER_SETTINGS, connect, resolve_database_url
from app.request.ids import encode_id
from app.server import create_app, in_process
from app.settings import Settings
from bench import generate as g
from bench.cluster import with_database
from bench.harness import HISTORY_SEARCH, MESSAGE_SEARCH, START_TURN

# Which statement is which, by a fragment only it contains.
_NAMES = (
    ("recall_token_reader", "token, reader and readiness"),
    (
        "rare_matches as materialized",
        "historySearch: window, counts, ranked page, neighbors, ledger",
    ),
    ("probe as materialized", "messageSearch: scan, page, audit row, hydration, highlights"),
    ("lower(a.key) = any", "operator values: people and agents"),
    ("lower(s.key) = any", "operator values: conversations"),
    ("candidates as materialized", "candidate scan"),
    ("ts_headline", "highlights"),
    ("join actors a on a.workspace_id = m.workspace_id", "hydration (messages, authors, scopes)"),
    ("update turns t set window_size", "historySearch: evidence and audit row"),
    ("from turns t", "the turn (row lock)"),
    ("insert into search_audit", "audit row"),
    ("insert into turn_evidence", "evidence"),
)

Recorded = list[tuple[str, tuple[Any, ...]]]

_TOKEN_HASH = re.compile(r"\\x[0-9a-f]{64}")


def _name(sql: str) -> str:
    return next((name for fragment, name in _NAMES if fragment in sql), sql.split()[0])


def _record_reads(into: Recorded) -> None:
    """Wrap the session's statement methods so that every statement is also kept for EXPLAIN
    (writes too: a search writes its audit row in the statement that reads)."""
    # fetch_planned_once: historySearch's statement (explained here with its values, a custom
    # plan; the app runs one generic plan per connection, which chooses the same access path
    # because the statement chooses it in SQL).
    for method in ("fetch", "fetchrow", "fetchval", "execute", "fetch_planned_once"):
        original: Callable[..., Awaitable[Any]] = getattr(Session, method)

        async def recording(self: Session, sql: str, *args: Any, _original: Any = original) -> Any:
            into.append((sql, args))
            return await _original(self, sql, *args)

        setattr(Session, method, recording)


class _RolledBack(Exception):
    pass


async def _explain(
    conn: asyncpg.Connection, sql: str, args: tuple[Any, ...]
) -> tuple[str, float, float]:
    """The plan, execution and planning milliseconds; what the statement wrote is rolled back."""
    rows: list[asyncpg.Record] = []
    try:
        async with conn.transaction():
            rows = await conn.fetch("explain (analyze, buffers) " + sql, *args)
            raise _RolledBack
    except _RolledBack:
        pass
    # A token's hash is not the token, but a document has no use for it either.
    plan = _TOKEN_HASH.sub(r"\\x<token hash>", "\n".join(r[0] for r in rows))

    def timing(label: str) -> float:
        return next(
            (float(r[0].split(":")[1].split()[0]) for r in rows if r[0].startswith(label)), 0.0
        )

    return plan, timing("Execution Time"), timing("Planning Time")


async def main(args: argparse.Namespace) -> None:
    dsn = with_database(resolve_database_url(Settings()), args.reuse)
    conn = await connect(dsn, server_settings=PLANNER_SETTINGS)
    heavy = await conn.fetchval("select id from actors where key = $1", g.PERSONA_HEAVY)
    dm = await conn.fetchval(
        "select id from scopes where key = $1", f"dm-{g.PERSONA_HEAVY}-{g.SCOUT_AGENT}"
    )
    member = await issue_actor_token(conn, "bench", "member", g.PERSONA_HEAVY)
    lowvis = await issue_actor_token(conn, "bench", "member", g.PERSONA_LOWVIS)
    agent = await issue_actor_token(conn, "bench", "agent", g.SCOUT_AGENT)
    cases: list[tuple[str, str, dict[str, Any], str]] = [
        ("messageSearch rare", MESSAGE_SEARCH, {"q": g.RARE}, member),
        ("messageSearch mid", MESSAGE_SEARCH, {"q": g.MID}, member),
        ("messageSearch common", MESSAGE_SEARCH, {"q": g.COMMON}, member),
        ("messageSearch two words", MESSAGE_SEARCH, {"q": f"{g.COMMON} {g.MID}"}, member),
        ("messageSearch phrase", MESSAGE_SEARCH, {"q": f'"{g.PHRASE}"'}, member),
        ("messageSearch CJK", MESSAGE_SEARCH, {"q": g.CJK_WORD}, member),
        (
            "messageSearch author",
            MESSAGE_SEARCH,
            {"q": g.COMMON, "author": {"kind": "MEMBER", "id": encode_id("Member", heavy)}},
            member,
        ),
        ("messageSearch low-visibility", MESSAGE_SEARCH, {"q": g.LOWVIS}, lowvis),
        ("messageSearch from: only", MESSAGE_SEARCH, {"q": "from:me"}, member),
        ("messageSearch in: only", MESSAGE_SEARCH, {"q": "in:#pub-0000"}, member),
    ]
    recorded: Recorded = []
    _record_reads(recorded)
    app = create_app(Settings(), dsn)
    sections: list[str] = []
    summary: dict[str, dict[str, float]] = {}
    async with (
        in_process(app) as asgi,
        httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi), base_url="http://x") as http,
    ):

        async def post(query: str, variables: dict[str, Any], token: str) -> dict[str, Any]:
            r = await http.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"authorization": f"Bearer {token}"},
            )
            body: dict[str, Any] = r.json()
            if body.get("errors"):
                raise SystemExit(f"bench.explain: {json.dumps(body['errors'])[:300]}")
            return body

        started = await post(
            START_TURN,
            {"scope": encode_id("Scope", dm), "requester": encode_id("Member", heavy)},
            agent,
        )
        turn = started["data"]["startTurn"]["token"]
        cases += [
            ("historySearch rare", HISTORY_SEARCH, {"q": g.RARE}, turn),
            ("historySearch common", HISTORY_SEARCH, {"q": g.COMMON}, turn),
        ]
        for name, query, variables, token in cases:
            await post(query, variables, token)  # warm caches, as in the benchmark
            recorded.clear()
            await post(query, variables, token)
            print(f"explaining {name}: {len(recorded)} read statements", file=sys.stderr)
            sections.append(f"## {name}\n")
            summary[name] = {}
            for sql, params in list(recorded):
                if sql.strip().lower() in ("begin", "commit"):
                    continue
                runs = [await _explain(conn, sql, params) for _ in range(args.repeat)]
                plan = runs[-1][0]
                # The fastest of the runs: on a shared machine, the least disturbed.
                ms = min(r[1] for r in runs)
                planning = min(r[2] for r in runs)
                label = _name(sql)
                summary[name][label] = round(summary[name].get(label, 0.0) + ms, 3)
                summary[name][f"{label} (planning)"] = round(
                    summary[name].get(f"{label} (planning)", 0.0) + planning, 3
                )
                sections.append(
                    f"### {label} ({ms:.2f} ms, planned in {planning:.2f} ms)\n\n```\n{plan}\n```\n"
                )
    await conn.close()
    header = (
        "# Plans of the search statements\n\n"
        f"Generated by `python -m bench.explain --reuse {args.reuse} --messages {args.messages}`"
        " (EXPLAIN (ANALYZE, BUFFERS) of each read statement one request sent, with its"
        " parameters, on a connection with the app's custom plans). Why each plan is what it"
        " is: docs/performance.md.\n\n"
    )
    args.out.write_text(header + "\n".join(sections))
    print(json.dumps(summary, indent=2))


def cli(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.explain", description=__doc__.split("\n")[0])
    p.add_argument("--reuse", required=True, metavar="NAME", help="database kept by bench.run")
    p.add_argument("--messages", type=int, default=1_000_000, help="for the header only")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="EXPLAIN each statement this many times; report the fastest (default: 1)",
    )
    asyncio.run(main(p.parse_args(argv)))


if __name__ == "__main__":
    cli()
