"""The search benchmark: one fresh database, one generated workspace, one table of latencies.

    python -m bench.run --messages 100000 --out results.json
    python -m bench.run --smoke

Creates `recall_bench_<pid>` on DATABASE_URL's server (or the embedded one), generates the
fixture (bench.generate), imports it with `recall import` (a subprocess: the real path), starts
`recall serve` as a subprocess on a free port, and measures messageSearch and historySearch over
HTTP at concurrency 1 and 8, the bare SQL floor, and baselines (ILIKE, an expression GIN index
on messages without the sidecar, N+1 hydration, ts_rank_cd over every match), all with the same
eligibility predicates; then live changes (bench.live: applyChanges in batches and one post at
a time, and messageSearch while a connector posts). A case that errors is recorded and the run
goes on. The database is dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from app.api.ids import encode_id
from app.data.eligibility import eligible
from app.db import PLANNER_SETTINGS, resolve_database_url
from app.settings import Settings
from bench.cluster import create_database, drop_database, with_database
from bench.generate import Summary, generate, generate_file

if TYPE_CHECKING:
    from bench.live import Live

_RECALL = str(Path(sys.executable).with_name("recall"))

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

# --- SQL: the floor and the baselines -----------------------------------------------------
# $1-$4 are the destination (app.data.eligibility's convention); eligibility is the app's own
# fragment, so the floor and the baselines pay for exactly the rule the app applies.
_ELIGIBLE = eligible("m")
_AUTHOR = "and {alias}.author_id = any($6::bigint[])"
FLOOR_SQL = f"""
select d.message_id from search_documents d
join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id
where d.workspace_id = $1 and d.tsv @@ recall_search_tsquery($5::text[], '{{}}', false)
  {{author}} and {_ELIGIBLE}
order by d.global_seq desc, d.scope_id, d.seq desc, d.message_id
limit 20"""
RANK_SQL = f"""
select d.message_id, ts_rank_cd(d.tsv, q) as rank
from search_documents d
join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id,
     recall_search_tsquery($5::text[], '{{}}', false) q
where d.workspace_id = $1 and d.tsv @@ q {{author}} and {_ELIGIBLE}
order by rank desc, d.global_seq desc
limit 20"""
ILIKE_SQL = f"""
select m.id from messages m
where m.workspace_id = $1 and m.body ilike '%' || $5 || '%' {{author}} and {_ELIGIBLE}
order by m.global_seq desc
limit 20"""
EXPR_SQL = f"""
select m.id from messages m
where m.workspace_id = $1
  and recall_document_tsvector(m.body) @@ recall_search_tsquery($5::text[], '{{}}', false)
  {{author}} and {_ELIGIBLE}
