"""Scale-out under load (issue 37): shards move while people search and connectors write.

    DATABASE_URL=postgresql://postgres@127.0.0.1:9800/postgres \\
      CITUS_DIR=$PWD/.recall/citus-helper python -m bench.scaleout

DATABASE_URL names a Citus coordinator run by scripts/citus-cluster (CITUS_DIR: its data, as
given to the script) with at least two workers. The run creates `recall_scale_<pid>` on the
coordinator and the first two workers (`--shards` shards per table), imports `--workspaces`
generated workspaces (bench.generate, seed + i; the first `--largest` times `--messages`
messages, the others `--messages`), starts `recall serve` and runs `--concurrency` clients
sending messageSearch, historySearch (turn tokens) and applyChanges batches with known keys,
round robin over the workspaces, through these phases:

  before            the load alone, `--phase-seconds`
  rebalance         a third worker added, citus_rebalance_start() (online), waited for
  after rebalance
  isolate           isolate_tenant_to_new_shard for the largest workspace (CASCADE: every
                    colocated table), a fourth worker added (no other shards go there), the
                    isolated shard group moved onto it (citus_move_shard_placement)
  after isolate
  outage            the worker holding the most workspaces (not all) stopped for
                    `--phase-seconds`: its workspaces' requests must answer 503
                    SERVICE_UNAVAILABLE / SEARCH_UNAVAILABLE within the request budget, the
                    others must answer as usual; then started again
  after outage

Workers beyond the first two are reused when the cluster has them (an earlier run's), added
with `scripts/citus-cluster add-worker` otherwise. Afterwards the batches that did not answer
are sent again (as a connector retries), and the run checks: every posted key is there exactly
once with its search document, each workspace's global sequence has no gap and no duplicate
(messages.global_seq is 1..n, workspaces.last_global_seq = n), ids are unique across
workspaces and every posted message's id is newer than the import's, and a messageSearch
cursor taken before the moves gives the same second page after them.

Progress on stderr; a table and the JSON result on stdout (`--out` writes the JSON too).
Exit status 1 if any request failed, any change is lost or duplicated, or a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx

from app.db import resolve_database_url
from app.settings import Settings
from bench import scale_moves as moves
from bench.cluster import drop_database, new_citus_database
from bench.harness import free_port, say, serve
from bench.scale_load import SEARCH, Load, Tenant, import_workspaces, summary, tenants_of

PHASES = [
    "before",
    "rebalance",
    "after rebalance",
    "isolate",
    "after isolate",
    "outage",
    "after outage",
]


async def _page(
    http: httpx.AsyncClient, tenant: Tenant, after: str | None
) -> tuple[list[str], str | None]:
    r = await http.post(
        "/graphql",
        json={"query": SEARCH, "variables": {"q": tenant.terms[2], "after": after}},
        headers={"authorization": f"Bearer {tenant.member}"},
    )
    body = r.json()
    if r.status_code != 200 or body.get("errors"):
        raise RuntimeError(f"messageSearch page: HTTP {r.status_code} {json.dumps(body)[:300]}")
    search = body["data"]["messageSearch"]
    return [e["node"]["key"] for e in search["edges"]], search["pageInfo"]["endCursor"]


async def _cursors(http: httpx.AsyncClient, tenants: list[Tenant]) -> dict[str, Any]:
    """Per workspace: the first page's end cursor and the second page it leads to."""
    out = {}
    for t in tenants:
        _, cursor = await _page(http, t, None)
        page, _ = await _page(http, t, cursor)
        out[t.key] = {"cursor": cursor, "page": page}
    return out


def _throughput(load: Load) -> dict[str, Any]:
    """Per phase: how long it lasted and the successful answers per second (a closed loop of
    `--concurrency` clients: what the cluster served, not what it could)."""
    starts = sorted(load.phase_started.items(), key=lambda kv: kv[1])
    out = {}
    for (phase, start), (_, end) in itertools.pairwise(starts):
        ok = sum(1 for s in load.samples if s.phase == phase and s.outcome == "ok")
        seconds = end - start
        out[phase] = {"seconds": round(seconds, 1), "ok_per_second": round(ok / seconds, 1)}
    return out


