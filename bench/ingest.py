"""Ingest of big bodies, and searches while a connector writes (issue 22's probe, reproduced).

    python -m bench.ingest [--out FILE.json]      # ~2 minutes on 2 cores
    python -m bench.ingest --smoke

On a fresh database (`recall_ingest_<pid>` on DATABASE_URL's server, or the embedded one) with
a generated workspace (bench.generate) served by `recall serve`:

1. ingest: for posts of 1, 10 and 100 KB, `recall apply` (the real path, batches of 500) of a
   file of about --mb MB each: messages/s and MB/s, and the time per MB, which is flat when
   ingest is linear in body size;
2. search under a writer: messageSearch (a rare term, as the workspace's heaviest reader) p50
   and p99 idle, then while `recall apply` writes --load-posts posts of 100 KB; the ratio of
   the p50s, the requests that failed (a stalled search answered TIMEOUT before);
3. erasure: --erase-posts posts of --erase-kb KB by one person, then eraseMemberMessages with
   `recall apply`, timed, and messageSearch while it runs;
4. long hits: messageSearch(first: 100) of a word every 100 KB post of section 1 holds, as a
   result list asks (excerpts; no body where the server has excerpts) and with every hit's
   whole body: p50 and the response's size.

--sections picks some of them (section 4 needs 1's 100 KB posts).

Deterministic: bodies draw from a seeded vocabulary. Progress on stderr, JSON on stdout (and
--out).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from app.db import resolve_database_url
from app.settings import Settings
from bench.cluster import create_database, drop_database, with_database
from bench.generate import RARE, WORKSPACE, generate_file
from bench.harness import (
    MESSAGE_SEARCH,
    RECALL,
    KeepAlive,
    free_port,
    import_file,
    pct,
    say,
    serve,
)

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "ze",
    "pra",
    "sto",
    "qui",
    "bel",
    "dor",
    "fen",
    "gal",
    "hor",
    "jin",
    "mar",
    "nol",
    "pex",
    "ros",
]
_COMMON = [
    "the",
    "deploy",
    "service",
    "error",
    "queue",
    "retry",
    "customer",
    "payment",
    "and",
    "to",
    "of",
    "we",
    "it",
    "is",
]


def _body(rng: random.Random, vocabulary: list[str], size: int) -> str:
    """About `size` characters of chat-like text: common words, a large vocabulary, and an
    identifier now and then (the document vector's extra pass)."""
    words: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < 0.4:
            word = rng.choice(_COMMON)
        elif roll < 0.98:
            word = rng.choice(vocabulary)
        else:
            word = f"{rng.choice(vocabulary)}_{rng.choice(vocabulary)}.{rng.choice(vocabulary)}"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def _vocabulary(seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(20000)]


def _posts(
    prefix: str, count: int, kb: int, author: str, scope: str, seed: int
) -> Iterator[dict[str, Any]]:
    rng = random.Random(f"{prefix}-{seed}")
    vocabulary = _vocabulary(seed)
    for i in range(count):
        yield {
            "postMessage": {
                "key": f"{prefix}-{i}",
                "scope": scope,
                "author": author,
                "at": "2027-01-01T00:00:00Z",
                "body": _body(rng, vocabulary, kb * 1024),
            }
        }


def _write(path: Path, changes: Iterator[dict[str, Any]]) -> float:
    """Write NDJSON; its size in MB."""
    with path.open("w") as out:
        for change in changes:
            out.write(json.dumps(change) + "\n")
    return path.stat().st_size / 1e6


def _apply(dsn: str, path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": dsn}
    return subprocess.Popen(
        [RECALL, "apply", WORKSPACE, str(path), "--batch", "500"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _finished(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"recall apply failed ({proc.returncode})")
    summary: dict[str, Any] = json.loads(out)
    return summary


async def _search_while(
    port: int, token: str, proc: subprocess.Popen[bytes] | None, reps: int
) -> dict[str, Any]:
    """messageSearch of the rare term, `reps` times idle (proc None) or for as long as `proc`
    runs (at least 5 requests); latencies and failures."""
    client = KeepAlive(port)
    payload = json.dumps({"query": MESSAGE_SEARCH, "variables": {"q": RARE}}).encode()
    latencies: list[float] = []
    failed: list[str] = []
    try:
        await client.post(payload, token)  # warm
        while (proc is None and len(latencies) + len(failed) < reps) or (
            proc is not None and (proc.poll() is None or len(latencies) + len(failed) < 5)
        ):
            started = time.perf_counter()
            status, _, raw = await client.post(payload, token)
            elapsed = (time.perf_counter() - started) * 1000
            body = json.loads(raw)
            if status != 200 or body.get("errors"):
                failed.append(f"HTTP {status}: {json.dumps(body)[:200]}")
            else:
                latencies.append(elapsed)
    finally:
        await client.close()
    out: dict[str, Any] = {"n": len(latencies), "failed": len(failed)}
    if latencies:
        out.update(
            p50_ms=round(statistics.median(latencies), 2),
            p99_ms=pct(latencies, 0.99),
            max_ms=round(max(latencies), 2),
        )
    if failed:
        out["first_failure"] = failed[0]
    return out


LONG_LIST = """
query($q: String!) { messageSearch(query: $q, first: 100) {
  edges { cursor highlights { start end } excerpt { text start end highlights { start end } }
          node { id key createdAt } } } }"""
LONG_BODIES = """
query($q: String!) { messageSearch(query: $q, first: 100) {
  edges { cursor highlights { start end } node { id key createdAt body } } } }"""


async def _long_hits(port: int, token: str, query: str, reps: int) -> dict[str, Any]:
    client = KeepAlive(port)
    out: dict[str, Any] = {}
    try:
        for name, document in (("list", LONG_LIST), ("bodies", LONG_BODIES)):
            payload = json.dumps({"query": document, "variables": {"q": "deploy"}}).encode()
            latencies: list[float] = []
            size = 0
            for _ in range(reps + 1):
                started = time.perf_counter()
                status, _, raw = await client.post(payload, token)
                latencies.append((time.perf_counter() - started) * 1000)
                body = json.loads(raw)
                if status != 200 or body.get("errors"):
                    out[name] = {"error": json.dumps(body)[:300]}
                    break
                size = len(raw)
                hits = len(body["data"]["messageSearch"]["edges"])
            else:
                out[name] = {
                    "hits": hits,
                    "p50_ms": round(statistics.median(latencies[1:]), 1),
                    "response_kb": round(size / 1024, 1),
                }
    finally:
        await client.close()
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from app.data.tokens import issue_actor_token

    server_dsn = resolve_database_url(Settings())
    name = f"recall_ingest_{os.getpid()}"
    dsn = with_database(server_dsn, name)
    await drop_database(server_dsn, name)
    cluster = await create_database(server_dsn, name)
    results: dict[str, Any] = {
        "server": urlsplit(server_dsn).netloc.split("@")[-1] or "embedded",
        "cluster": cluster,
        "workspace_messages": args.messages,
    }
    proc = None
    try:
        with tempfile.TemporaryDirectory(prefix="recall-ingest-") as tmp:
            folder = Path(tmp)
            fixture = folder / "fixture.json"
            summary = generate_file(args.messages, args.seed, fixture, sys.stderr)
            await import_file(dsn, fixture)
            conn = await asyncpg.connect(dsn)
            try:
                heavy = summary.markers["heavy_member"]
                reader = await issue_actor_token(conn, WORKSPACE, "member", heavy)
                channel = await conn.fetchval(
                    "select s.key from scopes s join workspaces w on w.id = s.workspace_id"
                    " where w.key = $1 and s.kind = 'channel' and s.visibility = 'public'"
                    " order by s.id limit 1",
                    WORKSPACE,
                )
                author = await conn.fetchval(
                    "select a.key from actors a join scope_members sm"
                    " on sm.workspace_id = a.workspace_id and sm.actor_id = a.id"
                    " join scopes s on s.workspace_id = sm.workspace_id and s.id = sm.scope_id"
                    " where s.key = $1 and a.kind = 'member' order by a.id limit 1",
                    channel,
                )
            finally:
                await conn.close()
            port = free_port()
            proc = await serve(dsn, port)

            ingest: dict[str, Any] = {}
            for kb in args.sizes if "ingest" in args.sections else []:
                count = max(args.min_posts, int(args.mb * 1000 / kb))
                path = folder / f"posts-{kb}.ndjson"
                mb = _write(path, _posts(f"ingest{kb}", count, kb, author, channel, args.seed))
                say(f"ingest: {count} posts of {kb} KB ({mb:.1f} MB)")
                done = _finished(_apply(dsn, path))
                seconds = done["seconds"]
                ingest[f"{kb}KB"] = {
                    "posts": count,
                    "mb": round(mb, 2),
                    "seconds": seconds,
                    "messages_per_second": round(count / seconds, 1),
                    "mb_per_second": round(mb / seconds, 2),
                    "seconds_per_mb": round(seconds / mb, 3),
                }
                say(f"ingest {kb} KB: {ingest[f'{kb}KB']}")
            results["ingest"] = ingest
            if "long" in args.sections and 100 in args.sizes:
                say("long hits: messageSearch(first: 100) over the 100 KB posts")
                results["long_hits"] = await _long_hits(port, reader, "deploy", args.long_reps)
                say(f"long hits: {json.dumps(results['long_hits'])}")

            if "load" in args.sections:
                await _load(results, args, dsn, port, reader, folder, author, channel)
            if "erase" in args.sections:
                await _erase(results, args, dsn, port, reader, folder, channel)
    finally:
        if proc is not None:
            proc.terminate()
            await proc.wait()
        await drop_database(server_dsn, name)
    return results


async def _load(
    results: dict[str, Any], args: argparse.Namespace, dsn: str, port: int, reader: str,
    folder: Path, author: str, channel: str,
) -> None:  # fmt: skip
    say("search idle, then while 100 KB posts are applied")
    idle = await _search_while(port, reader, None, args.search_reps)
    path = folder / "load.ndjson"
    _write(path, _posts("load", args.load_posts, 100, author, channel, args.seed))
    writer = _apply(dsn, path)
    loaded = await _search_while(port, reader, writer, args.search_reps)
    load_summary = _finished(writer)
    results["search_under_apply"] = {
        "idle": idle,
        "during_apply": loaded,
        "apply": {"posts": args.load_posts, "seconds": load_summary["seconds"]},
        "p50_ratio": round(loaded["p50_ms"] / idle["p50_ms"], 2)
        if loaded.get("p50_ms") and idle.get("p50_ms")
        else None,
    }
    say(f"search under apply: {json.dumps(results['search_under_apply'])}")


async def _erase(
    results: dict[str, Any], args: argparse.Namespace, dsn: str, port: int, reader: str,
    folder: Path, channel: str,
) -> None:  # fmt: skip
    say(f"erasure: {args.erase_posts} posts of {args.erase_kb} KB by one person")
    path = folder / "erased.ndjson"
    person = "erased-person"
    changes: list[dict[str, Any]] = [
        {"upsertMember": {"key": person, "name": "Erased Person"}},
        {"addScopeMembers": {"scope": channel, "members": [person]}},
    ]
    _write(path, iter(changes))
    _finished(_apply(dsn, path))
    _write(path, _posts("erase", args.erase_posts, args.erase_kb, person, channel, args.seed))
    _finished(_apply(dsn, path))
    _write(path, iter([{"eraseMemberMessages": {"key": person}}]))
    started = time.perf_counter()
    eraser = _apply(dsn, path)
    during = await _search_while(port, reader, eraser, args.search_reps)
    erased = _finished(eraser)
    results["erasure"] = {
        "messages": erased["erased_messages"],
        "mb": round(args.erase_posts * args.erase_kb / 1000, 1),
        "seconds": round(time.perf_counter() - started, 2),
        "search_during": during,
    }
    say(f"erasure: {json.dumps(results['erasure'])}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=20_000, help="the workspace's size")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 100])
    p.add_argument("--mb", type=float, default=10.0, help="MB per ingest size")
    p.add_argument("--min-posts", type=int, default=50)
    p.add_argument("--load-posts", type=int, default=300, help="100 KB posts under search")
    p.add_argument("--erase-posts", type=int, default=2000)
    p.add_argument("--erase-kb", type=int, default=20)
    p.add_argument("--search-reps", type=int, default=200, help="idle messageSearch requests")
    p.add_argument("--long-reps", type=int, default=10, help="long-hit searches of each shape")
    p.add_argument(
        "--sections",
        type=lambda s: set(s.split(",")),
        default={"ingest", "long", "load", "erase"},
        help="comma-separated: ingest, long, load, erase (default: all)",
    )
    p.add_argument("--smoke", action="store_true", help="tiny sizes: every case runs")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.smoke:
        args.messages, args.mb, args.min_posts = 2000, 0.2, 5
        args.load_posts, args.erase_posts, args.erase_kb, args.search_reps = 5, 20, 5, 10
    results = asyncio.run(run(args))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    stalled = results.get("search_under_apply", {}).get("during_apply", {}).get("failed", 0)
    stalled += results.get("erasure", {}).get("search_during", {}).get("failed", 0)
    if stalled:
        raise SystemExit(f"bench.ingest: {stalled} searches failed while a connector wrote")


if __name__ == "__main__":
    main()
