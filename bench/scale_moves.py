"""The cluster operations bench.scaleout runs while its load goes on (docs/scale.md, Runbook):
add a worker, rebalance online, isolate a tenant and move its shard group to a node of its
own, stop a worker and start it again. Citus's own functions and scripts/citus-cluster; each
returns what it did, for the report.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncpg

from bench.cluster import add_worker, citus_workers

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "citus-cluster"
# Logical replication when the tables have a replica identity (every Recall table has a
# primary key): writes go on during the copy, and are blocked only for the final catch-up.
TRANSFER = "auto"
# Tenant isolation splits the shard group; Citus 13.2's non-blocking split (logical
# replication through its own decoder) hung under this load: its subscription's apply worker
# failed on every retry with "publisher did not send replica identity column expected by the
# logical replication target relation" for an UPDATE of `turns` (likely citusdata/citus#6790:
# "Shard splits might hang up with concurrent transactions"). So the split blocks writes to
# the workspace's shard group while it copies (reads go on; writes wait, and one that waited
# on the old shard answers 503, try again: app/data/session.py), and the move that follows is
# online.
ISOLATE_TRANSFER = "block_writes"


async def cluster_script(server_dsn: str, *args: str) -> str:
    """scripts/citus-cluster for the cluster whose coordinator `server_dsn` names (CITUS_DIR,
    if the caller set one, passes through); its stdout."""
    env = {**os.environ, "CITUS_PORT": str(urlsplit(server_dsn).port or 5432)}
    proc = await asyncio.create_subprocess_exec(
        str(SCRIPT), *args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"citus-cluster {' '.join(args)}: {err.decode().strip()[-400:]}")
    return out.decode()


def worker_number(server_dsn: str, worker_port: int) -> int:
    """scripts/citus-cluster's N of a worker (wN listens on the coordinator's port + N)."""
    return worker_port - (urlsplit(server_dsn).port or 5432)


async def registered_ports(conn: asyncpg.Connection) -> list[int]:
    rows = await conn.fetch(
        "select nodeport from pg_dist_node where groupid > 0 and noderole = 'primary'"
        " order by nodeport"
    )
    return [r["nodeport"] for r in rows]


async def new_worker(server_dsn: str, name: str, conn: asyncpg.Connection) -> str:
    """A worker the database `name` does not list yet, registered in it now: one the cluster
    already has (from an earlier run), or a new one (`citus-cluster add-worker`). Its DSN."""
    taken = set(await registered_ports(conn))
    spare = [w for w in await citus_workers(server_dsn) if urlsplit(w).port not in taken]
    if not spare:
        await cluster_script(server_dsn, "add-worker")
        spare = [w for w in await citus_workers(server_dsn) if urlsplit(w).port not in taken]
    worker = spare[0]
    await add_worker(server_dsn, name, worker)
    return worker


async def placements(conn: asyncpg.Connection) -> dict[int, int]:
    """Shard placements of the database per worker port."""
    rows = await conn.fetch(
        "select n.nodeport, count(*) from pg_dist_placement p"
        " join pg_dist_node n on n.groupid = p.groupid where n.groupid > 0 group by 1 order by 1"
    )
    return {r[0]: r[1] for r in rows}


async def rebalance(conn: asyncpg.Connection) -> dict[str, Any]:
    """citus_rebalance_start() and wait for it: the shard groups moved onto the new node."""
    started = time.perf_counter()
    before = await placements(conn)
    job = await conn.fetchval(f"select citus_rebalance_start(shard_transfer_mode => '{TRANSFER}')")
    if job is not None:
        await conn.execute("select citus_rebalance_wait()")
    state = await conn.fetchval("select state from pg_dist_background_job where job_id = $1", job)
    moves = await conn.fetchval(
        "select count(*) from pg_dist_background_task where job_id = $1", job
    )
    return {
        "job": job,
        "state": state,
        "moves": moves,
        "placements_before": before,
        "placements_after": await placements(conn),
        "seconds": round(time.perf_counter() - started, 1),
    }


async def node_of(conn: asyncpg.Connection, workspace_id: int) -> int:
    """The port of the worker holding a workspace's shard group."""
    port: int = await conn.fetchval(
        "select n.nodeport from pg_dist_placement p join pg_dist_node n on n.groupid = p.groupid"
        " where p.shardid = get_shard_id_for_distribution_column('messages', $1::bigint)",
        workspace_id,
    )
    return port


async def isolate_and_move(
    conn: asyncpg.Connection, workspace_id: int, target: str, mode: str = ISOLATE_TRANSFER
) -> dict[str, Any]:
    """The workspace's rows into a shard group of their own (every colocated table: CASCADE),
    then that group onto `target`, a node that holds nothing of this database yet. (Citus
    refuses moves onto a node marked shouldhaveshards = false, and a rebalance later may put
    other groups beside it.)"""
    started = time.perf_counter()
    shard = await conn.fetchval(
        "select isolate_tenant_to_new_shard('messages', $1::bigint,"
        f" cascade_option => 'CASCADE', shard_transfer_mode => '{mode}')",
        workspace_id,
    )
    isolated = round(time.perf_counter() - started, 1)
    parts = urlsplit(target)
    source = await node_of(conn, workspace_id)
    await conn.execute(
        "select citus_move_shard_placement($1, $2, $3, $4, $5,"
        f" shard_transfer_mode => '{TRANSFER}')",
        shard,
        parts.hostname,
        source,
        parts.hostname,
        parts.port,
    )
    return {
        "workspace_id": workspace_id,
        "isolate_mode": mode,
        "shard": shard,
        "from_port": source,
        "to_port": parts.port,
        "isolate_seconds": isolated,
        "seconds": round(time.perf_counter() - started, 1),
    }


async def bounded(conn: asyncpg.Connection, work: Any, seconds: float, what: str) -> Any:
    """Wait for a move at most `seconds`: past that it is cancelled (asyncpg cancels the
    statement), what it left behind (slots, subscriptions, half-made shards) is cleaned up,
    and the run fails instead of hanging."""
    try:
        return await asyncio.wait_for(work, seconds)
    except TimeoutError:
        await conn.execute("call citus_cleanup_orphaned_resources()")
        raise RuntimeError(f"{what} did not finish in {seconds:g} s (cancelled)") from None
