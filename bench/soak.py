"""A bounded soak: a steady mix of search, history, replies and live changes against one
`recall serve`, with PostgreSQL restarted once, then a check that nothing was lost.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres python -m bench.soak --minutes 10

Creates `recall_soak_<pid>` on DATABASE_URL's server (127.0.0.1 / localhost only) with the demo
workspace, starts `recall serve` on it, and sends `--rate` requests a second on a fixed clock:

  search   messageSearch, member token (50%)
  history  historySearch, a turn token of a pool of turns (20%)
  reply    postReply, a fresh turn token each (10%)
  changes  applyChanges, 5 postMessage changes with unique keys, connector token (20%)

At `--restart-at` of the run it restarts PostgreSQL once (`--restart-cmd`; by default
`pg_ctlcluster --skip-systemctl-redirect 15 main restart` for 127.0.0.1:5432). Requests fail
while it is down; the server must recover by itself. At the end it reports requests, errors by
kind, p50/p99 per kind, the server's RSS after warm-up and at the end, and checks:

  - every acknowledged reply and every acknowledged change is in the database;
  - nothing unacknowledged is half-written: an applyChanges batch is all there or not at all,
    every reply has its provenance rows, every message its search document.

Exit status 1 when a check fails or RSS grew more than `--rss-bound-mb`. Prints a Markdown
table (docs/operations.md) and, with --json, the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from bench.cluster import with_database

TERMS = ["search filters", "auth tokens", "rate limiting", "postgres migration", "deploy",
         "incident", "release", "cache", "board games", "table tennis"]  # fmt: skip
WEIGHTS = {"search": 50, "history": 20, "reply": 10, "changes": 20}
CHANGES_PER_CALL = 5
SEARCH = "query S($q: String!) { messageSearch(query: $q, first: 10) { edges { node { key } } } }"
HISTORY = "query H($q: String!) { historySearch(query: $q) { status count } }"
REPLY = "mutation R($b: String!) { postReply(body: $b) { delivered message { key } } }"
APPLY = "mutation A($c: [ChangeInput!]!) { applyChanges(changes: $c) { applied unchanged } }"


@dataclass
class Outcomes:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    requests: Counter[str] = field(default_factory=Counter)
    acked_replies: list[str] = field(default_factory=list)
    acked_batches: list[list[str]] = field(default_factory=list)
    failed_batches: list[list[str]] = field(default_factory=list)


def _local(dsn: str) -> tuple[str, int]:
    parts = urlsplit(dsn)
    host, port = parts.hostname or "", parts.port or 5432
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"bench.soak: only a local PostgreSQL (127.0.0.1), not {host!r}")
    return host, port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _prepare(dsn: str, turns_needed: int) -> dict[str, Any]:
    from app.data.tokens import issue_actor_token, issue_connector_token
    from app.db import connect
    from app.demo import ensure_demo
    from app.history_search.turns import start_turn_by_keys
    from app.migrate import migrate

    conn = await connect(dsn)
    try:
        await migrate(conn)
        info = await ensure_demo(conn, progress=sys.stderr)
        member = await issue_actor_token(conn, info.workspace_key, "member", info.member_key)
        connector = await issue_connector_token(conn, info.workspace_key)
        turns = []
        for _ in range(turns_needed):
            turns.append(
                await start_turn_by_keys(
                    conn,
                    workspace_key=info.workspace_key,
                    agent_key=info.agent_key,
                    scope_key=info.agent_dm_key,
                    requester_key=info.member_key,
                    trigger_key=None,
                    window=5,
                )
            )
        authors = await conn.fetch(
            """
            select s.key as scope, a.key as author from scopes s
            join scope_members sm on sm.workspace_id = s.workspace_id and sm.scope_id = s.id
            join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
            where s.visibility = 'public' and s.parent_id is null and a.kind = 'member'
            order by s.key, a.key
            """
        )
    finally:
        await conn.close()
    return {
        "member": member,
        "connector": connector,
        "history_turns": turns[:20],
        "reply_turns": turns[20:],
        "posts": [(r["scope"], r["author"]) for r in authors],
    }


class Load:
    def __init__(self, http: httpx.AsyncClient, setup: dict[str, Any], out: Outcomes) -> None:
        self.http, self.setup, self.out = http, setup, out
        self.rng = random.Random(7)
        self.n = 0
        self.replies = iter(setup["reply_turns"])

    async def one(self, kind: str) -> None:
        self.n += 1
        n = self.n
        keys: list[str] = []
        variables: dict[str, Any]
        if kind == "search":
            token, query, variables = self.setup["member"], SEARCH, {"q": self.rng.choice(TERMS)}
        elif kind == "history":
            token = self.rng.choice(self.setup["history_turns"])
            query, variables = HISTORY, {"q": self.rng.choice(TERMS)}
        elif kind == "reply":
            token = next(self.replies, None)
            if token is None:
                kind, token, query, variables = "search", self.setup["member"], SEARCH, {"q": "x"}
            else:
                query, variables = REPLY, {"b": f"soak reply {n}"}
        else:
            posts = []
            for i in range(CHANGES_PER_CALL):
                scope, author = self.rng.choice(self.setup["posts"])
                key = f"soak-{os.getpid()}-{n}-{i}"
                keys.append(key)
                posts.append({"postMessage": {"key": key, "scope": scope, "author": author,
                              "at": "2026-12-01T10:00:00Z", "body": f"soak change {n} {i} cache"}})  # fmt: skip
            token, query, variables = self.setup["connector"], APPLY, {"c": posts}
        self.out.requests[kind] += 1
        started = time.perf_counter()
        try:
            response = await self.http.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"authorization": f"Bearer {token}"},
            )
            body = response.json()
            error = None
            if response.status_code != 200:
                error = f"http {response.status_code}"
            elif body.get("errors"):
                error = body["errors"][0].get("extensions", {}).get("code", "error")
        except (httpx.HTTPError, ValueError) as e:
            error, body = type(e).__name__, {}
        self.out.latencies[kind].append(time.perf_counter() - started)
        if error is not None:
            self.out.errors[f"{kind}: {error}"] += 1
            if kind == "changes":
                self.out.failed_batches.append(keys)
            return
        data = body["data"]
        if kind == "reply" and data["postReply"]["delivered"]:
            self.out.acked_replies.append(data["postReply"]["message"]["key"])
        elif kind == "changes":
            self.out.acked_batches.append(keys)


async def _restart(command: str, record: dict[str, Any]) -> None:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*shlex.split(command))
    record["exit"] = await proc.wait()
    record["seconds"] = round(time.perf_counter() - started, 2)
    print(f"bench.soak: PostgreSQL restarted at {record['at_s']} s ({record['seconds']} s,"
          f" exit {record['exit']})", file=sys.stderr)  # fmt: skip


def _pick(rng: random.Random) -> str:
    return rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]


async def _run(
    args: argparse.Namespace, base: str, setup: dict[str, Any], pid: int
) -> dict[str, Any]:
    out = Outcomes()
    seconds = args.minutes * 60
    restart_at = seconds * args.restart_at
    limits = httpx.Limits(max_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=15, limits=limits) as http:
        load = Load(http, setup, out)
        rng = random.Random(11)
        pending: set[asyncio.Task[None]] = set()
        gate = asyncio.Semaphore(args.concurrency)
        start = time.perf_counter()
        rss_start = None
        restart: dict[str, Any] = {}
        restarting: asyncio.Task[None] | None = None
        tick = 0
        while (now := time.perf_counter() - start) < seconds:
            if rss_start is None and now >= min(20.0, seconds / 10):
                rss_start = _rss_mb(pid)
            if not restart and now >= restart_at:
                # In the background: the load keeps its pace while PostgreSQL is down.
                restart = {"at_s": round(now, 1)}
                restarting = asyncio.create_task(_restart(args.restart_cmd, restart))
            tick += 1
            await asyncio.sleep(max(0.0, start + tick / args.rate - time.perf_counter()))
            if gate.locked():
                out.errors["client: skipped (concurrency full)"] += 1
                continue

            async def guarded(kind: str) -> None:
                async with gate:
                    await load.one(kind)

            task = asyncio.create_task(guarded(_pick(rng)))
            pending.add(task)
            task.add_done_callback(pending.discard)
            if tick % int(args.rate * 30) == 0:
                print(f"bench.soak: {now:.0f} s, {sum(out.requests.values())} requests,"
                      f" {sum(out.errors.values())} errors, RSS {_rss_mb(pid):.0f} MiB", file=sys.stderr)  # fmt: skip
        await asyncio.gather(*pending)
        if restarting is not None:
            await restarting
        wall = time.perf_counter() - start
    return {"out": out, "wall": wall, "rss_start": rss_start or 0.0, "rss_end": _rss_mb(pid),
            "restart": restart}  # fmt: skip


async def _verify(dsn: str, out: Outcomes) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        present = {
            r["key"]
            for r in await conn.fetch("select key from messages where key like 'soak-%' or key like 'reply-%'")
        }  # fmt: skip
        lost_replies = [k for k in out.acked_replies if k not in present]
        lost_changes = [k for b in out.acked_batches for k in b if k not in present]
        half_batches = [b for b in out.failed_batches if 0 < sum(k in present for k in b) < len(b)]
        replies_without_sources = await conn.fetchval(
            """
            select count(*) from messages m where m.key like 'reply-%' and m.has_provenance
              and not exists (select 1 from message_sources s
                              where s.workspace_id = m.workspace_id and s.message_id = m.id)
            """
        )
        without_document = await conn.fetchval(
            """
            select count(*) from messages m where not m.deleted and not exists (
                select 1 from search_documents d
                where d.workspace_id = m.workspace_id and d.message_id = m.id)
            """
        )
    finally:
        await conn.close()
    return {
        "acknowledged_replies": len(out.acked_replies),
        "acknowledged_changes": sum(len(b) for b in out.acked_batches),
        "lost_replies": len(lost_replies),
        "lost_changes": len(lost_changes),
        "half_written_batches": len(half_batches),
        "unacknowledged_batches": len(out.failed_batches),
        "unacknowledged_batches_written": sum(
            all(k in present for k in b) for b in out.failed_batches
        ),
        "replies_without_provenance": replies_without_sources,
        "messages_without_search_document": without_document,
    }


def _p(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _table(result: dict[str, Any], checks: dict[str, Any], args: argparse.Namespace) -> str:
    out: Outcomes = result["out"]
    total = sum(out.requests.values())
    every = [x for v in out.latencies.values() for x in v]
    rows = [
        "| | requests | errors | p50 ms | p99 ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for kind in WEIGHTS:
        errors = sum(c for k, c in out.errors.items() if k.startswith(kind + ":"))
        rows.append(f"| {kind} | {out.requests[kind]} | {errors} | {_p(out.latencies[kind], 0.5):.1f} |"
                    f" {_p(out.latencies[kind], 0.99):.1f} |")  # fmt: skip
    rows.append(
        f"| **all** | {total} | {sum(out.errors.values())} | {_p(every, 0.5):.1f} | {_p(every, 0.99):.1f} |"
    )
    growth = result["rss_end"] - result["rss_start"]
    lines = [
        f"{args.minutes:g} min at {args.rate:g} req/s ({result['wall']:.0f} s wall), PostgreSQL"
        f" restarted once at {result['restart'].get('at_s')} s (took {result['restart'].get('seconds')} s).",
        "",
        *rows,
        "",
        "| errors by kind | count |",
        "| --- | ---: |",
        *([f"| {k} | {c} |" for k, c in sorted(out.errors.items())] or ["| (none) | 0 |"]),
        "",
        "| check | value |",
        "| --- | ---: |",
        f"| server RSS after warm-up / at end (MiB) | {result['rss_start']:.0f} / {result['rss_end']:.0f} |",
        f"| RSS growth (bound {args.rss_bound_mb} MiB) | {growth:+.1f} MiB |",
        *[f"| {k.replace('_', ' ')} | {v} |" for k, v in checks.items()],
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--minutes", type=float, default=3, help="how long to run (default: 3)")
    p.add_argument("--rate", type=float, default=20, help="requests per second (default: 20)")
    p.add_argument(
        "--concurrency", type=int, default=16, help="requests in flight at most (default: 16)"
    )
    p.add_argument(
        "--restart-at",
        type=float,
        default=0.4,
        help="fraction of the run at which PostgreSQL restarts (default: 0.4)",
    )
    p.add_argument(
        "--restart-cmd",
        default=None,
        help="command restarting PostgreSQL (default: pg_ctlcluster --skip-systemctl-redirect 15 main restart, for 127.0.0.1:5432 only)",
    )
    p.add_argument(
        "--rss-bound-mb", type=float, default=64, help="most RSS growth allowed (default: 64)"
    )
    p.add_argument("--keep", action="store_true", help="keep the soak database")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = p.parse_args(argv)

    server_dsn = os.environ.get("DATABASE_URL")
    if not server_dsn:
        raise SystemExit("bench.soak: set DATABASE_URL to a local PostgreSQL server (127.0.0.1)")
    _host, port = _local(server_dsn)
    if args.restart_cmd is None:
        if port != 5432:
            raise SystemExit(
                "bench.soak: --restart-cmd is needed for a server other than 127.0.0.1:5432"
            )
        args.restart_cmd = "pg_ctlcluster --skip-systemctl-redirect 15 main restart"
    name = f"recall_soak_{os.getpid()}"
    dsn = with_database(server_dsn, name)
    turns_needed = 20 + int(args.rate * args.minutes * 60 * WEIGHTS["reply"] / 100 * 1.3) + 10

    async def create() -> None:
        admin = await asyncpg.connect(server_dsn)
        await admin.execute(f'create database "{name}"')
        await admin.close()

    async def drop() -> None:
        admin = await asyncpg.connect(server_dsn)
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()

    asyncio.run(create())
    server = None
    try:
        setup = asyncio.run(_prepare(dsn, turns_needed))
        http_port = _free_port()
        env = {**os.environ, "DATABASE_URL": dsn, "RECALL_LOG_LEVEL": "warning",
               "RECALL_POOL_MAX": "10"}  # fmt: skip
        log = open(Path(tempfile.gettempdir()) / f"{name}.log", "w")  # noqa: SIM115
        server = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(http_port)],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        base = f"http://127.0.0.1:{http_port}"
        for _ in range(200):
            try:
                if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit(f"bench.soak: the server did not become ready (log: {log.name})")
        result = asyncio.run(_run(args, base, setup, server.pid))
        for _ in range(100):  # the server must be ready again by itself
            try:
                if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        checks = asyncio.run(_verify(dsn, result["out"]))
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        if not args.keep:
            asyncio.run(drop())
    print(_table(result, checks, args))
    growth = result["rss_end"] - result["rss_start"]
    if args.json:
        out: Outcomes = result["out"]
        args.json.write_text(json.dumps({
            "minutes": args.minutes, "rate": args.rate, "restart": result["restart"],
            "requests": dict(out.requests), "errors": dict(out.errors),
            "p99_ms": {k: _p(v, 0.99) for k, v in out.latencies.items()},
            "rss_mb": [result["rss_start"], result["rss_end"]], "checks": checks,
        }, indent=2) + "\n")  # fmt: skip
    failed = (
        checks["lost_replies"] or checks["lost_changes"] or checks["half_written_batches"]
        or checks["replies_without_provenance"] or checks["messages_without_search_document"]
        or growth > args.rss_bound_mb
    )  # fmt: skip
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