order by m.global_seq desc
limit 20"""
EXPR_INDEX = (
    "create index if not exists bench_messages_expr_tsv on messages"
    " using gin (recall_document_tsvector(body))"
)
HYDRATE_ONE = "select id, key, body, created_at, scope_id, author_id from messages where workspace_id = $1 and id = $2"


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


@dataclass
class Case:
    name: str
    query: str
    persona: str  # heavy | lowvis
    author: bool = False


@dataclass
class Results:
    messages: int
    seed: int
    server: str
    # True if the server is a Citus coordinator (the database distributed over its workers).
    cluster: bool = False
    generate: dict[str, Any] = field(default_factory=dict)
    imported: dict[str, Any] = field(default_factory=dict)
    sizes: dict[str, Any] = field(default_factory=dict)
    visibility: dict[str, Any] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    gateway_rss_mb: float | None = None
    # Concurrency 8 against `recall serve --workers 1` and `--workers 2`, alternating.
    throughput: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The numbers issue 15's targets name, from the rows above.
    targets: dict[str, Any] = field(default_factory=dict)
    # Writes through applyChanges and search under them (bench.live); None if not run.
    live: Live | None = None
    seconds: float = 0.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def _stats(latencies: list[float], errors: int, first_error: str | None) -> Stats:
    if not latencies:
        return Stats(errors=errors, error=first_error)
    return Stats(
        n=len(latencies),
        errors=errors,
        p50_ms=round(statistics.median(latencies), 2),
        p95_ms=_pct(latencies, 0.95),
        p99_ms=_pct(latencies, 0.99),
        error=first_error,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


# --- timing helpers -------------------------------------------------------------------------


async def _time_sql(
    conn: asyncpg.Connection, sql: str, args: list[Any], reps: int
) -> tuple[Stats, int]:
    latencies: list[float] = []
    hits = 0
    try:
        await conn.fetch(sql, *args)  # warm
        for _ in range(reps):
            t = time.perf_counter()
            rows = await conn.fetch(sql, *args)
            latencies.append((time.perf_counter() - t) * 1000)
            hits = len(rows)
    except asyncpg.PostgresError as e:
        return Stats(errors=1, error=f"{type(e).__name__}: {e}"), 0
    s = _stats(latencies, 0, None)
    s.hits = hits
    return s, hits


async def _time_n_plus_one(conn: asyncpg.Connection, sql: str, args: list[Any], reps: int) -> Stats:
    """The floor query, then one statement per hit (naive per-hit hydration)."""
    latencies: list[float] = []
    try:
        for _ in range(reps + 1):
            t = time.perf_counter()
            ids = [r[0] for r in await conn.fetch(sql, *args)]
            for i in ids:
                await conn.fetchrow(HYDRATE_ONE, args[0], i)
            latencies.append((time.perf_counter() - t) * 1000)
    except asyncpg.PostgresError as e:
        return Stats(errors=1, error=f"{type(e).__name__}: {e}")
    s = _stats(latencies[1:], 0, None)
    s.statements = 1 + len(ids)
    return s


class _KeepAlive:
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


def _cpu_seconds(pids: list[int]) -> float | None:
    """User and system CPU time of these processes so far (Linux /proc), or None."""
    total = 0.0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return total


def _serving_pids(proc: asyncio.subprocess.Process) -> list[int]:
    """The process that serves, and its workers when it is uvicorn's supervisor."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    except OSError:
        children = []
    return [proc.pid, *(int(c) for c in children)]


