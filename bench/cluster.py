"""Databases on a Citus cluster, for the benchmark and the test harness (docs/scale.md).

On plain PostgreSQL `create database` is all a fresh database needs. On a Citus coordinator a
database must exist on the coordinator and on every worker, each with the extension, and the
coordinator's copy must list the workers (Citus keeps its node list per database); only then
does `recall migrate` distribute it. `create_database` and `drop_database` do the one or the
other, depending on what the server is.
"""

from __future__ import annotations

import asyncio
import os
from urllib.parse import urlsplit, urlunsplit

import asyncpg


def with_database(dsn: str, name: str) -> str:
    return urlunsplit(urlsplit(dsn)._replace(path="/" + name))


async def citus_workers(server_dsn: str) -> list[str]:
    """DSNs of the primary workers registered in `server_dsn`'s database ([] on plain
    PostgreSQL, or on a Citus database without workers)."""
    admin = await asyncpg.connect(server_dsn)
    try:
        if not await admin.fetchval(
            "select exists (select 1 from pg_extension where extname = 'citus')"
        ):
            return []
        rows = await admin.fetch(
            "select nodename, nodeport from pg_dist_node"
            " where noderole = 'primary' and groupid > 0 order by nodeport"
        )
    finally:
        await admin.close()
    user = urlsplit(server_dsn).username or "postgres"
    return [f"postgresql://{user}@{r['nodename']}:{r['nodeport']}/postgres" for r in rows]


async def create_database(
    server_dsn: str,
    name: str,
    *,
    settings: dict[str, str] | None = None,
    workers: list[str] | None = None,
) -> bool:
    """Create `name` on the server (and, on a Citus coordinator with workers, on every worker,
    with the extension, the workers registered). `settings` are set on the coordinator's copy
    (`alter database … set`); `workers` (DSNs of some of the coordinator's workers) registers
    only those. True if the database is on a cluster."""
    if workers is None:
        workers = await citus_workers(server_dsn)
    for server in [server_dsn, *workers]:
        admin = await asyncpg.connect(server)
        try:
            await admin.execute(f'create database "{name}"')
            if server == server_dsn:
                for key, value in (settings or {}).items():
                    await admin.execute(f'alter database "{name}" set {key} = {value}')
        finally:
            await admin.close()
        if not workers:
            return False
        conn = await asyncpg.connect(with_database(server, name))
        try:
            await conn.execute("set client_min_messages = warning")
            await conn.execute("create extension citus")
        finally:
            await conn.close()
    conn = await asyncpg.connect(with_database(server_dsn, name))
    try:
        coordinator = urlsplit(server_dsn)
        await conn.execute(
            "select citus_set_coordinator_host($1, $2)",
            coordinator.hostname,
            coordinator.port or 5432,
        )
        for worker in workers:
            parts = urlsplit(worker)
            await _add_node(conn, parts.hostname, parts.port)
    finally:
        await conn.close()
    return True


async def new_citus_database(
    server_dsn: str, prefix: str, shards: int, tool: str
) -> tuple[str, str]:
    """A new database `<prefix>_<pid>` on the Citus coordinator `server_dsn` and its first two
    workers, `shards` shards per table: its name and DSN. Exits if the cluster has fewer
    than two workers."""
    workers = await citus_workers(server_dsn)
    if len(workers) < 2:
        raise SystemExit(
            f"{tool}: DATABASE_URL must name a Citus coordinator with two workers"
            " (scripts/citus-cluster start)"
        )
    name = f"{prefix}_{os.getpid()}"
    await create_database(
        server_dsn, name, settings={"citus.shard_count": str(shards)}, workers=workers[:2]
    )
    return name, with_database(server_dsn, name)


async def _add_node(conn: asyncpg.Connection, host: str | None, port: int | None) -> None:
    """citus_add_node, tried again a few times: while another process creates or drops a
    database on the same worker (the test suite in two processes), Citus's connection to it
    may fail ("failure on connection marked as essential"); the node is added or not, never
    half."""
    for attempt in range(5):
        try:
            await conn.execute(
                "select citus_add_node($1, $2) where not exists"
                " (select 1 from pg_dist_node where nodename = $1 and nodeport = $2)",
                host,
                port,
            )
            return
        except asyncpg.InternalServerError as e:
            if attempt == 4 or "failure on connection" not in str(e):
                raise
            await asyncio.sleep(0.5 * (attempt + 1))


async def add_worker(server_dsn: str, name: str, worker: str) -> None:
    """Register `worker` (a DSN) in the coordinator's database `name`, as an operator adds a
    node: the database and the extension on it first, then citus_add_node (idempotent). Its
    shards come with a rebalance or a move."""
    admin = await asyncpg.connect(worker)
    try:
        if not await admin.fetchval(
            "select exists (select 1 from pg_database where datname = $1)", name
        ):
            await admin.execute(f'create database "{name}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(with_database(worker, name))
    try:
        await conn.execute("set client_min_messages = warning")
        await conn.execute("create extension if not exists citus")
    finally:
        await conn.close()
    parts = urlsplit(worker)
    conn = await asyncpg.connect(with_database(server_dsn, name))
    try:
        await conn.execute(
            "select citus_add_node($1, $2) where not exists"
            " (select 1 from pg_dist_node where nodename = $1 and nodeport = $2)",
            parts.hostname,
            parts.port,
        )
    finally:
        await conn.close()


async def drop_database(server_dsn: str, name: str) -> None:
    """Drop `name` on the server and on every worker of a cluster (if it exists)."""
    for server in [server_dsn, *await citus_workers(server_dsn)]:
        admin = await asyncpg.connect(server)
        try:
            await admin.execute(f'drop database if exists "{name}" with (force)')
        finally:
            await admin.close()
