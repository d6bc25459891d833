"""The benchmark's harness: the requests it sends, its HTTP client, timing and statistics,
and `recall` itself as subprocesses (import, serve). Shared by bench.run, bench.live,
bench.ingest and the tools beside them; it imports none of them.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

RECALL = str(Path(sys.executable).with_name("recall"))

MESSAGE_SEARCH = """
query($q: String!, $author: AuthorFilter) {
  messageSearch(query: $q, first: 20, author: $author) {
    edges { cursor highlights { start end }
            node { id key body createdAt scope { key } author { ... on Member { key } ... on Agent { key } } } }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
  }
}"""
HISTORY_SEARCH = """
query($q: String!) {
  historySearch(query: $q, first: 8) {
    status count
    edges { node { text score why { name value } message { id body }
                   before { id body } after { id body } } }
  }
}"""
START_TURN = """
mutation($scope: ID!, $requester: ID!) {
  startTurn(scopeId: $scope, requesterId: $requester) { token }
}"""


@dataclass
class Stats:
    n: int = 0
    errors: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    rps: float | None = None
    statements: int | None = None
    # Median time a request spent waiting on PostgreSQL (its statements' round trips), as the
    # gateway measured it (x-recall-database-ms): the SQL part of an end-to-end latency.
    database_p50_ms: float | None = None
    # Median of each request's end-to-end time minus its database time: HTTP, GraphQL and the
    # gateway's Python (what the issue calls gateway overhead).
    gateway_p50_ms: float | None = None
    # CPU time of the gateway's processes per request (/proc, Linux): on a machine shared with
    # other work, steadier than wall-clock differences.
    gateway_cpu_ms: float | None = None
    hits: int | None = None
    error: str | None = None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def stats(latencies: list[float], errors: int, first_error: str | None) -> Stats:
    if not latencies:
        return Stats(errors=errors, error=first_error)
    return Stats(
        n=len(latencies),
        errors=errors,
        p50_ms=round(statistics.median(latencies), 2),
        p95_ms=pct(latencies, 0.95),
        p99_ms=pct(latencies, 0.99),
        error=first_error,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


class KeepAlive:
    """A minimal HTTP/1.1 keep-alive client, one connection, one request at a time.

    The benchmark's client runs on the two cores the gateway and PostgreSQL use, so its own cost
    is part of every latency it reports: httpx adds ~2 ms per request here (measured against
    this client on the same server), which would be the client's time, not Recall's."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, payload: bytes, token: str) -> tuple[int, dict[str, str], bytes]:
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self.streams
        head = (
            "POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        writer.write(head.encode() + payload)
        await writer.drain()
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = {
            k.strip().lower(): v.strip()
            for k, v in (h.split(":", 1) for h in lines[1:] if ":" in h)
        }
        body = await reader.readexactly(int(headers["content-length"]))
        return int(lines[0].split()[1]), headers, body

    async def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


def cpu_seconds(pids: list[int]) -> float | None:
    """User and system CPU time of these processes so far (Linux /proc), or None."""
    total = 0.0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return total


def serving_pids(proc: asyncio.subprocess.Process) -> list[int]:
    """The process that serves, and its workers when it is uvicorn's supervisor."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        children = []
    return [proc.pid, *(int(c) for c in children)]


async def time_http(
    port: int,
    make: Callable[[int], tuple[str, dict[str, Any], str]],
    reps: int,
    concurrency: int,
    check: Callable[[dict[str, Any]], int],
    pids: list[int] | None = None,
) -> Stats:
    """`reps` requests per worker, `concurrency` workers (a connection each); errors are
    counted, not raised."""
    latencies: list[float] = []
    errors = 0
    first_error: str | None = None
    statements: int | None = None
    hits: int | None = None
    database_ms: list[float] = []
    gateway_ms: list[float] = []
    clients = [KeepAlive(port) for _ in range(concurrency)]

    async def one(worker: int) -> None:
        nonlocal errors, first_error, statements, hits
        query, variables, token = make(worker)
        payload = json.dumps({"query": query, "variables": variables}).encode()
        t = time.perf_counter()
        try:
            status, headers, raw = await clients[worker].post(payload, token)
            body = json.loads(raw)
            elapsed = (time.perf_counter() - t) * 1000
            if status != 200 or body.get("errors"):
                raise RuntimeError(f"HTTP {status}: {json.dumps(body)[:300]}")
            hits = check(body["data"])
            latencies.append(elapsed)
            header = headers.get("x-recall-statements")
            statements = int(header) if header else statements
            if "x-recall-database-ms" in headers:
                database_ms.append(float(headers["x-recall-database-ms"]))
                gateway_ms.append(elapsed - float(headers["x-recall-database-ms"]))
        except Exception as e:
            errors += 1
            first_error = first_error or f"{type(e).__name__}: {e}"[:400]
            await clients[worker].close()

    async def worker(w: int) -> None:
        for _ in range(reps):
            await one(w)

    try:
        for w in range(concurrency):  # warm every connection, the pool and the caches
            await one(w)
        latencies.clear()
        database_ms.clear()
        gateway_ms.clear()
        errors, first_error = 0, None
        cpu_before = cpu_seconds(pids) if pids else None
        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - started
        cpu_after = cpu_seconds(pids) if pids else None
    finally:
        for c in clients:
            await c.close()
    s = stats(latencies, errors, first_error)
    s.statements = statements
    s.hits = hits
    if database_ms:
        s.database_p50_ms = round(statistics.median(database_ms), 2)
        s.gateway_p50_ms = round(statistics.median(gateway_ms), 2)
    if cpu_before is not None and cpu_after is not None and latencies:
        s.gateway_cpu_ms = round((cpu_after - cpu_before) * 1000 / len(latencies), 2)
    if concurrency > 1 and latencies:
        s.rps = round(len(latencies) / wall, 1)
    return s


async def start_turn(
    http: httpx.AsyncClient, agent_token: str, scope: str, requester: str
) -> dict[str, Any]:
    """startTurn by the agent in a conversation (`scope`, a Scope id) for one of its members
    (`requester`, a Member id): the response body."""
    r = await http.post(
        "/graphql",
        json={"query": START_TURN, "variables": {"scope": scope, "requester": requester}},
        headers={"authorization": f"Bearer {agent_token}"},
    )
    body: dict[str, Any] = r.json()
    return body


# --- recall as a subprocess --------------------------------------------------------------


async def import_file(dsn: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": dsn}
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        RECALL,
        "import",
        str(path),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"recall import failed: {err.decode().strip()[-500:]}")
    summary: dict[str, Any] = json.loads(out)
    summary["wall_seconds_with_process"] = round(time.perf_counter() - t, 2)
    return summary


async def serve(
    dsn: str, port: int, workers: int = 1, log: Path | None = None, tree: Path | None = None
) -> asyncio.subprocess.Process:
    """`recall serve` on `port`, once /healthz answers; its log (stderr) to `log` if given.
    `tree`: another checkout of Recall to serve (its own code, this environment's libraries)."""
    env = {
        **os.environ,
        "DATABASE_URL": dsn,
        "RECALL_EXPOSE_STATEMENT_COUNT": "1",
        "RECALL_POOL_MAX": "10",
    }
    command = [RECALL]
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
        command = [sys.executable, "-c", "from app.cli import main; main()"]
    proc = await asyncio.create_subprocess_exec(
        *command,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab") if log is not None else subprocess.DEVNULL,
        cwd=tree,
    )
    async with httpx.AsyncClient() as client:
        for _ in range(600):
            try:
                if (await client.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return proc
            except httpx.TransportError:
                pass
            if proc.returncode is not None:
                raise RuntimeError("recall serve exited during startup")
            await asyncio.sleep(0.1)
    proc.terminate()
    raise RuntimeError("recall serve did not start in 60 s")


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


class Discard(io.StringIO):
    # A StringIO (a TextIO to the type checker) that keeps nothing: only the summary is needed.
    def write(self, text: str) -> int:
        return len(text)
