"""Test harness: real PostgreSQL, one fresh database per test, GraphQL over HTTP (tests.client).

The server is the embedded PostgreSQL (under .recall/test-pg) unless TEST_DATABASE_URL names
one (any database on it; tests create and drop their own). Each test gets a database cloned
from a migrated template, so tests are isolated and a clone costs milliseconds.

RECALL_TEST_CITUS names a Citus coordinator instead (scripts/citus-cluster start; e.g.
postgresql://postgres@127.0.0.1:9700/postgres) whose `postgres` database has its workers
registered. A template cannot be cloned there (its shards live on the workers), and creating a
database on every node and distributing it costs seconds, so the session keeps a pool of
migrated, distributed databases (`_CitusPool`): a test takes one, and afterwards it is emptied
(TRUNCATE of every table, the id sequence restarted) and handed to the next test, or dropped
if the test changed its schema (docs/scale.md, Local cluster).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from app.db import connect
from app.migrate import migrate
from app.settings import Settings
from bench.cluster import citus_workers, create_database, drop_database, with_database
from tests.client import GraphQLClient, graphql_client
from tests.history_support import load_history_personas, start_turn

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def server_dsn() -> str:
    """A DSN of a database on the test server, used to create and drop test databases."""
    if CITUS is not None:
        return CITUS
    configured = os.environ.get("TEST_DATABASE_URL")
    if configured:
        return configured
    from app.embedded_db import embedded_database_url

    return embedded_database_url(ROOT / ".recall" / "test-pg")


CITUS = os.environ.get("RECALL_TEST_CITUS") or None
# RECALL_TEST_CITUS_ROUTER=1: every statement the app sends must run on one shard. Citus raises
# an error for a statement planned as more than one task (citus.multi_task_query_log_level), so
# any fan-out fails the test that caused it (the tests' own connection is exempt).
CITUS_ROUTER_ONLY = CITUS is not None and os.environ.get("RECALL_TEST_CITUS_ROUTER") == "1"


def on_citus() -> bool:
    return CITUS is not None


async def _create_citus_database(coordinator: str, name: str) -> None:
    """`name` on the coordinator and every worker, distributed once migrated, with few shards
    (a test workspace is tiny; 32 shards per table make distribution slow)."""
    settings = {"citus.shard_count": "4"}
    if CITUS_ROUTER_ONLY:
        settings["citus.multi_task_query_log_level"] = "error"
    if not await create_database(coordinator, name, settings=settings):
        raise RuntimeError(f"{coordinator} has no workers: run scripts/citus-cluster start")


# What a test must leave as migration made it for its database to be reused: the tables and
# their columns, indexes, sequences, functions, triggers (and whether they are enabled), the
# recorded migrations, the distribution, and the database's settings. A test that creates a
# trigger or disables one, for instance, gets its database dropped instead.
_SCHEMA_FINGERPRINT = """
select md5(string_agg(x, E'\n' order by x)) from (
    select 'rel ' || c.relname || ' ' || c.relkind::text
        || ' ' || coalesce(array_to_string(c.reloptions, ','), '') from pg_class c
    where c.relnamespace = 'public'::regnamespace
    union all
    select 'col ' || a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
        || ' ' || a.attnotnull || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    from pg_attribute a join pg_class c on c.oid = a.attrelid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = 'public'::regnamespace and a.attnum > 0 and not a.attisdropped
    union all
    select 'con ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
    from pg_constraint where connamespace = 'public'::regnamespace
    union all
    select 'fn ' || p.oid::regprocedure || ' ' || md5(p.prosrc) from pg_proc p
    where p.pronamespace = 'public'::regnamespace
    union all
    select 'trg ' || t.tgrelid::regclass || ' ' || t.tgname || ' ' || t.tgenabled::text
    from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = 'public'::regnamespace and not t.tgisinternal
    union all
    select 'mig ' || version || ' ' || checksum from schema_migrations
    union all
    select 'dist ' || logicalrelid::regclass || ' ' || partmethod::text || ' ' || colocationid
    from pg_dist_partition
    union all
    select 'set ' || array_to_string(setconfig, ' ') from pg_db_role_setting
    where setdatabase = (select oid from pg_database where datname = current_database())
) f(x)
"""


async def _empty_shards(dsn: str) -> None:
    """Delete every row of every shard on one node (the coordinator holds the reference
    tables' shards). DELETE, not TRUNCATE: a test's few rows go in microseconds, where a
    TRUNCATE makes new files for each of a node's ~100 shards and ~300 indexes (half a
    second). Triggers and foreign-key checks are off for it (session_replication_role), so the
    order does not matter and the term statistics are emptied like everything else."""
    conn = await asyncpg.connect(
        dsn,
        server_settings={
            "citus.override_table_visibility": "off",
            "citus.enable_manual_changes_to_shards": "on",
            "session_replication_role": "replica",
        },
    )
    try:
        shards = await conn.fetch(
            "select c.oid::regclass::text as shard from pg_class c"
            " where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')"
            " and relation_is_a_known_shard(c.oid)"
        )
        await conn.execute("".join(f"delete from {r['shard']};" for r in shards))
    finally:
        await conn.close()


class _CitusPool:
    """Migrated, distributed test databases on the Citus cluster, reused between tests.

    `acquire` hands out an empty database (created and migrated when none is free); `release`
    ends every session still on it, truncates every table in one statement (Citus truncates
    distributed and reference tables on every shard) and restarts `recall_ids`, so the next
    test starts from exactly what a fresh migration leaves: no rows, ids from 1. A database
    whose schema the test changed is dropped instead.
    """

    def __init__(self, coordinator: str) -> None:
        self._coordinator = coordinator
        self._free: list[str] = []
        self._all: list[str] = []
        self._fingerprint: str | None = None

    async def acquire(self) -> str:
        if self._free:
            return self._free.pop()
        name = f"recall_c_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        await _create_citus_database(self._coordinator, name)
        self._all.append(name)
        conn = await connect(with_database(self._coordinator, name))
        try:
            await migrate(conn)
            await conn.execute("set citus.override_table_visibility = on")
            fingerprint = await conn.fetchval(_SCHEMA_FINGERPRINT)
        finally:
            await conn.close()
        if self._fingerprint is None:
            self._fingerprint = fingerprint
        assert fingerprint == self._fingerprint, "two migrations of the same files differ"
        return name

    async def release(self, name: str) -> None:
        conn = await asyncpg.connect(
            with_database(self._coordinator, name),
            # The catalog as the app's tables, without the coordinator's reference shards.
            server_settings={"citus.override_table_visibility": "on"},
        )
        try:
            await conn.execute(
                "select pg_terminate_backend(pid) from pg_stat_activity"
                " where datname = current_database() and pid <> pg_backend_pid()"
                " and backend_type = 'client backend'"
            )
            reusable = await conn.fetchval(_SCHEMA_FINGERPRINT) == self._fingerprint
            if reusable:
                await conn.execute("select setval('recall_ids', 1, false)")
        finally:
            await conn.close()
        if not reusable:
            self._all.remove(name)
            await drop_database(self._coordinator, name)
            return
        # A TRUNCATE of the distributed tables takes a second (a round of shard tasks, locks
        # and a two-phase commit per table); each node emptying its own shards, tens of
        # milliseconds. The shards are all that holds rows, so the result is the same.
        nodes = [self._coordinator, *await citus_workers(self._coordinator)]
        await asyncio.gather(*(_empty_shards(with_database(n, name)) for n in nodes))
        self._free.append(name)

    async def close(self) -> None:
        for name in self._all:
            await drop_database(self._coordinator, name)
        self._all, self._free = [], []


_CITUS_POOL = _CitusPool(CITUS) if CITUS is not None else None


@pytest.fixture(scope="session")
async def template_name(server_dsn: str) -> AsyncIterator[str]:
    if _CITUS_POOL is not None:
        yield ""  # no template on Citus: `dsn` takes a database of the pool
        await _CITUS_POOL.close()
        return
    name = f"recall_tpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(server_dsn)
    await admin.execute(f'create database "{name}"')
    conn = await connect(with_database(server_dsn, name))
    await migrate(conn)
    await conn.close()
    try:
        yield name
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@asynccontextmanager
async def migrated_database(server_dsn: str, template_name: str, name: str) -> AsyncIterator[str]:
    """A fresh, migrated, empty database `name` (cloned from the template), dropped
    afterwards; yields its DSN. On Citus one of the pool's, emptied afterwards (`name` unused)."""
    if _CITUS_POOL is not None:
        pooled = await _CITUS_POOL.acquire()
        try:
            yield with_database(CITUS or "", pooled)
        finally:
            await _CITUS_POOL.release(pooled)
        return
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'create database "{name}" template "{template_name}"')
        yield with_database(server_dsn, name)
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@pytest.fixture
async def dsn(server_dsn: str, template_name: str) -> AsyncIterator[str]:
    """A fresh, migrated, empty database for this test."""
    async with migrated_database(
        server_dsn, template_name, f"recall_t_{uuid.uuid4().hex[:12]}"
    ) as created:
        yield created


