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
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from app.data.identity_links import revoke_member_links
from app.data.readers import Reader
from app.db import PLANNER_SETTINGS, resolve_database_url
from app.identity import links
from app.request.ids import encode_id
from app.settings import Settings
from bench.baselines import (
    AUTHOR,
    ELIGIBLE,
    EXPR_INDEX,
    EXPR_SQL,
    FLOOR_SQL,
    ILIKE_SQL,
    RANK_SQL,
    time_n_plus_one,
    time_sql,
)
from bench.cluster import create_database, drop_database, with_database
from bench.generate import Summary, generate, generate_file
from bench.harness import (
    HISTORY_SEARCH,
    MESSAGE_SEARCH,
    Discard,
    Stats,
    free_port,
    import_file,
    rss_mb,
    say,
    serve,
    serving_pids,
    start_turn,
    time_http,
)
from bench.report import jsonable, table, targets, targets_table
from bench.results import Case, Results


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
            say(f"reusing database {name}; regenerating its fixture's summary")
            summary = generate(args.messages, args.seed, Discard())
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
            say(f"kept database {name}")
            results.imported["kept_database"] = name
        else:
            await drop_database(server_dsn, name)
    results.seconds = round(time.perf_counter() - started, 1)
    return results


async def _generate_and_import(args: argparse.Namespace, dsn: str, results: Results) -> Summary:
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        path = Path(tmp) / "fixture.json"
        say(f"generating {args.messages} messages (seed {args.seed})")
        summary = generate_file(args.messages, args.seed, path, sys.stderr)
        results.generate = {k: getattr(summary, k) for k in summary.__dataclass_fields__}
        say(f"generated in {summary.seconds} s; importing with `recall import`")
        results.imported = await import_file(dsn, path)
        say(f"imported: {results.imported.get('messages_per_second')} messages/s")
    return summary


async def _ids(conn: asyncpg.Connection, kind_keys: list[tuple[str, str]]) -> dict[str, int]:
    rows = await conn.fetch(
        "select key, id from actors where key = any($1::text[])", [k for _, k in kind_keys]
    )
    return {r["key"]: r["id"] for r in rows}