async def _time_http(
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
    clients = [_KeepAlive(port) for _ in range(concurrency)]

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
        cpu_before = _cpu_seconds(pids) if pids else None
        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - started
        cpu_after = _cpu_seconds(pids) if pids else None
    finally:
        for c in clients:
            await c.close()
    s = _stats(latencies, errors, first_error)
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


# --- the run --------------------------------------------------------------------------------


async def _import(dsn: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "DATABASE_URL": dsn}
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        _RECALL,
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


async def _serve(dsn: str, port: int, workers: int = 1) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "DATABASE_URL": dsn,
        "RECALL_EXPOSE_STATEMENT_COUNT": "1",
        "RECALL_POOL_MAX": "10",
    }
    proc = await asyncio.create_subprocess_exec(
        _RECALL,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


async def run(args: argparse.Namespace) -> Results:
    started = time.perf_counter()
    settings = Settings()
    server_dsn = resolve_database_url(settings)
    name = args.reuse or f"recall_bench_{os.getpid()}"
    dsn = with_database(server_dsn, name)
    results = Results(args.messages, args.seed, urlsplit(server_dsn).netloc.split("@")[-1])
    if not args.reuse:
        # On a Citus coordinator: on every node, distributed by the import's migration.
        await drop_database(server_dsn, name)
        results.cluster = await create_database(server_dsn, name)
    try:
        if args.reuse:
            # The same size and seed generate the same workspace: only its summary is needed.
            _say(f"reusing database {name}; regenerating its fixture's summary")
            summary = generate(args.messages, args.seed, _Discard())
            results.generate = {k: getattr(summary, k) for k in summary.__dataclass_fields__}
            results.imported = {"reused_database": name}
        else:
            summary = await _generate_and_import(args, dsn, results)
        # Planned like the gateway's pool (app.db: custom plans, no JIT): a generic plan after
        # five runs, or a JIT compilation, would make the floor and the baselines measure what
        # the app never does.
        conn = await asyncpg.connect(dsn, server_settings=PLANNER_SETTINGS)
        try:
            await conn.execute("vacuum analyze")
            await _measure(conn, dsn, args, summary, results)
        finally:
            await conn.close()
    finally:
        if args.keep or args.reuse:
            _say(f"kept database {name}")
        else:
            await drop_database(server_dsn, name)
    results.seconds = round(time.perf_counter() - started, 1)
    return results


class _Discard(io.StringIO):
    # A StringIO (a TextIO to the type checker) that keeps nothing: only the summary is needed.
    def write(self, text: str) -> int:
        return len(text)


async def _generate_and_import(args: argparse.Namespace, dsn: str, results: Results) -> Summary:
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        path = Path(tmp) / "fixture.json"
        _say(f"generating {args.messages} messages (seed {args.seed})")
        summary = generate_file(args.messages, args.seed, path, sys.stderr)
        results.generate = {k: getattr(summary, k) for k in summary.__dataclass_fields__}
        _say(f"generated in {summary.seconds} s; importing with `recall import`")
        results.imported = await _import(dsn, path)
        _say(f"imported: {results.imported.get('messages_per_second')} messages/s")
    return summary


async def _ids(conn: asyncpg.Connection, kind_keys: list[tuple[str, str]]) -> dict[str, int]:
    rows = await conn.fetch(
        "select key, id from actors where key = any($1::text[])", [k for _, k in kind_keys]
    )
    return {r["key"]: r["id"] for r in rows}


async def _measure(
    conn: asyncpg.Connection,
    dsn: str,
    args: argparse.Namespace,
    summary: Summary,
    results: Results,
) -> None:
    from app.data.tokens import issue_actor_token

    mk = summary.markers
    ws, ns = await conn.fetchrow(
        "select id, default_namespace_id from workspaces where key = 'bench'"
    ) or (0, 0)
    actors = await _ids(
        conn, [("m", mk["heavy_member"]), ("m", mk["lowvis_member"]), ("a", mk["scout_agent"])]
    )
    heavy, lowvis, scout = (
        actors[mk["heavy_member"]],
        actors[mk["lowvis_member"]],
        actors[mk["scout_agent"]],
    )
    tokens = {
        "heavy": await issue_actor_token(conn, "bench", "member", mk["heavy_member"]),
        "lowvis": await issue_actor_token(conn, "bench", "member", mk["lowvis_member"]),
        "agent": await issue_actor_token(conn, "bench", "agent", mk["scout_agent"]),
    }
    dest = {p: [ws, "members", ns, [pk]] for p, pk in (("heavy", heavy), ("lowvis", lowvis))}
    results.sizes = await _sizes(conn)
    results.visibility = await _visibility(conn, dest, mk, scout, ws)
    _say(f"visibility: {json.dumps(results.visibility)}")

    cases = [
        Case("rare", mk["rare"], "heavy"),
        Case("mid", mk["mid"], "heavy"),
        Case("common", mk["common"], "heavy"),
        Case("phrase", f'"{mk["phrase"]}"', "heavy"),
        Case("cjk", mk["cjk"], "heavy"),
        Case("author", mk["common"], "heavy", author=True),
        Case("lowvis", mk["lowvis"], "lowvis"),
    ]
    reps = args.reps
    # SQL: floor and baselines, same eligibility.
    for c in [] if args.live_only else cases:
        terms = [mk["phrase"]] if c.name == "phrase" else [c.query]
        base = [*dest[c.persona], terms]
        raw = mk["phrase"] if c.name == "phrase" else c.query
        author = [heavy] if c.author else None
        a_sql = _AUTHOR if c.author else ""
        d_sql = a_sql.replace("{alias}", "d")
        row = results.rows.setdefault(f"messageSearch {c.name}", {})
        floor_args = [*base, author] if author else base
        row["sql_floor"], _ = await _time_sql(
            conn, FLOOR_SQL.replace("{author}", d_sql), floor_args, reps
        )
        row["rank_all_ts_rank_cd"], _ = await _time_sql(
            conn, RANK_SQL.replace("{author}", d_sql), floor_args, max(3, reps // 3)
        )
        ilike_args = [*dest[c.persona], raw, *([author] if author else [])]
        row["ilike"], _ = await _time_sql(
            conn,
            ILIKE_SQL.replace("{author}", a_sql.replace("{alias}", "m")),
            ilike_args,
            max(3, reps // 5),
        )
        row["n_plus_one"] = await _time_n_plus_one(
            conn, FLOOR_SQL.replace("{author}", d_sql), floor_args, max(3, reps // 3)
        )
        _say(
            f"sql {c.name}: floor p50 {row['sql_floor'].p50_ms} ms, ilike p50 {row['ilike'].p50_ms} ms"
        )

    # HTTP: end to end through `recall serve`.
    port = _free_port()
    serve = await _serve(dsn, port)
    pids = _serving_pids(serve)
    # Cases measured again at concurrency 8 against one and two worker processes.
    loads: dict[str, tuple[Callable[[int], tuple[str, dict[str, Any], str]], Any]] = {}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", timeout=60, limits=httpx.Limits(max_connections=16)
        ) as http:
            author_filter = {"kind": "MEMBER", "id": encode_id("Member", heavy)}
            for c in [] if args.live_only else cases:
                variables: dict[str, Any] = {"q": c.query}
                if c.author:
                    variables["author"] = author_filter
                token = tokens[c.persona]
                row = results.rows[f"messageSearch {c.name}"]

                def make(
                    _w: int, v: dict[str, Any] = variables, t: str = token
                ) -> tuple[str, dict[str, Any], str]:
                    return MESSAGE_SEARCH, v, t

                def edges(data: dict[str, Any]) -> int:
                    return len(data["messageSearch"]["edges"])

                row["http_c1"] = await _time_http(port, make, reps, 1, edges, pids)
                row["http_c8"] = await _time_http(port, make, max(2, reps // 4), 8, edges, pids)
                if c.name in ("rare", "common"):
                    loads[f"messageSearch {c.name}"] = (make, edges)
                _say(
                    f"http {c.name}: p50 {row['http_c1'].p50_ms} ms, c8 {row['http_c8'].rps} req/s {row['http_c1'].error or ''}"
                )

            # historySearch: one turn per worker, started with the agent token.
            turn_tokens: list[str] = []
            scout_dm = await conn.fetchval(
                "select id from scopes where workspace_id = $1 and key = $2", ws, mk["scout_dm"]
            )
            start_error: str | None = None
            for _ in range(9):
                r = await http.post(
                    "/graphql",
                    json={
                        "query": START_TURN,
                        "variables": {
                            "scope": encode_id("Scope", scout_dm),
                            "requester": encode_id("Member", heavy),
                        },
                    },
                    headers={"authorization": f"Bearer {tokens['agent']}"},
                )
                body = r.json()
                if body.get("errors") or not body.get("data"):
                    start_error = json.dumps(body)[:400]
                    break
                turn_tokens.append(body["data"]["startTurn"]["token"])
            for name, term in (
                () if args.live_only else (("rare", mk["rare"]), ("common", mk["common"]))
            ):
                row = results.rows.setdefault(f"historySearch {name}", {})
                if start_error:
                    row["http_c1"] = Stats(errors=1, error=f"startTurn: {start_error}")
                    continue

                def hmake(w: int, q: str = term) -> tuple[str, dict[str, Any], str]:
                    return HISTORY_SEARCH, {"q": q}, turn_tokens[w % len(turn_tokens)]

                def hits(data: dict[str, Any]) -> int:
                    return int(data["historySearch"]["count"])

                row["http_c1"] = await _time_http(port, hmake, reps, 1, hits, pids)
                row["http_c8"] = await _time_http(port, hmake, max(2, reps // 4), 8, hits, pids)
                loads[f"historySearch {name}"] = (hmake, hits)
                _say(
                    f"http history {name}: p50 {row['http_c1'].p50_ms} ms {row['http_c1'].error or ''}"
                )
        if loads and not args.skip_workers:
            results.throughput = await _throughput(dsn, port, pids, loads, args)
        if not args.skip_live:
            # Last: it adds messages (docs/changes.md), so it never changes what the cases
            # above measured in this run.
            from bench.live import measure_live

            results.live = await measure_live(
                conn,
                port,
                args,
                ws,
                tokens["heavy"],
                {"rare": mk["rare"], "common": mk["common"]},
            )
        results.gateway_rss_mb = _rss_mb(serve.pid)
    finally:
        serve.terminate()
        await serve.wait()

    # Expression GIN index on messages (no sidecar): built last, it only adds an index.
    if not (args.skip_expression_index or args.live_only):
        _say("building the expression GIN index baseline")
        t = time.perf_counter()
        try:
            await conn.execute(EXPR_INDEX)
            await conn.execute("analyze messages")
            results.sizes["expression_index_build_seconds"] = round(time.perf_counter() - t, 1)
            results.sizes["expression_index"] = await conn.fetchval(
                "select pg_relation_size('bench_messages_expr_tsv')"
            )
        except asyncpg.PostgresError as e:
            results.sizes["expression_index_error"] = str(e)
        for c in cases:
            terms = [mk["phrase"]] if c.name == "phrase" else [c.query]
            a_sql = _AUTHOR if c.author else ""
            expr_args = [*dest[c.persona], terms, *([[heavy]] if c.author else [])]
            row = results.rows[f"messageSearch {c.name}"]
            row["expression_gin"], _ = await _time_sql(
                conn,
                EXPR_SQL.replace("{author}", a_sql.replace("{alias}", "m")),
                expr_args,
                max(3, reps // 3),
            )
        # Dropped again: a kept database is measured again with --reuse and explained by
        # bench.explain, and an index the app does not have would be planned for in every
        # statement that reads messages (~0.5 ms of a historySearch's planning).
        await conn.execute("drop index if exists bench_messages_expr_tsv")


async def _throughput(
    dsn: str,
    port: int,
    pids: list[int],
    loads: dict[str, tuple[Callable[[int], tuple[str, dict[str, Any], str]], Any]],
    args: argparse.Namespace,
) -> dict[str, dict[str, Any]]:
    """Concurrency 8 against the one-process server and a `--workers 2` one, in alternating
    rounds per case, so that other work on the machine falls on both; requests/s over all
    rounds' requests and wall time, latency percentiles pooled."""
    two_port = _free_port()
    two = await _serve(dsn, two_port, workers=2)
    out: dict[str, dict[str, Any]] = {}
    try:
        two_pids = _serving_pids(two)
        for name, (make, check) in loads.items():
            per: dict[str, list[Stats]] = {"workers_1": [], "workers_2": []}
            for _ in range(args.worker_rounds):
                for label, p, ps in (("workers_1", port, pids), ("workers_2", two_port, two_pids)):
                    per[label].append(
                        await _time_http(p, make, max(2, args.reps // 4), 8, check, ps)
                    )
            row: dict[str, Any] = {}
            for label, runs in per.items():
                rps = [r.rps for r in runs if r.rps]
                row[label] = {
                    "rps": round(statistics.median(rps), 1) if rps else None,
                    "p50_ms": statistics.median([r.p50_ms for r in runs if r.p50_ms] or [0]),
                    "errors": sum(r.errors for r in runs),
                    "gateway_cpu_ms": statistics.median(
                        [r.gateway_cpu_ms for r in runs if r.gateway_cpu_ms] or [0]
                    ),
                    "error": next((r.error for r in runs if r.error), None),
                }
            one_rps, two_rps = row["workers_1"]["rps"], row["workers_2"]["rps"]
            row["ratio"] = round(two_rps / one_rps, 2) if one_rps and two_rps else None
            out[name] = row
            _say(f"throughput {name}: 1 worker {one_rps} req/s, 2 workers {two_rps} req/s")
    finally:
        two.terminate()
        await two.wait()
    return out


async def _sizes(conn: asyncpg.Connection) -> dict[str, Any]:
    row = await conn.fetchrow(
        """
        select pg_total_relation_size('messages') as messages_total,
               pg_table_size('messages') as messages_table,
               pg_total_relation_size('search_documents') as sidecar_total,
               pg_table_size('search_documents') as sidecar_table,
               pg_relation_size('search_documents_tsv') as sidecar_gin,
               pg_relation_size('search_documents_recency') as sidecar_recency
        """
    )
    assert row is not None
    return dict(row)


async def _visibility(
    conn: asyncpg.Connection,
    dest: dict[str, list[Any]],
    mk: dict[str, str],
    scout: int,
    ws: int,
) -> dict[str, Any]:
    """What each persona may read, so the cases say what they measure."""
    out: dict[str, Any] = {}
    total = await conn.fetchval("select count(*) from messages")
    for persona, d in dest.items():
        readable = await conn.fetchval(
            f"select count(*) from messages m where m.workspace_id = $1 and {_ELIGIBLE}", *d
        )
        out[f"{persona}_readable_fraction"] = round(readable / total, 4)
    lowvis_matches = await conn.fetchrow(
        f"""
        select count(*) as matches, count(*) filter (where {_ELIGIBLE}) as readable
        from search_documents d join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id
        where d.workspace_id = $1 and d.tsv @@ recall_search_tsquery(array[$5], '{{}}', false)
        """,
        *dest["lowvis"],
        mk["lowvis"],
    )
    assert lowvis_matches is not None
    out["lowvis_term_matches"] = lowvis_matches["matches"]
    out["lowvis_term_readable"] = lowvis_matches["readable"]
    perspective = await conn.fetchval(
        """
        select count(*) from messages m join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
        where m.workspace_id = $1 and exists (select 1 from scope_members sm
            where sm.workspace_id = $1 and sm.scope_id = coalesce(s.parent_id, s.id) and sm.actor_id = $2)
        """,
        ws,
        scout,
    )
    out["scout_perspective_fraction"] = round(perspective / total, 4)
    return out


# --- output ---------------------------------------------------------------------------------

_COLUMNS = [
    ("http_c1", "p50"),
    ("http_c1", "p95"),
    ("http_c1", "p99"),
    ("http_c8", "p50"),
    ("http_c8", "rps"),
    ("http_c1", "stmts"),
    ("http_c1", "db p50"),
    ("http_c1", "gw p50"),
    ("http_c1", "gw cpu"),
    ("sql_floor", "p50"),
    ("expression_gin", "p50"),
    ("rank_all_ts_rank_cd", "p50"),
    ("ilike", "p50"),
    ("n_plus_one", "p50"),
]


def _cell(s: Stats | None, what: str) -> str:
    if s is None:
        return "-"
    if s.error and s.p50_ms is None:
        return "ERR"
    value = {
        "p50": s.p50_ms,
        "p95": s.p95_ms,
        "p99": s.p99_ms,
        "rps": s.rps,
        "stmts": s.statements,
        "db p50": s.database_p50_ms,
        "gw p50": s.gateway_p50_ms,
        "gw cpu": s.gateway_cpu_ms,
    }[what]
    return "-" if value is None else f"{value}"


def table(results: Results) -> str:
    head = ["case"] + [f"{m} {w}" for m, w in _COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in results.rows.items():
        cells = [name] + [_cell(row.get(m), w) for m, w in _COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    errors = [
        f"- {name} / {m}: {s.error}"
        for name, row in results.rows.items()
        for m, s in row.items()
        if s.error
    ]
    return "\n".join(lines + (["", "errors:", *errors] if errors else []))


def targets(results: Results) -> dict[str, Any]:
    """What issue 15's targets are checked against: per case end to end p50/p99, database and
    gateway time, statements; the rare term against ILIKE; concurrency 8 with 1 and 2 workers."""
    out: dict[str, Any] = {"cases": {}}
    for name, row in results.rows.items():
        c1 = row.get("http_c1")
        if c1 is None or c1.p50_ms is None:
            continue
        out["cases"][name] = {
            "p50_ms": c1.p50_ms,
            "p99_ms": c1.p99_ms,
            "db_p50_ms": c1.database_p50_ms,
            "gateway_p50_ms": c1.gateway_p50_ms,
            "gateway_cpu_ms": c1.gateway_cpu_ms,
            "statements": c1.statements,
        }
    rare = results.rows.get("messageSearch rare", {})
    ilike, e2e = rare.get("ilike"), rare.get("http_c1")
    if ilike and e2e and ilike.p50_ms and e2e.p50_ms:
        out["rare_vs_ilike_end_to_end"] = round(ilike.p50_ms / e2e.p50_ms, 1)
        if e2e.database_p50_ms:
            out["rare_vs_ilike_database"] = round(ilike.p50_ms / e2e.database_p50_ms, 1)
    out["throughput_c8"] = {
        name: {
            "workers_1_rps": row["workers_1"]["rps"],
            "workers_2_rps": row["workers_2"]["rps"],
            "ratio": row["ratio"],
        }
        for name, row in results.throughput.items()
    }
    return out


def targets_table(t: dict[str, Any]) -> str:
    lines = [
        "| case | p50 | p99 | db p50 | gateway p50 | gateway CPU | stmts |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in t["cases"].items():
        cells = [c["p50_ms"], c["p99_ms"], c["db_p50_ms"], c["gateway_p50_ms"]]
        cells += [c["gateway_cpu_ms"], c["statements"]]
        lines.append(
            f"| {name} | " + " | ".join("-" if v is None else str(v) for v in cells) + " |"
        )
    if "rare_vs_ilike_end_to_end" in t:
        lines.append(
            f"\nrare term vs ILIKE: {t['rare_vs_ilike_end_to_end']}x end to end,"
            f" {t.get('rare_vs_ilike_database')}x for the app's SQL (db)"
        )
    for name, r in t["throughput_c8"].items():
        lines.append(
            f"concurrency 8, {name}: 1 worker {r['workers_1_rps']} req/s,"
            f" 2 workers {r['workers_2_rps']} req/s ({r['ratio']}x)"
        )
    return "\n".join(lines)


def _jsonable(results: Results) -> dict[str, Any]:
    out = asdict(results)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--reps", type=int, default=30, help="repetitions per case (K)")
    p.add_argument("--database-url", default=None, help="server to create the database on")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    p.add_argument("--smoke", action="store_true", help="2,000 messages, 5 repetitions")
    p.add_argument("--keep", action="store_true", help="keep the database afterwards")
    p.add_argument(
        "--reuse",
        metavar="NAME",
        default=None,
        help="measure an existing database kept by --keep (same --messages and --seed): "
        "no generation, no import",
    )
    p.add_argument("--skip-expression-index", action="store_true")
    p.add_argument(
        "--skip-workers", action="store_true", help="no concurrency-8 run with 1 and 2 workers"
    )
    p.add_argument(
        "--worker-rounds",
        type=int,
        default=3,
        help="alternating rounds per case against 1 and 2 workers (default: 3)",
    )
    live = p.add_argument_group("live changes (bench.live)")
    live.add_argument("--skip-live", action="store_true", help="no applyChanges section")
    live.add_argument(
        "--live-only",
        action="store_true",
        help="only the live-changes section (with --reuse: measure writes again quickly)",
    )
    live.add_argument("--live-batches", type=int, default=200, help="timed batch requests")
    live.add_argument("--live-batch-size", type=int, default=100, help="posts per batch")
    live.add_argument("--live-singles", type=int, default=500, help="timed one-post requests")
    live.add_argument(
        "--live-reps", type=int, default=400, help="messageSearch requests, idle and under load"
    )
    live.add_argument(
        "--live-rounds", type=int, default=4, help="alternating idle / under-load search blocks"
    )
    live.add_argument("--live-rate", type=float, default=500, help="load: messages per second")
    live.add_argument("--live-load-batch", type=int, default=10, help="load: posts per request")
    live.add_argument(
        "--live-max-seconds", type=float, default=120, help="load: stop after this long anyway"
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.messages, args.reps = 2000, 5
        args.live_batches, args.live_singles, args.live_reps, args.live_rounds = 10, 20, 20, 2
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    results = asyncio.run(run(args))
    results.targets = targets(results)
    print(table(results))
    print("\n" + targets_table(results.targets))
    if results.live is not None:
        from bench.live import table as live_table

        print("\n" + live_table(results.live))
    print(
        f"\nimport: {results.imported.get('messages_per_second')} msg/s; "
        f"sizes: {json.dumps(results.sizes)}; gateway peak RSS: {results.gateway_rss_mb} MB; "
        f"total {results.seconds} s"
    )
    if args.out:
        args.out.write_text(json.dumps(_jsonable(results), indent=2, default=str) + "\n")
    failed = [name for name, row in results.rows.items() if any(s.error for s in row.values())]
    if results.live is not None:
        from bench.live import failures

        failed += failures(results.live)
    if args.smoke and failed:
        # CI runs the smoke benchmark: a case that cannot run is a broken benchmark.
        raise SystemExit(f"bench: {len(failed)} case(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