@pytest.fixture
async def empty_dsn(server_dsn: str) -> AsyncIterator[str]:
    """A fresh database with no migrations applied (on Citus: with its workers added, so that
    migrating it distributes it)."""
    name = f"recall_e_{uuid.uuid4().hex[:12]}"
    if CITUS is not None:
        await _create_citus_database(CITUS, name)
        try:
            yield with_database(CITUS, name)
        finally:
            await drop_database(CITUS, name)
        return
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'create database "{name}"')
        yield with_database(server_dsn, name)
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@pytest.fixture
async def db(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await connect(dsn)
    if CITUS is not None:
        # The tests' own inspection SQL joins across workspaces freely; the app's statements
        # (on their own connections) get no such help.
        await conn.execute("set citus.enable_repartition_joins = on")
        await conn.execute("set citus.multi_task_query_log_level = off")
        # Tests that make a store fail create triggers on distributed tables.
        await conn.execute("set citus.enable_unsafe_triggers = on")
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
def settings() -> Settings:
    # No background text removal: tests that leave deleted text pending check it is there;
    # tests/changes/test_erasure_worker.py turns it on.
    return Settings(RECALL_EXPOSE_STATEMENT_COUNT=True, RECALL_TEXT_REMOVAL_INTERVAL=0)


@pytest.fixture
async def client(dsn: str, settings: Settings) -> AsyncIterator[GraphQLClient]:
    async with graphql_client(settings, dsn) as client:
        yield client


@pytest.fixture
def issue_token(db: asyncpg.Connection) -> Any:
    """`await issue_token("member", "acme", "alice")` → a bearer token."""
    from app.data.tokens import issue_actor_token

    async def issue(kind: str, workspace: str, actor: str) -> str:
        return await issue_actor_token(db, workspace, kind, actor)

    return issue


@pytest.fixture
async def history_personas(db: asyncpg.Connection) -> None:
    """The history personas (tests.history_support.history_acme, and globex) are loaded."""
    await load_history_personas(db)


@pytest.fixture
async def alice_turn(
    history_personas: None, client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> str:
    """The most common historySearch set-up: a turn token of helper's turn in its DM with
    alice, alice asking, on the history personas."""
    return await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    """Debian's chromium driven by Playwright, one per browser-test module (skipped where it is
    missing, unless CI requires it: tests/browser_support.py)."""
    from playwright.async_api import async_playwright

    from tests.browser_support import CHROMIUM_ARGS, chromium_path, require_browser

    require_browser()
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()