async def _link_identity(conn: asyncpg.Connection, ws: int, member: int) -> None:
    """A second identity of `member` in the namespace web:bench, linked to it by the flow
    the app uses (a code started by one, confirmed by the other, approved by the first)."""
    ns = await conn.fetchval(
        "insert into namespaces (workspace_id, name) values ($1, 'web:bench')"
        " on conflict (workspace_id, name) do update set name = excluded.name returning id",
        ws,
    )
    other = await conn.fetchval(
        "insert into actors (workspace_id, key, kind, name, namespace_id)"
        " values ($1, 'web-bench-heavy', 'member', 'Heavy (web)', $2)"
        " on conflict (workspace_id, key) do update set name = excluded.name returning id",
        ws,
        ns,
    )
    starter = Reader(workspace_id=ws, kind="member", actor_id=member, destination=None)
    confirmer = Reader(workspace_id=ws, kind="member", actor_id=other, destination=None)
    async with conn.transaction():
        await revoke_member_links(conn, ws, member, "connector")
        code = await links.start(conn, starter, 600)
        pending = await links.confirm(conn, confirmer, code.code, 600)
        await links.approve(conn, starter, pending.id)


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
    say(f"visibility: {json.dumps(results.visibility)}")

    cases = [
        Case("rare", mk["rare"], "heavy"),
        Case("mid", mk["mid"], "heavy"),
        Case("common", mk["common"], "heavy"),
        Case("two words", f"{mk['common']} {mk['mid']}", "heavy"),
        Case("phrase", f'"{mk["phrase"]}"', "heavy"),
        Case("cjk", mk["cjk"], "heavy"),
        Case("author", mk["common"], "heavy", author=True),
        Case("lowvis", mk["lowvis"], "lowvis"),
        # Operators only: one author's messages (the heavy persona's own, spread over every
        # kind of conversation) and the busiest public channel's, newest first.
        Case("from: only", "from:me", "heavy", sql=False),
        Case("in: only", "in:#pub-0000", "heavy", sql=False),
        Case("from: and word", f"{mk['common']} from:me", "heavy", sql=False),
    ]
    reps = args.reps
    # SQL: floor and baselines, same eligibility.
    for c in [] if args.live_only else [c for c in cases if c.sql]:
        terms = [mk["phrase"]] if c.name == "phrase" else c.query.split()
        base = [*dest[c.persona], terms]
        raw = mk["phrase"] if c.name == "phrase" else c.query
        author = [heavy] if c.author else None
        a_sql = AUTHOR if c.author else ""
        d_sql = a_sql.replace("{alias}", "d")
        row = results.rows.setdefault(f"messageSearch {c.name}", {})
        floor_args = [*base, author] if author else base
        row["sql_floor"], _ = await time_sql(
            conn, FLOOR_SQL.replace("{author}", d_sql), floor_args, reps
        )
        row["rank_all_ts_rank_cd"], _ = await time_sql(
            conn, RANK_SQL.replace("{author}", d_sql), floor_args, max(3, reps // 3)
        )
        ilike_args = [*dest[c.persona], raw, *([author] if author else [])]
        row["ilike"], _ = await time_sql(
            conn,
            ILIKE_SQL.replace("{author}", a_sql.replace("{alias}", "m")),
            ilike_args,
            max(3, reps // 5),
        )
        row["n_plus_one"] = await time_n_plus_one(
            conn, FLOOR_SQL.replace("{author}", d_sql), floor_args, max(3, reps // 3)
        )
        say(
            f"sql {c.name}: floor p50 {row['sql_floor'].p50_ms} ms, ilike p50 {row['ilike'].p50_ms} ms"
        )

    # HTTP: end to end through `recall serve`.
    port = free_port()
    server = await serve(dsn, port)
    pids = serving_pids(server)
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
                row = results.rows.setdefault(f"messageSearch {c.name}", {})

                def make(
                    _w: int, v: dict[str, Any] = variables, t: str = token
                ) -> tuple[str, dict[str, Any], str]:
                    return MESSAGE_SEARCH, v, t

                def edges(data: dict[str, Any]) -> int:
                    return len(data["messageSearch"]["edges"])

                row["http_c1"] = await time_http(port, make, reps, 1, edges, pids)
                row["http_c8"] = await time_http(port, make, max(2, reps // 4), 8, edges, pids)
                if c.name in ("rare", "common"):
                    loads[f"messageSearch {c.name}"] = (make, edges)
                say(
                    f"http {c.name}: p50 {row['http_c1'].p50_ms} ms, c8 {row['http_c8'].rps} req/s {row['http_c1'].error or ''}"
                )

            # The same person with and without a live identity link (a second identity of
            # theirs in another namespace: docs/identity.md), side by side: five alternating
            # rounds each, the median of the rounds' p50s (one round after the other would
            # compare the machine's moods). Revoked again before historySearch is measured, so
            # every other row is a workspace without links.
            if not args.live_only:
                for c in [c for c in cases if c.name in ("rare", "common", "from: only")]:
                    variables = {"q": c.query}
                    token = tokens[c.persona]

                    def make_same(
                        _w: int, v: dict[str, Any] = variables, t: str = token
                    ) -> tuple[str, dict[str, Any], str]:
                        return MESSAGE_SEARCH, v, t

                    rounds: dict[str, list[float]] = {"no link": [], "linked": []}
                    for _ in range(5):
                        for state in rounds:
                            if state == "linked":
                                await _link_identity(conn, ws, heavy)
                            else:
                                await revoke_member_links(conn, ws, heavy, "connector")
                            stats = await time_http(
                                port, make_same, max(5, reps // 5), 1, edges, pids
                            )
                            if stats.p50_ms is not None:
                                rounds[state].append(stats.p50_ms)
                    for state, p50s in rounds.items():
                        results.rows[f"messageSearch {c.name}, {state} (alternating)"] = {
                            "http_c1": Stats(
                                n=len(p50s) * max(5, reps // 5),
                                p50_ms=round(statistics.median(p50s), 2) if p50s else None,
                            )
                        }
                    say(
                        f"http {c.name}: no link {statistics.median(rounds['no link'])} ms,"
                        f" linked {statistics.median(rounds['linked'])} ms (alternating)"
                    )
                await revoke_member_links(conn, ws, heavy, "connector")

            # historySearch from an agent's turns, started with the agent token: nine turns
            # searched again and again (the same question later in a turn: its weights are
            # kept), and a fresh turn per request (a turn's first search, what an agent pays
            # on most turns: the weights are computed and kept, everything shown is new).
            scout_dm = await conn.fetchval(
                "select id from scopes where workspace_id = $1 and key = $2", ws, mk["scout_dm"]
            )

            async def start_turns(n: int) -> tuple[list[str], str | None]:
                started: list[str] = []
                for _ in range(n):
                    body = await start_turn(
                        http,
                        tokens["agent"],
                        encode_id("Scope", scout_dm),
                        encode_id("Member", heavy),
                    )
                    if body.get("errors") or not body.get("data"):
                        return started, json.dumps(body)[:400]
                    started.append(body["data"]["startTurn"]["token"])
                return started, None

            turn_tokens, start_error = await start_turns(9)
            history_cases = (
                ("rare", mk["rare"]),
                ("common", mk["common"]),
                ("two words", f"{mk['common']} {mk['mid']}"),
            )
            for name, term in () if args.live_only else history_cases:

                def hits(data: dict[str, Any]) -> int:
                    return int(data["historySearch"]["count"])

                row = results.rows.setdefault(f"historySearch {name}", {})
                first = results.rows.setdefault(f"historySearch {name}, first search", {})
                # One more than the requests: time_http warms its connection with one first.
                fresh, fresh_error = await start_turns(reps + 1)
                error = start_error or fresh_error
                if error:
                    row["http_c1"] = first["http_c1"] = Stats(errors=1, error=f"startTurn: {error}")
                    continue

                def hmake(w: int, q: str = term) -> tuple[str, dict[str, Any], str]:
                    return HISTORY_SEARCH, {"q": q}, turn_tokens[w % len(turn_tokens)]

                unused = iter(fresh)

                def fmake(
                    _w: int, q: str = term, turns: Iterator[str] = unused
                ) -> tuple[str, dict[str, Any], str]:
                    return HISTORY_SEARCH, {"q": q}, next(turns)

                row["http_c1"] = await time_http(port, hmake, reps, 1, hits, pids)
                row["http_c8"] = await time_http(port, hmake, max(2, reps // 4), 8, hits, pids)
                first["http_c1"] = await time_http(port, fmake, reps, 1, hits, pids)
                if name in ("rare", "common"):
                    loads[f"historySearch {name}"] = (hmake, hits)
                say(
                    f"http history {name}: p50 {row['http_c1'].p50_ms} ms, first search p50"
                    f" {first['http_c1'].p50_ms} ms {row['http_c1'].error or ''}"
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
        results.gateway_rss_mb = rss_mb(server.pid)
    finally:
        server.terminate()
        await server.wait()

    # Expression GIN index on messages (no sidecar): built last, it only adds an index.
    if not (args.skip_expression_index or args.live_only):
        say("building the expression GIN index baseline")
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
        for c in [c for c in cases if c.sql]:
            terms = [mk["phrase"]] if c.name == "phrase" else c.query.split()
            a_sql = AUTHOR if c.author else ""
            expr_args = [*dest[c.persona], terms, *([[heavy]] if c.author else [])]
            row = results.rows[f"messageSearch {c.name}"]
            row["expression_gin"], _ = await time_sql(
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
    two_port = free_port()
    two = await serve(dsn, two_port, workers=2)
    out: dict[str, dict[str, Any]] = {}
    try:
        two_pids = serving_pids(two)
        for name, (make, check) in loads.items():
            per: dict[str, list[Stats]] = {"workers_1": [], "workers_2": []}
            for _ in range(args.worker_rounds):
                for label, p, ps in (("workers_1", port, pids), ("workers_2", two_port, two_pids)):
                    per[label].append(
                        await time_http(p, make, max(2, args.reps // 4), 8, check, ps)
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
            say(f"throughput {name}: 1 worker {one_rps} req/s, 2 workers {two_rps} req/s")
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
               pg_relation_size('search_documents_recency') as sidecar_recency,
               pg_total_relation_size('search_blocks') as sidecar_blocks
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
            f"select count(*) from messages m where m.workspace_id = $1 and {ELIGIBLE}", *d
        )
        out[f"{persona}_readable_fraction"] = round(readable / total, 4)
    lowvis_matches = await conn.fetchrow(
        f"""
        select count(*) as matches, count(*) filter (where {ELIGIBLE}) as readable
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
        args.out.write_text(json.dumps(jsonable(results), indent=2, default=str) + "\n")
    failed = [name for name, row in results.rows.items() if any(s.error for s in row.values())]
    if results.live is not None:
        from bench.live import failures

        failed += failures(results.live)
    if args.smoke and failed:
        # CI runs the smoke benchmark: a case that cannot run is a broken benchmark.
        raise SystemExit(f"bench: {len(failed)} case(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
