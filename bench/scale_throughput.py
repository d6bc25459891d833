"""Scale-out throughput (issue 37): what a Citus cluster serves at a fixed p99 over two
workers, then over three after an online rebalance.

    DATABASE_URL=postgresql://postgres@127.0.0.1:9700/postgres \\
      python -m bench.scale_throughput --workspaces 4 --messages 1000000 --p99 250

DATABASE_URL names a Citus coordinator run by scripts/citus-cluster with at least two
workers. The run creates `recall_throughput_<pid>` on the coordinator and its first two workers
(`--shards` shards per table), imports `--workspaces` generated workspaces of `--messages` each
(bench.generate, seed + i), starts `recall serve` and runs bench.scaleout's mixed load
(messageSearch, historySearch with turn tokens, connector batches; round robin over the
workspaces) as a closed loop of N clients for each N of `--concurrency`: `--warmup-seconds`
not counted, then `--step-seconds` measured. Then a third worker is added (an earlier run's if
the cluster has one), citus_rebalance_start() moves shard groups onto it online, the tables
are analyzed, and every level runs again.

The throughput at the fixed p99 is the most requests answered per second at a level whose
p99 (every kind together) stays within `--p99` ms. Each workspace lives in one shard group,
so a third worker serves only the workspaces whose groups moved there: the report names each
workspace's node before and after. Progress on stderr; a table and the JSON result on stdout.
Exit status 1 if any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from app.db import resolve_database_url
from app.settings import Settings
from bench import scale_moves as moves
from bench.cluster import drop_database, new_citus_database
from bench.harness import free_port, pct, say, serve
from bench.scale_load import KINDS, Load, Tenant, import_workspaces, tenants_of


async def _level(
    port: int, tenants: list[Tenant], budget_s: float, run_id: str, clients: int,
    args: argparse.Namespace,
) -> dict[str, Any]:  # fmt: skip
    """One closed-loop level: `clients` clients, warmed up, then measured."""
    load = Load(port, tenants, budget_s, run_id)
    load.batch_size = args.batch
    load.phase = "warmup"
    stop = asyncio.Event()
    tasks = [asyncio.create_task(load.client(i, stop)) for i in range(clients)]
    try:
        await asyncio.sleep(args.warmup_seconds)
        load.phase = "measured"
        started = time.perf_counter()
        await asyncio.sleep(args.step_seconds)
        seconds = time.perf_counter() - started
        load.phase = "done"
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    measured = [s for s in load.samples if s.phase == "measured"]
    ok = [s.ms for s in measured if s.outcome == "ok"]
    failures = [s for s in measured if s.outcome != "ok"]
    by_kind = {
        kind: round(pct(ms, 0.99), 1)
        for kind in KINDS
        if (ms := [s.ms for s in measured if s.kind == kind and s.outcome == "ok"])
    }
    return {
        "clients": clients,
        "requests": len(measured),
        "ok_per_second": round(len(ok) / seconds, 1),
        "p50_ms": round(statistics.median(ok), 1) if ok else None,
        "p99_ms": round(pct(ok, 0.99), 1) if ok else None,
        "p99_ms_by_kind": by_kind,
        "failures": len(failures),
        "first_failure": failures[0].detail if failures else None,
    }


def best_within(levels: list[dict[str, Any]], p99_ms: float) -> dict[str, Any] | None:
    """The level with the most requests per second whose p99 stays within `p99_ms`."""
    fits = [lv for lv in levels if lv["p99_ms"] is not None and lv["p99_ms"] <= p99_ms]
    return max(fits, key=lambda lv: lv["ok_per_second"]) if fits else None


async def _stage(
    name: str, port: int, tenants: list[Tenant], budget_s: float, args: argparse.Namespace
) -> list[dict[str, Any]]:
    levels = []
    for clients in args.concurrency:
        level = await _level(
            port, tenants, budget_s, f"{os.getpid()}-{name}-{clients}", clients, args
        )
        say(
            f"{name}, {clients} clients: {level['ok_per_second']} req/s, p50 {level['p50_ms']}"
            f" p99 {level['p99_ms']} ms, {level['failures']} failed"
        )
        levels.append(level)
    return levels


async def _nodes(conn: asyncpg.Connection, tenants: list[Tenant]) -> dict[str, int]:
    return {t.key: await moves.node_of(conn, t.id) for t in tenants}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    settings = Settings()
    server_dsn = resolve_database_url(settings)
    name, dsn = await new_citus_database(
        server_dsn, "recall_throughput", args.shards, "bench.scale_throughput"
    )
    result: dict[str, Any] = {"database": name, "args": vars(args)}
    server = None
    try:
        args.largest = 1
        imported = await import_workspaces(args, dsn)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("set client_min_messages = warning")
            await conn.execute("vacuum analyze")
            port = free_port()
            server = await serve(dsn, port, log=args.server_log)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                tenants = await tenants_of(conn, http, imported)
            budget = settings.request_timeout
            result["nodes_2_workers"] = await _nodes(conn, tenants)
            result["levels_2_workers"] = await _stage("2 workers", port, tenants, budget, args)
            third = await moves.new_worker(server_dsn, name, conn)
            say(f"added worker {third}; rebalancing")
            result["rebalance"] = await moves.rebalance(conn)
            await conn.execute("analyze")
            say(f"rebalanced: {json.dumps(result['rebalance'])}")
            result["nodes_3_workers"] = await _nodes(conn, tenants)
            result["levels_3_workers"] = await _stage("3 workers", port, tenants, budget, args)
        finally:
            await conn.close()
    finally:
        if server is not None:
            server.terminate()
            await server.wait()
        if not args.keep:
            await drop_database(server_dsn, name)
    for workers_count in (2, 3):
        best = best_within(result.get(f"levels_{workers_count}_workers", []), args.p99)
        result[f"best_{workers_count}_workers"] = best
    result["failures"] = sum(
        lv["failures"] for k in ("levels_2_workers", "levels_3_workers") for lv in result.get(k, [])
    )
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def table(result: dict[str, Any]) -> str:
    lines = [
        "| workers | clients | requests/s | p50 ms | p99 ms | p99 by kind (ms) | failed |",
        "|---:|---:|---:|---:|---:|---|---:|",
    ]
    for n in (2, 3):
        for lv in result.get(f"levels_{n}_workers", []):
            kinds = ", ".join(f"{k} {v}" for k, v in lv["p99_ms_by_kind"].items())
            lines.append(
                f"| {n} | {lv['clients']} | {lv['ok_per_second']} | {lv['p50_ms']} |"
                f" {lv['p99_ms']} | {kinds} | {lv['failures']} |"
            )
    p99 = result["args"]["p99"]
    for n in (2, 3):
        best = result.get(f"best_{n}_workers")
        at = f"{best['ok_per_second']} req/s ({best['clients']} clients)" if best else "none"
        lines.append(f"\n{n} workers, throughput at p99 <= {p99} ms: {at}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.scale_throughput", description=__doc__.split("\n")[0]
    )
    p.add_argument("--workspaces", type=int, default=4)
    p.add_argument("--messages", type=int, default=20_000, help="messages per workspace")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shards", type=int, default=8, help="shards per table")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--batch", type=int, default=10, help="posts per applyChanges request")
    p.add_argument("--p99", type=float, default=250.0, help="the fixed p99, ms")
    p.add_argument("--warmup-seconds", type=float, default=3.0)
    p.add_argument("--step-seconds", type=float, default=15.0)
    p.add_argument("--server-log", type=Path, help="append `recall serve`'s log to this file")
    p.add_argument("--keep", action="store_true", help="keep the database")
    args = p.parse_args(argv)
    result = asyncio.run(run(args))
    print(table(result))
    print(json.dumps(result, indent=2, default=str))
    if result["failures"]:
        say(f"FAILED: {result['failures']} requests failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
