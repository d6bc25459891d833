"""Connecting to PostgreSQL: the DSN (configured or embedded) and the process's two pools."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import asyncpg

from app.settings import Settings


def resolve_database_url(settings: Settings, *, announce: bool = True) -> str:
    """The configured DATABASE_URL, or the embedded server's (started or joined here)."""
    if settings.database_url:
        return settings.database_url
    from app.embedded_db import data_folder, embedded_database_url

    url = embedded_database_url(settings.recall_data_dir)
    if announce:
        folder = data_folder(settings.recall_data_dir)
        print(f"recall: embedded PostgreSQL, data folder {folder}", file=sys.stderr)
    return url


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _init_generic_connection(conn: asyncpg.Connection) -> None:
    """A connection of the planned-once pool. On a Citus coordinator it plans each call after
    all: Citus builds a distributed plan from the parameters' values, and a generic plan of a
    statement that passes parameters to SQL functions is refused ("could not create
    distributed plan"). The statement's text is the same; only where it is planned differs."""
    await _init_connection(conn)
    if await conn.fetchval("select exists (select 1 from pg_extension where extname = 'citus')"):
        await conn.execute("set plan_cache_mode = force_custom_plan")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Returning a connection to the pool: asyncpg still rolls back an open transaction first;
    its default reset also runs `RESET ALL; UNLISTEN *; pg_advisory_unlock_all(); CLOSE ALL`,
    a round trip per request. No request changes session state (no SET, LISTEN, advisory
    lock or cursor on a pooled connection: transaction-scoped only), so there is nothing to
    reset. The one session SET is a connection's own, made once when it opens
    (_init_generic_connection on Citus) — and it lasts only because nothing resets it here."""


# How every statement of the gateway is planned; the benchmark's baselines (bench.run,
# bench.explain) are planned the same way, so they measure plans the app would use.
PLANNER_SETTINGS = {
    # asyncpg prepares every statement; after a few runs PostgreSQL would switch to a generic
    # plan, which cannot see the values: how selective a filter is, how common a word. The
    # statements planned here are cheap to plan; the two search statements, which are not,
    # choose their access path in SQL and are planned once (GENERIC_PLANNER_SETTINGS).
    "plan_cache_mode": "force_custom_plan",
    # A request's work is bounded (windows, budgets, pages): starting parallel workers costs
    # more than they save, and takes cores from the requests running beside it.
    "max_parallel_workers_per_gather": "0",
    # JIT compiles a statement whose estimated cost passes jit_above_cost. Recall's are index
    # lookups over bounded windows, but the estimates of the eligibility fragments (the lineage
    # walk's subplans) run into the hundreds of thousands, so PostgreSQL compiled nearly every
    # search: a rare-term page in one statement took 64 ms instead of 3.5 at 100k messages, one
    # historySearch of a 700-message workspace 14 s (636 functions), on Debian's PostgreSQL 15,
    # which ships llvmjit. Nothing here runs long enough to repay a compilation.
    "jit": "off",
}


# The same, planned once per connection: for the statements written so that one plan is right
# for every value of their parameters (historySearch's and messageSearch's page statements
# choose their access path from the term statistics, in SQL). historySearch's statement took
# 7-12 ms to plan and a few to run at 1M messages, messageSearch's ~3.7 (docs/performance.md).
GENERIC_PLANNER_SETTINGS = {**PLANNER_SETTINGS, "plan_cache_mode": "force_generic_plan"}


# The longest statement text a connection keeps prepared (historySearch's is ~20 KB).
MAX_CACHEABLE_STATEMENT = 256 * 1024


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    statement_timeout_ms: int = 5000,
    connect_timeout: float = 2.0,
    generic_plans: bool = False,
) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_generic_connection if generic_plans else _init_connection,
        reset=_keep_session,
        # asyncpg keeps a connection's prepared statements only up to 15 KiB of text by
        # default; a search statement is larger, and was parsed (and, on the generic pool,
        # planned) again on every call.
        max_cacheable_statement_size=MAX_CACHEABLE_STATEMENT,
        # A connection's handshake, bounded: a database that is down or frozen must not hold
        # a request (or /readyz) for a minute.
        timeout=connect_timeout,
        # The client side of statement_timeout: a frozen server cannot cancel its own
        # statements, so asyncpg stops waiting a little after PostgreSQL would have.
        command_timeout=statement_timeout_ms / 1000 + 1,
        server_settings={
            **(GENERIC_PLANNER_SETTINGS if generic_plans else PLANNER_SETTINGS),
            # No request may hold the database longer than this, whatever it asks for.
            "statement_timeout": str(statement_timeout_ms),
            "idle_in_transaction_session_timeout": str(statement_timeout_ms * 2),
        },
    )
    assert pool is not None
    return pool


async def connect(dsn: str, *, server_settings: dict[str, str] | None = None) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn, server_settings=server_settings)
    await _init_connection(conn)
    return conn


@dataclass(frozen=True, slots=True)
class Pools:
    """The process's two pools: `custom` plans every statement for its parameters (most of
    Recall's: a search's access path is picked from its terms' selectivity); `generic` plans a
    statement once per connection, for the few written so that one plan is right for every
    value of their parameters (historySearch's: app.data.session.Session.fetch_planned_once;
    on a Citus coordinator it plans each call too, as Citus requires)."""

    custom: asyncpg.Pool
    generic: asyncpg.Pool

    def named(self) -> dict[str, asyncpg.Pool]:
        return {"custom": self.custom, "generic": self.generic}

    async def close(self) -> None:
        await self.custom.close()
        await self.generic.close()


async def open_pools(settings: Settings, dsn: str) -> Pools:
    """The process's two pools (`recall serve`'s lifespan, `recall mcp`), sized and bounded
    by the settings."""
    return Pools(
        *[
            await create_pool(
                dsn,
                min_size=settings.pool_min_size,
                max_size=settings.pool_max_size,
                statement_timeout_ms=settings.statement_timeout_ms,
                connect_timeout=settings.db_acquire_timeout,
                generic_plans=generic,
            )
            for generic in (False, True)
        ]
    )
