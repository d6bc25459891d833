"""Live push under load (docs/live.md): how long an event takes from a connector's commit to the
clients of many open subscriptions, on one `recall serve` process and on several, and what the
subscriptions cost.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
      python -m bench.live_push --subscriptions 1000 --rate 1000 --seconds 10
    python -m bench.live_push --smoke      # CI: small, and fails if any event is missing

A workspace of `--messages` (bench.generate) is imported into a new database. For each process
count in `--processes` (default 1 and 2: `recall serve --workers N`), three phases of
`--seconds` each, one after the other on the same server:

  idle     messageSearch (the rare term, the heavy member) alone: its p50;
  writes   a connector posts `--rate` messages/s (applyChanges, batches of `--batch`, paced on a
           fixed clock) into one public channel; messageSearch beside it; the server's CPU;
  live     the same writes with `--subscriptions` open: WebSockets of `--per-socket`
           subscriptions each, one viewer (a member of that channel, a token each) per socket,
           half `messageSearchUpdates` of a word every post carries and half `scopeMessages` of
           the channel, so every subscription should receive every post (with --hit-every K,
           one post in K; the others go to another channel, hits of no subscription, and still
           wake every subscriber).

Latency is measured per delivered event: the client's receive time minus the moment the
connector's request that committed the post returned (its commit happened before that, so
this slightly understates; an event can even arrive first, counted as 0). Reported: p50, p95,
p99, max; events delivered of those expected (a subscription that misses a post is a failure);
memory per subscription (the serving processes' resident memory with the subscriptions open,
minus before, over their number); and the CPU of the per-event work: the serving processes'
and the whole machine's (PostgreSQL included) CPU seconds in `live` minus `writes`, per
delivered event. Progress on stderr, one JSON document on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Subprotocol

from app.data.tokens import issue_actor_token, issue_connector_token
from app.db import resolve_database_url
from app.request.ids import encode_id
from app.settings import Settings
from bench.cluster import create_database, drop_database, with_database
from bench.generate import PERSONA_HEAVY, RARE, generate_file
from bench.harness import (
    MESSAGE_SEARCH,
    KeepAlive,
    cpu_seconds,
    free_port,
    import_file,
    pct,
    say,
    serve,
    serving_pids,
)
from bench.live import APPLY_CHANGES

# Every post carries it, so every messageSearchUpdates subscription should see every post.
MARKER = "pushmarker"
_SUBSCRIBE_SEARCH = (
    "subscription($q: String!) { messageSearchUpdates(query: $q) "
    "{ event kind edge { node { key } } } }"
)
_SUBSCRIBE_SCOPE = (
    "subscription($scope: ID!) { scopeMessages(scopeId: $scope) { event kind message { key } } }"
)


@dataclass
class Phase:
    search_p50_ms: float | None = None
    search_p99_ms: float | None = None
    posted: int = 0
    posts_per_second: float = 0.0
    server_cpu_s: float | None = None
    machine_cpu_s: float | None = None


@dataclass
class Deliveries:
    """What the subscribers received: per post key, the receive times."""

    received: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, key: str, at: float) -> None:
        self.received.setdefault(key, []).append(at)


def _machine_cpu_s() -> float:
    """Busy CPU seconds of the whole machine so far (/proc/stat: all but idle and iowait)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(v) for v in fields]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


async def _search(port: int, token: str, stop: asyncio.Event) -> list[float]:
    client = KeepAlive(port)
    payload = json.dumps({"query": MESSAGE_SEARCH, "variables": {"q": RARE}}).encode()
    times: list[float] = []
    try:
        while not stop.is_set():
            t = time.perf_counter()
            status, _, raw = await client.post(payload, token)
            if status != 200 or json.loads(raw).get("errors"):
                raise RuntimeError(f"messageSearch failed: HTTP {status} {raw[:200]!r}")
            times.append((time.perf_counter() - t) * 1000)
            await asyncio.sleep(0.02)
    finally:
        await client.close()
    return times


