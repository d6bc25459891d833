"""The live-changes section of the benchmark (docs/changes.md): writes through `applyChanges`.

Called by bench.run while its `recall serve` is up, after the search cases (it adds messages,
so it runs last). With a connector token, over HTTP, one keep-alive connection per client:

  batch   applyChanges with `--live-batch-size` (100) postMessage changes per request,
          sequential: messages/s = posted / wall time, and per-request p50/p99;
  single  one postMessage per request, sequential: p50/p99;
  search  messageSearch (the rare and the common term, the heavy member) idle, then while a
          paced writer posts `--live-rate` (500) messages/s in batches of `--live-load-batch`
          (10, i.e. a request every 20 ms, scheduled on a fixed clock so a late request is
          followed at once by the next); the ratio of the p99s.

Posts go to the workspace's public channels, by one of each channel's people, with unique
keys `live-<seed>-<n>`: n continues after the live messages already in the database, so a run
on a database kept with --keep never replays a key (a replay would be `unchanged` and write
nothing). Message n's channel, author and body depend only on (seed, n). Bodies draw from the
generator's vocabulary and carry the marker terms at the fixture's rates (`orbit` ~25%,
`kestrel` ~1%, "cache stampede" ~0.5%), never the rare term, so the rare case keeps its 10
matches and the common case's newest matches are the posts just written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from bench.generate import _WORDS, COMMON, MID, PHRASE, RARE, WORKSPACE
from bench.harness import MESSAGE_SEARCH, KeepAlive, Stats, say, stats

APPLY_CHANGES = (
    "mutation($changes: [ChangeInput!]!) "
    "{ applyChanges(changes: $changes) { applied unchanged erasedMessages } }"
)
_LIVE_EPOCH = 1_798_761_600  # 2027-01-01T00:00:00Z, after every fixture message


@dataclass
class Load:
    """The background writer of the under-load measurement."""

    target_per_second: float
    batch: int
    interval_ms: float
    posted: int = 0
    seconds: float = 0.0
    achieved_per_second: float | None = None
    late_requests: int = 0  # requests that started more than one interval behind schedule
    request: Stats = field(default_factory=Stats)


@dataclass
class Live:
    batch_size: int
    # Messages in the workspace when the section starts (a database kept with --keep grows by
    # each run's posts) and the live posts among them (this run's keys continue after them).
    messages_before: int = 0
    keys_from: int = 0
    channels: int = 0
    batch: Stats = field(default_factory=Stats)
    batch_messages_per_second: float | None = None
    batch_posted: int = 0
    single: Stats = field(default_factory=Stats)
    single_posts_per_second: float | None = None
    # The newest common-term hit right after the batches: a post of this run, or the write
    # path does not index what it posts.
    fresh_hit: str | None = None
    search: dict[str, dict[str, Any]] = field(default_factory=dict)
    # 1-minute load averages when the section starts and ends: the two cores are shared with
    # whatever else runs on the machine, and a busy neighbour shows up here.
    loadavg_before: list[float] = field(default_factory=list)
    loadavg_after: list[float] = field(default_factory=list)
    error: str | None = None


class _Posts:
    """Deterministic posts: message n's channel, author, time and body depend on (seed, n)."""

    def __init__(self, seed: int, start: int, channels: list[tuple[str, list[str]]]) -> None:
        self.seed = seed
        self.n = start
        self.channels = channels
        self.vocab = [w for w in _WORDS if w not in (COMMON, MID, RARE)]

    def take(self, count: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(count):
            n = self.n
            self.n += 1
            rng = random.Random(f"live:{self.seed}:{n}")
            scope, people = self.channels[rng.randrange(len(self.channels))]
            words = rng.choices(self.vocab, k=rng.randint(5, 16))
            for term, rate in ((PHRASE, 0.005), (MID, 0.01), (COMMON, 0.25)):
                if rng.random() < rate:
                    words.insert(rng.randrange(len(words) + 1), term)
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_LIVE_EPOCH + n))
            out.append(
                {
                    "postMessage": {
                        "key": f"live-{self.seed}-{n:08d}",
                        "scope": scope,
                        "author": people[rng.randrange(len(people))],
                        "at": at,
                        "body": " ".join(words),
                    }
                }
            )
        return out


def _payload(changes: list[dict[str, Any]]) -> bytes:
    return json.dumps({"query": APPLY_CHANGES, "variables": {"changes": changes}}).encode()