class Phases:
    """Runs the moves between the load's phases, `seconds` of load in each quiet one."""

    def __init__(self, load: Load, seconds: float) -> None:
        self.load, self.seconds = load, seconds

    def enter(self, phase: str) -> None:
        self.load.phase = phase
        self.load.phase_started[phase] = time.perf_counter()
        say(f"phase: {phase} ({len(self.load.samples)} requests so far)")

    async def quiet(self, phase: str) -> None:
        self.enter(phase)
        await asyncio.sleep(self.seconds)


async def _orchestrate(
    server_dsn: str, dsn: str, name: str, load: Load, args: argparse.Namespace
) -> dict[str, Any]:
    done: dict[str, Any] = {}
    phases = Phases(load, args.phase_seconds)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("set client_min_messages = warning")
        await phases.quiet("before")

        phases.enter("rebalance")
        third = await moves.new_worker(server_dsn, name, conn)
        say(f"added worker {urlsplit(third).port}; rebalancing")
        done["rebalance"] = await moves.bounded(
            conn, moves.rebalance(conn), args.move_timeout, "the rebalance"
        )
        say(f"rebalanced: {json.dumps(done['rebalance'])}")
        await phases.quiet("after rebalance")

        phases.enter("isolate")
        largest = max(load.tenants, key=lambda t: t.messages)
        fourth = await moves.new_worker(server_dsn, name, conn)
        done["isolate"] = await moves.bounded(
            conn,
            moves.isolate_and_move(conn, largest.id, fourth, args.isolate_mode),
            args.move_timeout,
            "the tenant isolation and move",
        )
        done["isolate"]["workspace"] = largest.key
        say(f"isolated and moved: {json.dumps(done['isolate'])}")
        await phases.quiet("after isolate")

        nodes = {t.key: await moves.node_of(conn, t.id) for t in load.tenants}
        done["nodes_before_outage"] = nodes
        # The worker with the most workspaces, as long as some live elsewhere.
        counts = {p: list(nodes.values()).count(p) for p in sorted(set(nodes.values()))}
        candidates = [p for p, c in counts.items() if c < len(nodes)]
        if not candidates:
            raise RuntimeError(f"every workspace is on one node: {nodes}")
        port = max(candidates, key=lambda p: (counts[p], -p))
        number = moves.worker_number(server_dsn, port)
        load.down = {k for k, p in nodes.items() if p == port}
        phases.enter("outage")
        await moves.cluster_script(server_dsn, "stop-worker", str(number))
        say(f"stopped worker w{number} (port {port}), holding {sorted(load.down)}")
        done["outage"] = {"port": port, "workspaces": sorted(load.down)}
        try:
            await asyncio.sleep(args.phase_seconds)
        finally:
            await moves.cluster_script(server_dsn, "start-worker", str(number))
        say(f"started worker w{number} again")
        load.down = set()
        await phases.quiet("after outage")
    finally:
        await conn.close()
    return done