async def _writer(
    port: int,
    token: str,
    scope: str,
    other_scope: str,
    authors: list[str],
    args: argparse.Namespace,
    start: int,
    committed: dict[str, float],
) -> int:
    """Post `rate` messages/s for `seconds` on a fixed clock; the commit time of each key."""
    client = KeepAlive(port)
    interval = args.batch / args.rate
    began = time.perf_counter()
    n = start
    try:
        for tick in range(int(args.seconds / interval)):
            due = began + tick * interval
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            keys = [f"push-{n + i:08d}" for i in range(args.batch)]
            # Every --hit-every'th post is a hit of every subscription (the watched channel,
            # the marker word); the others go to another channel without it: a commit wakes
            # every subscriber whether or not it has anything for them.
            hits = {key for i, key in enumerate(keys) if (n + i) % args.hit_every == 0}
            changes = [
                {
                    "postMessage": {
                        "key": key,
                        "scope": scope if key in hits else other_scope,
                        "author": authors[(n + i) % len(authors)],
                        "at": time.strftime(
                            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_830_297_600 + n + i)
                        ),
                        "body": f"{MARKER if key in hits else 'other'} live push number {n + i}",
                    }
                }
                for i, key in enumerate(keys)
            ]
            payload = json.dumps({"query": APPLY_CHANGES, "variables": {"changes": changes}})
            status, _, raw = await client.post(payload.encode(), token)
            body = json.loads(raw)
            if status != 200 or body.get("errors"):
                raise RuntimeError(f"applyChanges failed: HTTP {status} {raw[:300]!r}")
            done = time.perf_counter()
            for key in hits:
                committed[key] = done
            n += args.batch
    finally:
        await client.close()
    return n - start


async def _live_reads(port: int) -> dict[str, float]:
    """recall_live_reads_total by `what`, from the server's /metrics."""
    async with httpx.AsyncClient() as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    reads: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("recall_live_reads_total{"):
            labels, _, value = line.partition("} ")
            reads[labels.split('what="')[1].rstrip('"')] = float(value)
    return reads


async def _open_socket(
    port: int, token: str, subscriptions: list[tuple[str, dict[str, Any]]]
) -> ClientConnection:
    ws = await connect(
        f"ws://127.0.0.1:{port}/graphql",
        subprotocols=[Subprotocol("graphql-transport-ws")],
        max_queue=None,
    )
    await ws.send(
        json.dumps({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})
    )
    ack = json.loads(await ws.recv())
    if ack.get("type") != "connection_ack":
        raise RuntimeError(f"no connection_ack: {ack}")
    for i, (query, variables) in enumerate(subscriptions):
        await ws.send(
            json.dumps(
                {
                    "id": str(i),
                    "type": "subscribe",
                    "payload": {"query": query, "variables": variables},
                }
            )
        )
    return ws


async def _read(ws: ClientConnection, deliveries: Deliveries) -> None:
    with contextlib.suppress(Exception):
        async for raw in ws:
            at = time.perf_counter()
            message = json.loads(raw)
            if message.get("type") == "ping":
                await ws.send(json.dumps({"type": "pong"}))
                continue
            if message.get("type") != "next":
                deliveries.errors.append(json.dumps(message)[:300])
                continue
            payload = message["payload"]
            if payload.get("errors"):
                deliveries.errors.append(json.dumps(payload["errors"])[:300])
                continue
            update = next(iter(payload["data"].values()))
            node = (update.get("edge") or {}).get("node") or update.get("message")
            if update["kind"] == "ADDED" and node is not None:
                deliveries.add(node["key"], at)


async def _phase(
    port: int, pids: list[int], search_token: str, write: Any | None, seconds: float
) -> tuple[Phase, list[float]]:
    stop = asyncio.Event()
    searching = asyncio.create_task(_search(port, search_token, stop))
    cpu, machine = cpu_seconds(pids), _machine_cpu_s()
    began = time.perf_counter()
    posted = 0
    if write is not None:
        posted = await write()
    else:
        await asyncio.sleep(seconds)
    wall = time.perf_counter() - began
    cpu_after, machine_after = cpu_seconds(pids), _machine_cpu_s()
    stop.set()
    times = await searching
    phase = Phase(
        search_p50_ms=round(statistics.median(times), 2) if times else None,
        search_p99_ms=round(pct(times, 99), 2) if times else None,
        posted=posted,
        posts_per_second=round(posted / wall, 1),
        server_cpu_s=round(cpu_after - cpu, 2) if cpu is not None and cpu_after else None,
        machine_cpu_s=round(machine_after - machine, 2),
    )
    return phase, times


