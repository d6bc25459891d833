"""Connecting to PostgreSQL: the DSN (configured or embedded) and the one pool per process."""

from __future__ import annotations

import json
import sys

import asyncpg

from app.settings import Settings


def resolve_database_url(settings: Settings, *, announce: bool = True) -> str:
    """The configured DATABASE_URL, or the embedded server's (started or joined here)."""
    if settings.database_url:
        return settings.database_url
    from app.embedded_db import embedded_database_url

    url = embedded_database_url(settings.recall_data_dir)
    if announce:
        folder = settings.recall_data_dir.expanduser().resolve() / "pgdata"
        print(f"recall: embedded PostgreSQL, data folder {folder}", file=sys.stderr)
    return url


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Returning a connection to the pool: asyncpg still rolls back an open transaction first;
    its default reset also runs `RESET ALL; UNLISTEN *; pg_advisory_unlock_all(); CLOSE ALL`,
    a round trip per request. Nothing here changes session state (no SET, LISTEN, advisory
    lock or cursor on a pooled connection: transaction-scoped only), so there is nothing to
    reset."""


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    statement_timeout_ms: int = 5000,
    connect_timeout: float = 2.0,
) -> asyncpg.Pool:
    pool = await asyncpg.create_pool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        reset=_keep_session,
        # A connection's handshake, bounded: a database that is down or frozen must not hold
        # a request (or /readyz) for a minute.
        timeout=connect_timeout,
        # The client side of statement_timeout: a frozen server cannot cancel its own
        # statements, so asyncpg stops waiting a little after PostgreSQL would have.
        command_timeout=statement_timeout_ms / 1000 + 1,
        server_settings={
            # asyncpg prepares every statement; after a few runs PostgreSQL would switch to a
            # generic plan, which cannot see how selective a search's terms are (a rare term
            # wants the GIN index, a common one the recency index). Recall's statements are
            # cheap to plan.
            "plan_cache_mode": "force_custom_plan",
            # No JIT: historySearch's statement is estimated above jit_above_cost, and on a
            # server built with LLVM (Debian's PostgreSQL 15) compiling its ~700 expressions
            # took 7.7 of the 7.8 s it ran (EXPLAIN's JIT timing) for a search that executes in
            # milliseconds: over statement_timeout. Recall's statements are short; compiling
            # never pays for itself here.
            "jit": "off",
            # No request may hold the database longer than this, whatever it asks for.
            "statement_timeout": str(statement_timeout_ms),
            "idle_in_transaction_session_timeout": str(statement_timeout_ms * 2),
        },
    )
    assert pool is not None
    return pool


async def connect(dsn: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(dsn)
    await _init_connection(conn)
    return conn