async def _checks(
    conn: asyncpg.Connection, load: Load, ids_before: int, tenants: list[Tenant]
) -> dict[str, Any]:
    """Lost or duplicated changes, the global sequence and ids, after the load."""
    posted: dict[str, str] = {}
    for b in [*load.acked, *load.unacked]:
        for k in b.keys:
            posted[k] = b.tenant.key
    rows = await conn.fetch(
        """
        select w.key as workspace, m.key, count(*) as n, min(m.id) as id,
               count(d.message_id) as documents
        from messages m
        join workspaces w on w.id = m.workspace_id
        left join search_documents d
          on d.workspace_id = m.workspace_id and d.message_id = m.id
        where m.key like $1
        group by 1, 2
        """,
        f"scale-{load.run_id}-%",
    )
    present = {r["key"]: r for r in rows}
    lost = sorted(k for k in posted if k not in present)
    misplaced = sorted(k for k, r in present.items() if posted.get(k) != r["workspace"])
    duplicated = sorted(k for k, r in present.items() if r["n"] > 1)
    unindexed = sorted(k for k, r in present.items() if r["documents"] != r["n"])
    older_ids = sorted(k for k, r in present.items() if r["id"] <= ids_before)
    sequence = []
    for t in tenants:
        r = await conn.fetchrow(
            """
            select count(*) as n, count(distinct m.global_seq) as distinct_seq,
                   max(m.global_seq) as max_seq,
                   (select last_global_seq from workspaces where id = $1) as last
            from messages m where m.workspace_id = $1
            """,
            t.id,
        )
        assert r is not None
        if not (r["n"] == r["distinct_seq"] == r["max_seq"] == r["last"]):
            sequence.append({"workspace": t.key, **dict(r)})
    duplicate_ids = await conn.fetchval("select count(*) - count(distinct id) from messages")
    return {
        "changes_posted": len(posted),
        "changes_present": len(present),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "in_another_workspace": len(misplaced),
        "without_search_document": len(unindexed),
        "ids_not_newer_than_import": len(older_ids),
        "duplicate_message_ids": duplicate_ids,
        "global_sequence_broken": sequence,
        "examples": {"lost": lost[:5], "duplicated": duplicated[:5]},
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    settings = Settings()
    server_dsn = resolve_database_url(settings)
    name, dsn = await new_citus_database(server_dsn, "recall_scale", args.shards, "bench.scaleout")
    result: dict[str, Any] = {
        "database": name,
        "args": {k: v for k, v in vars(args).items() if k != "out"},
    }
    server = None
    try:
        imported = await import_workspaces(args, dsn)
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute("vacuum analyze")
            ids_before = await conn.fetchval("select max(id) from messages")
            port = free_port()
            server = await serve(dsn, port, log=args.server_log)
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base, timeout=60) as http:
                tenants = await tenants_of(conn, http, imported)
                cursors = await _cursors(http, tenants)
                load = Load(port, tenants, settings.request_timeout, str(os.getpid()))
                load.batch_size = args.batch
                stop = asyncio.Event()
                clients = [
                    asyncio.create_task(load.client(i, stop)) for i in range(args.concurrency)
                ]
                try:
                    result["moves"] = await _orchestrate(server_dsn, dsn, name, load, args)
                except Exception as e:  # a move that failed: still count what the load saw
                    result["error"] = f"{type(e).__name__}: {e}"
                    say(f"error: {result['error']}")
                finally:
                    stop.set()
                    await asyncio.gather(*clients)
                    load.phase_started["end"] = time.perf_counter()
                result["retried_batches"] = await load.retry_unacked()
                result["phases"] = summary(load.samples, PHASES)
                result["throughput"] = _throughput(load)
                again = {}
                for t in tenants:
                    page, _ = await _page(http, t, cursors[t.key]["cursor"])
                    again[t.key] = page == cursors[t.key]["page"] and bool(page)
                result["cursors_valid_after_moves"] = again
                result["server_retries"] = await _server_retries(http)
            result["checks"] = await _checks(conn, load, ids_before, tenants)
        finally:
            await conn.close()
    finally:
        if server is not None:
            server.terminate()
            await server.wait()
        if args.keep:
            say(f"kept database {name}")
        else:
            # A transaction the outage cut between its two phases is still prepared on a
            # worker until Citus's recovery (every minute) settles it; settle it now.
            conn = await asyncpg.connect(dsn)
            try:
                await conn.execute("select recover_prepared_transactions()")
            finally:
                await conn.close()
            await drop_database(server_dsn, name)
    result["requests"] = len(load.samples)
    result["failures"] = sum(1 for s in load.samples if s.outcome == "failure")
    result["unavailable"] = sum(1 for s in load.samples if s.outcome == "unavailable")
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def problems(result: dict[str, Any]) -> list[str]:
    out = [result["error"]] if result.get("error") else []
    if result["failures"]:
        out.append(f"{result['failures']} failed requests")
    c = result["checks"]
    for k in ("lost", "duplicated", "in_another_workspace", "without_search_document",
              "ids_not_newer_than_import", "duplicate_message_ids"):  # fmt: skip
        if c[k]:
            out.append(f"{c[k]} {k.replace('_', ' ')}")
    if c["global_sequence_broken"]:
        out.append(f"global sequence broken: {c['global_sequence_broken']}")
    bad = [k for k, ok in result["cursors_valid_after_moves"].items() if not ok]
    if bad:
        out.append(f"cursors taken before the moves give another page: {bad}")
    if not result["unavailable"] and not result.get("error"):
        out.append("no request met the stopped worker (the outage was not exercised)")
    return out