async def _apply(client: KeepAlive, token: str, changes: list[dict[str, Any]]) -> dict[str, str]:
    """One applyChanges request; raises unless every change was applied."""
    status, headers, raw = await client.post(_payload(changes), token)
    body = json.loads(raw)
    if status != 200 or body.get("errors"):
        raise RuntimeError(f"HTTP {status}: {json.dumps(body)[:300]}")
    got = body["data"]["applyChanges"]
    if got["applied"] != len(changes):
        raise RuntimeError(f"applied {got['applied']} of {len(changes)}: {json.dumps(got)}")
    return headers


async def _time_posts(
    port: int, token: str, posts: _Posts, requests: int, size: int
) -> tuple[Stats, float | None, int]:
    """`requests` sequential applyChanges of `size` posts (after one warm request): the
    per-request stats, posted messages per second of wall time, and how many were posted."""
    client = KeepAlive(port)
    latencies: list[float] = []
    database_ms: list[float] = []
    statements: int | None = None
    errors = 0
    first_error: str | None = None
    posted = 0
    try:
        await _apply(client, token, posts.take(size))
        started = time.perf_counter()
        for _ in range(requests):
            changes = posts.take(size)  # built outside the timed span: the connector's work
            t = time.perf_counter()
            try:
                headers = await _apply(client, token, changes)
            except Exception as e:
                errors += 1
                first_error = first_error or f"{type(e).__name__}: {e}"[:400]
                await client.close()
                continue
            latencies.append((time.perf_counter() - t) * 1000)
            posted += size
            if "x-recall-statements" in headers:
                statements = int(headers["x-recall-statements"])
            if "x-recall-database-ms" in headers:
                database_ms.append(float(headers["x-recall-database-ms"]))
        wall = time.perf_counter() - started
    except Exception as e:  # the warm request
        return Stats(errors=1, error=f"{type(e).__name__}: {e}"[:400]), None, 0
    finally:
        await client.close()
    s = stats(latencies, errors, first_error)
    s.statements = statements
    if database_ms:
        s.database_p50_ms = round(statistics.median(database_ms), 2)
    return s, (round(posted / wall, 1) if posted else None), posted