async def _one_server(
    dsn: str, processes: int, args: argparse.Namespace, setup: dict[str, Any], start: int
) -> tuple[dict[str, Any], int]:
    port = free_port()
    proc = await serve(dsn, port, workers=processes, log=args.server_log)
    pids = serving_pids(proc)
    result: dict[str, Any] = {"processes": processes}
    try:
        idle, _ = await _phase(port, pids, setup["search_token"], None, args.seconds)
        committed: dict[str, float] = {}

        async def write() -> int:
            nonlocal start
            count = await _writer(
                port,
                setup["connector"],
                setup["scope_key"],
                setup["other_scope_key"],
                setup["authors"],
                args,
                start,
                committed,
            )
            start += count
            return count

        writes, _ = await _phase(port, pids, setup["search_token"], write, args.seconds)
        rss_before = _rss_mb(pids)
        deliveries = Deliveries()
        sockets: list[ClientConnection] = []
        per_socket = args.per_socket
        for s in range(args.subscriptions // per_socket):
            subs = [
                (_SUBSCRIBE_SEARCH, {"q": MARKER})
                if (s * per_socket + i) % 2 == 0
                else (_SUBSCRIBE_SCOPE, {"scope": setup["scope_id"]})
                for i in range(per_socket)
            ]
            sockets.append(await _open_socket(port, setup["viewer_tokens"][s], subs))
            if (s + 1) % 20 == 0:
                say(f"{processes} process(es): {(s + 1) * per_socket} subscriptions open")
        readers = [asyncio.create_task(_read(ws, deliveries)) for ws in sockets]
        await asyncio.sleep(3)  # every subscription listening before the first post
        rss_after = _rss_mb(pids)
        committed.clear()
        reads_before = await _live_reads(port)
        live, _ = await _phase(port, pids, setup["search_token"], write, args.seconds)
        subscriptions = len(sockets) * per_socket
        expected = len(committed) * subscriptions
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            got = sum(len(v) for k, v in deliveries.received.items() if k in committed)
            if got >= expected:
                break
            await asyncio.sleep(0.5)
        reads_after = await _live_reads(port)
        for ws in sockets:
            await ws.close()
        for r in readers:
            r.cancel()
        latencies = [
            max(0.0, (at - committed[key]) * 1000)
            for key, ats in deliveries.received.items()
            if key in committed
            for at in ats
        ]
        delivered = len(latencies)
        commits = max(1, live.posted // args.batch)
        extra_server = (
            (live.server_cpu_s or 0) - (writes.server_cpu_s or 0)
            if live.server_cpu_s is not None
            else None
        )
        extra_machine = (live.machine_cpu_s or 0) - (writes.machine_cpu_s or 0)
        result.update(
            subscriptions=subscriptions,
            sockets=len(sockets),
            phases={"idle": idle.__dict__, "writes": writes.__dict__, "live": live.__dict__},
            expected_events=expected,
            delivered_events=delivered,
            errors=deliveries.errors[:5],
            latency_ms={
                "p50": round(statistics.median(latencies), 1) if latencies else None,
                "p95": round(pct(latencies, 95), 1) if latencies else None,
                "p99": round(pct(latencies, 99), 1) if latencies else None,
                "max": round(max(latencies), 1) if latencies else None,
            },
            # Statements live push sent per commit (recall_live_reads_total): one process's
            # /metrics, so for a 1-process run only.
            live_statements_per_commit=(
                {
                    what: round((reads_after[what] - reads_before.get(what, 0)) / commits, 2)
                    for what in reads_after
                }
                if processes == 1 and commits
                else None
            ),
            memory_kb_per_subscription=round((rss_after - rss_before) * 1024 / subscriptions, 1),
            server_cpu_ms_per_event=(
                round(extra_server * 1000 / delivered, 3)
                if extra_server is not None and delivered
                else None
            ),
            machine_cpu_ms_per_event=round(extra_machine * 1000 / delivered, 3)
            if delivered
            else None,
        )
        say(
            f"{processes} process(es): {delivered}/{expected} events, latency p50 "
            f"{result['latency_ms']['p50']} p99 {result['latency_ms']['p99']} ms; search p50 "
            f"idle {idle.search_p50_ms}, writes {writes.search_p50_ms}, live {live.search_p50_ms}"
        )
    finally:
        result["stop_seconds"] = await _stop(proc)
    return result, start


async def _stop(proc: asyncio.subprocess.Process) -> float | None:
    """SIGTERM, and how long the server took to exit (None: it did not within 30 s, and was
    killed): a server must stop promptly with subscribers open or just closed."""
    began = time.perf_counter()
    proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        say("the server did not exit within 30 s of SIGTERM: killed")
        proc.kill()
        await proc.wait()
        return None
    return round(time.perf_counter() - began, 2)


async def _setup(dsn: str, args: argparse.Namespace) -> dict[str, Any]:
    conn = await asyncpg.connect(dsn)
    try:
        channel = await conn.fetchrow(
            """
            select s.id, s.key, array_agg(a.key order by a.key) as people
            from scopes s
            join scope_members sm on sm.workspace_id = s.workspace_id and sm.scope_id = s.id
            join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
            where s.kind = 'channel' and s.visibility = 'public' and a.kind = 'member'
              and a.deactivated_at is null
            group by s.id, s.key order by count(*) desc, s.key limit 1
            """
        )
        assert channel is not None, "the fixture has a public channel with members"
        other = await conn.fetchval(
            "select key from scopes where kind = 'channel' and visibility = 'public'"
            " and key <> $1 order by key limit 1",
            channel["key"],
        )
        assert other is not None, "the fixture has a second public channel"
        people = list(channel["people"])
        sockets = args.subscriptions // args.per_socket
        viewers = [people[i % len(people)] for i in range(sockets)]
        return {
            "scope_key": channel["key"],
            "other_scope_key": other,
            "scope_id": encode_id("Scope", channel["id"]),
            "authors": people[:20],
            "connector": await issue_connector_token(conn, "bench"),
            "search_token": await issue_actor_token(conn, "bench", "member", PERSONA_HEAVY),
            # A token per socket: the per-token limit (RECALL_LIVE_MAX_PER_TOKEN) counts them.
            "viewer_tokens": [await issue_actor_token(conn, "bench", "member", v) for v in viewers],
            "channel_members": len(people),
        }
    finally:
        await conn.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    server_dsn = resolve_database_url(Settings())
    name = f"recall_live_{os.getpid()}"
    await drop_database(server_dsn, name)
    await create_database(server_dsn, name)
    dsn = with_database(server_dsn, name)
    out: dict[str, Any] = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "runs": [],
    }
    try:
        with tempfile.TemporaryDirectory(prefix="recall-live-push-") as tmp:
            say(f"generating and importing {args.messages} messages")
            path = Path(tmp) / "fixture.json"
            generate_file(args.messages, args.seed, path)
            out["imported"] = await import_file(dsn, path)
        setup = await _setup(dsn, args)
        out["channel_members"] = setup["channel_members"]
        start = 0
        for processes in args.processes:
            result, start = await _one_server(dsn, processes, args, setup, start)
            out["runs"].append(result)
    finally:
        await drop_database(server_dsn, name)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.live_push", description=__doc__.split("\n")[0]
    )
    p.add_argument("--messages", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--subscriptions", type=int, default=1000)
    p.add_argument("--per-socket", type=int, default=10)
    p.add_argument("--rate", type=float, default=1000.0, help="posts per second")
    p.add_argument("--batch", type=int, default=50, help="posts per applyChanges request")
    p.add_argument(
        "--hit-every",
        type=int,
        default=1,
        help="one post in this many is a hit of every subscription; the rest of none",
    )
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    p.add_argument("--server-log", type=Path, help="append the servers' logs (stderr) here")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="a small run for CI: 2,000 messages, 40 subscriptions, 100 posts/s, 2 s phases",
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.messages, args.subscriptions, args.rate, args.batch, args.seconds = (
            2_000, 40, 100.0, 10, 2.0,
        )  # fmt: skip
    if args.subscriptions % args.per_socket:
        p.error("--subscriptions must be a multiple of --per-socket")
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    failed = [r for r in result["runs"] if r["delivered_events"] < r["expected_events"]]
    if failed:
        say(f"FAILED: events missing in {len(failed)} run(s)")
    hung = [r for r in result["runs"] if r["stop_seconds"] is None]
    if hung:
        say(f"FAILED: {len(hung)} server(s) did not exit within 30 s of SIGTERM")
    if failed or hung:
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main(sys.argv[1:])