def table(result: dict[str, Any]) -> str:
    lines = [
        "| phase | kind | requests | failures (of which 503) | expected 503 | p50 ms | p99 ms"
        " | slowest expected 503 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for phase, rows in result["phases"].items():
        for kind, r in rows.items():
            lines.append(
                f"| {phase} | {kind} | {r['requests']} | {r['failures']} ({r['failures_503']})"
                f" | {r['unavailable']}"
                f" | {r['p50_ms'] if r['p50_ms'] is not None else '–'}"
                f" | {r['p99_ms'] if r['p99_ms'] is not None else '–'}"
                f" | {r['unavailable_max_ms'] if r['unavailable_max_ms'] is not None else '–'} |"
            )
    lines += ["", "| phase | seconds | successful answers/s |", "|---|---:|---:|"]
    for phase, t in result.get("throughput", {}).items():
        lines.append(f"| {phase} | {t['seconds']} | {t['ok_per_second']} |")
    c = result["checks"]
    lines.append("")
    lines.append(
        f"requests {result['requests']}, failures {result['failures']}, expected 503s"
        f" {result['unavailable']}; changes posted {c['changes_posted']}, present"
        f" {c['changes_present']}, lost {c['lost']}, duplicated {c['duplicated']}"
        f" (batches retried after the outage: {result['retried_batches']}); global sequence"
        f" {'valid' if not c['global_sequence_broken'] else 'BROKEN'}; cursors valid after"
        f" the moves: {all(result['cursors_valid_after_moves'].values())}"
    )
    retries = result.get("server_retries", {})
    lines.append(
        "work the server ran again inside a request (recall_database_retries_total): "
        + (", ".join(f"{k} {v:g}" for k, v in sorted(retries.items())) or "none")
    )
    return "\n".join(lines)


async def _server_retries(http: httpx.AsyncClient) -> dict[str, float]:
    """The server's recall_database_retries_total by reason (app/data/retry.py): what it ran
    again instead of answering 503 during the moves."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (await http.get("/metrics")).text
    return {
        sample.labels["reason"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "recall_database_retries"
        for sample in family.samples
        if sample.name.endswith("_total")
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scaleout", description=__doc__.split("\n")[0])
    p.add_argument("--database-url", help="a Citus coordinator (default: DATABASE_URL)")
    p.add_argument("--workspaces", type=int, default=4)
    p.add_argument("--messages", type=int, default=20_000, help="messages per workspace")
    p.add_argument(
        "--largest", type=int, default=2, help="the first workspace is this many times larger"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shards", type=int, default=8, help="shards per table")
    p.add_argument("--concurrency", type=int, default=4, help="clients sending requests")
    p.add_argument("--batch", type=int, default=10, help="posts per applyChanges request")
    p.add_argument("--phase-seconds", type=float, default=10.0, help="load alone between moves")
    p.add_argument(
        "--isolate-mode",
        default=moves.ISOLATE_TRANSFER,
        choices=["block_writes", "auto", "force_logical"],
        help="isolate_tenant_to_new_shard's shard_transfer_mode (bench/scale_moves.py: why)",
    )
    p.add_argument(
        "--move-timeout",
        type=float,
        default=300,
        help="seconds a move may take before the run fails",
    )
    p.add_argument("--server-log", type=Path, help="append `recall serve`'s log to this file")
    p.add_argument("--keep", action="store_true", help="keep the database")
    p.add_argument("--out", type=Path, help="also write the JSON result here")
    args = p.parse_args(argv)
    if args.workspaces < 2:
        p.error("--workspaces must be at least 2 (one is isolated, one keeps working)")
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    result = asyncio.run(run(args))
    failed = problems(result)
    result["problems"] = failed
    print(table(result))
    print(json.dumps(result, indent=2, default=str))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    if failed:
        say("FAILED: " + "; ".join(failed))
        sys.exit(1)
    say("ok: no failed request, nothing lost or duplicated")


if __name__ == "__main__":
    main()