class _Samples:
    """Latencies and response headers pooled over several timed blocks."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.database_ms: list[float] = []
        self.statements: int | None = None
        self.errors = 0
        self.first_error: str | None = None

    def ok(self, started: float, headers: dict[str, str]) -> None:
        self.latencies.append((time.perf_counter() - started) * 1000)
        if "x-recall-statements" in headers:
            self.statements = int(headers["x-recall-statements"])
        if "x-recall-database-ms" in headers:
            self.database_ms.append(float(headers["x-recall-database-ms"]))

    def failed(self, e: Exception) -> None:
        self.errors += 1
        self.first_error = self.first_error or f"{type(e).__name__}: {e}"[:400]

    def stats(self) -> Stats:
        s = stats(self.latencies, self.errors, self.first_error)
        s.statements = self.statements
        if self.database_ms:
            s.database_p50_ms = round(statistics.median(self.database_ms), 2)
        return s


async def _paced_writer(
    port: int,
    token: str,
    posts: _Posts,
    load: Load,
    samples: _Samples,
    stop: asyncio.Event,
    max_seconds: float,
) -> None:
    """Post `load.batch` messages every `load.interval_ms` on a fixed schedule until `stop` is
    set or `max_seconds` pass; one connection, one request at a time (a late request is sent
    at once, so the rate falls below the target only if the server cannot keep up). Adds to
    `load` and `samples`, so several blocks pool."""
    client = KeepAlive(port)
    interval = load.interval_ms / 1000
    started = time.perf_counter()
    k = 0
    try:
        while not stop.is_set():
            due = started + k * interval
            now = time.perf_counter()
            if now - started >= max_seconds:
                break
            if due > now:
                try:
                    await asyncio.wait_for(stop.wait(), due - now)
                    break
                except TimeoutError:
                    pass
            elif now - due > interval:
                load.late_requests += 1
            changes = posts.take(load.batch)
            t = time.perf_counter()
            try:
                samples.ok(t, await _apply(client, token, changes))
                load.posted += load.batch
            except Exception as e:
                samples.failed(e)
                await client.close()
            k += 1
    finally:
        await client.close()
    load.seconds = round(load.seconds + time.perf_counter() - started, 2)
    load.achieved_per_second = round(load.posted / load.seconds, 1) if load.seconds else None
    load.request = samples.stats()


async def _search(port: int, token: str, query: str, reps: int, samples: _Samples) -> None:
    """`reps` sequential messageSearch requests after one warm request (not counted)."""
    client = KeepAlive(port)
    payload = json.dumps({"query": MESSAGE_SEARCH, "variables": {"q": query}}).encode()
    try:
        for i in range(reps + 1):
            t = time.perf_counter()
            try:
                status, headers, raw = await client.post(payload, token)
                body = json.loads(raw)
                if status != 200 or body.get("errors"):
                    raise RuntimeError(f"HTTP {status}: {json.dumps(body)[:300]}")
                if i:
                    samples.ok(t, headers)
            except Exception as e:
                samples.failed(e)
                await client.close()
    finally:
        await client.close()


async def _public_channels(conn: asyncpg.Connection, ws: int) -> list[tuple[str, list[str]]]:
    rows = await conn.fetch(
        """
        select s.key, array_agg(a.key order by a.key) as people
        from scopes s
        join scope_members sm on sm.workspace_id = s.workspace_id and sm.scope_id = s.id
        join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
        where s.workspace_id = $1 and s.kind = 'channel' and s.visibility = 'public'
          and a.kind = 'member' and a.deactivated_at is null
        group by s.key order by s.key
        """,
        ws,
    )
    return [(r["key"], list(r["people"])) for r in rows]


async def measure_live(
    conn: asyncpg.Connection,
    port: int,
    args: argparse.Namespace,
    ws: int,
    member_token: str,
    terms: dict[str, str],
) -> Live:
    """The live-changes section; `terms` maps a case name to its query (the heavy member's)."""
    from app.data.tokens import issue_connector_token

    live = Live(batch_size=args.live_batch_size)
    live.loadavg_before = [round(x, 2) for x in os.getloadavg()]
    token = await issue_connector_token(conn, WORKSPACE)
    channels = await _public_channels(conn, ws)
    live.channels = len(channels)
    counts = await conn.fetchrow(
        "select count(*) as messages, count(*) filter (where key like $2) as live"
        " from messages where workspace_id = $1",
        ws,
        f"live-{args.seed}-%",
    )
    assert counts is not None
    live.messages_before, live.keys_from = counts["messages"], counts["live"]
    if not channels:
        live.error = "no public channel with a person in it"
        return live
    posts = _Posts(args.seed, live.keys_from, channels)

    # (a) batches
    live.batch, live.batch_messages_per_second, live.batch_posted = await _time_posts(
        port, token, posts, args.live_batches, args.live_batch_size
    )
    say(
        f"live: {args.live_batches} batches of {args.live_batch_size}: "
        f"{live.batch_messages_per_second} msg/s, p50 {live.batch.p50_ms} ms "
        f"p99 {live.batch.p99_ms} ms, {live.batch.statements} statements {live.batch.error or ''}"
    )
    client = KeepAlive(port)
    try:
        status, _, raw = await client.post(
            json.dumps(
                {"query": MESSAGE_SEARCH, "variables": {"q": COMMON}},
            ).encode(),
            member_token,
        )
        edges = json.loads(raw).get("data", {}).get("messageSearch", {}).get("edges", [])
        live.fresh_hit = edges[0]["node"]["key"] if status == 200 and edges else None
    finally:
        await client.close()
    if not (live.fresh_hit or "").startswith(f"live-{args.seed}-"):
        live.error = f"the newest '{COMMON}' hit after posting is {live.fresh_hit!r}, not a post"

    # (b) one post per request
    live.single, live.single_posts_per_second, _ = await _time_posts(
        port, token, posts, args.live_singles, 1
    )
    say(
        f"live: {args.live_singles} single posts: p50 {live.single.p50_ms} ms "
        f"p99 {live.single.p99_ms} ms, {live.single.statements} statements "
        f"{live.single.error or ''}"
    )

    # (c) messageSearch idle, then under a paced write load: `--live-rounds` alternating
    # blocks of each, pooled, so a disturbance from outside the benchmark (the machine is
    # shared) falls on both sides rather than on one.
    per_block = max(1, args.live_reps // args.live_rounds)
    for name, query in terms.items():
        idle, loaded, writes = _Samples(), _Samples(), _Samples()
        load = Load(
            target_per_second=args.live_rate,
            batch=args.live_load_batch,
            interval_ms=round(1000 * args.live_load_batch / args.live_rate, 3),
        )
        for _ in range(args.live_rounds):
            await _search(port, member_token, query, per_block, idle)
            stop = asyncio.Event()
            writer = asyncio.create_task(
                _paced_writer(
                    port, token, posts, load, writes, stop, max_seconds=args.live_max_seconds
                )
            )
            await asyncio.sleep(0.3)  # let the load reach its pace before the first search
            try:
                await _search(port, member_token, query, per_block, loaded)
            finally:
                stop.set()
                await writer
        row: dict[str, Any] = {"query": query, "idle": idle.stats(), "load": loaded.stats()}
        row["writer"] = load
        idle_p99, load_p99 = row["idle"].p99_ms, row["load"].p99_ms
        row["p99_ratio"] = round(load_p99 / idle_p99, 2) if idle_p99 and load_p99 else None
        row["p50_ratio"] = (
            round(row["load"].p50_ms / row["idle"].p50_ms, 2)
            if row["idle"].p50_ms and row["load"].p50_ms
            else None
        )
        live.search[name] = row
        say(
            f"live: messageSearch {name}: idle p99 {idle_p99} ms, under "
            f"{load.achieved_per_second} msg/s p99 {load_p99} ms (x{row['p99_ratio']}); "
            f"writer p50 {load.request.p50_ms} ms, {load.late_requests} late "
            f"{row['load'].error or ''}{load.request.error or ''}"
        )
    live.loadavg_after = [round(x, 2) for x in os.getloadavg()]
    return live


def failures(live: Live | None) -> list[str]:
    """What of the section errored (the smoke run fails on any)."""
    if live is None:
        return []
    out = [f"live: {live.error}"] if live.error else []
    for what, s in (("batch", live.batch), ("single", live.single)):
        if s.error or s.p50_ms is None:
            out.append(f"live {what}: {s.error or 'no request succeeded'}")
    for name, row in live.search.items():
        for what in ("idle", "load"):
            if row[what].error or row[what].p50_ms is None:
                out.append(
                    f"live search {name} {what}: {row[what].error or 'no request succeeded'}"
                )
        if row["writer"].request.error or not row["writer"].posted:
            out.append(f"live writer {name}: {row['writer'].request.error or 'posted nothing'}")
    return out


def table(live: Live) -> str:
    """The section's table and its three targets."""

    def f(v: float | int | None) -> str:
        return "-" if v is None else f"{v:,}"

    head = "| live case | n | p50 | p95 | p99 | stmts | db p50 | rate |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]

    def row(name: str, s: Stats, rate: str) -> None:
        lines.append(
            f"| {name} | {s.n} | {f(s.p50_ms)} | {f(s.p95_ms)} | {f(s.p99_ms)} | "
            f"{f(s.statements)} | {f(s.database_p50_ms)} | {rate} |"
        )

    row(
        f"applyChanges, {live.batch_size} posts",
        live.batch,
        f"{f(live.batch_messages_per_second)} msg/s",
    )
    row("applyChanges, 1 post", live.single, f"{f(live.single_posts_per_second)} msg/s")
    for name, r in live.search.items():
        w: Load = r["writer"]
        row(f"messageSearch {name}, idle", r["idle"], "-")
        row(
            f"messageSearch {name}, under load",
            r["load"],
            f"p99 ×{f(r['p99_ratio'])} idle",
        )
        row(
            f"  writer: {w.batch} posts every {w.interval_ms:g} ms",
            w.request,
            f"{f(w.achieved_per_second)} msg/s",
        )
    ratios = [r["p99_ratio"] for r in live.search.values() if r["p99_ratio"] is not None]
    worst = max(ratios) if ratios else None

    def verdict(ok: bool | None) -> str:
        return "-" if ok is None else ("met" if ok else "MISSED")

    rate, p50 = live.batch_messages_per_second, live.single.p50_ms
    lines += [
        "",
        f"targets: batches ≥ 3,000 msg/s: {f(rate)} "
        f"({verdict(None if rate is None else rate >= 3000)}); "
        f"single-post p50 ≤ 10 ms: {f(p50)} ({verdict(None if p50 is None else p50 <= 10)}); "
        f"search p99 under load ≤ 2× idle: ×{f(worst)} "
        f"({verdict(None if worst is None else worst <= 2)})",
    ]
    errors = failures(live)
    return "\n".join(lines + (["", "errors:", *errors] if errors else []))
