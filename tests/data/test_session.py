"""app.data.session: one request's connection, shared by its root fields. A transaction owns
the connection while it is open: another field's statement waits for it, instead of running
inside it (and being rolled back with it)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from app.data.session import Session
from app.db import create_pool
from app.errors import Timeout


async def test_a_statement_of_another_field_never_runs_inside_a_transaction(
    dsn: str, db: asyncpg.Connection
) -> None:
    await db.execute("create table session_probe (v text)")
    pool = await create_pool(dsn, min_size=1, max_size=1)
    session = Session(pool)
    in_transaction = asyncio.Event()
    other_done = asyncio.Event()
    try:

        async def failing_field() -> None:
            async with session.transaction():
                await session.execute("insert into session_probe values ('inside')")
                in_transaction.set()
                await asyncio.sleep(0.3)
                assert not other_done.is_set(), "another field's statement ran meanwhile"
                raise RuntimeError("this field fails")

        async def other_field() -> None:
            await in_transaction.wait()
            await session.execute("insert into session_probe values ('outside')")
            other_done.set()

        results = await asyncio.gather(failing_field(), other_field(), return_exceptions=True)
        assert isinstance(results[0], RuntimeError) and results[1] is None
        rows = await db.fetch("select v from session_probe")
        assert [r["v"] for r in rows] == ["outside"], "the other write was rolled back with it"
    finally:
        await session.close()
        await pool.close()


async def test_the_transactions_own_tasks_run_inside_it(dsn: str, db: asyncpg.Connection) -> None:
    """What a transaction starts (say, a dataloader's batch) is inside it, not kept waiting."""
    await db.execute("create table session_probe (v text)")
    pool = await create_pool(dsn, min_size=1, max_size=1)
    session = Session(pool)
    try:
        async with session.transaction():
            await asyncio.wait_for(
                asyncio.gather(
                    session.execute("insert into session_probe values ('a')"),
                    session.execute("insert into session_probe values ('b')"),
                ),
                5,
            )
            seen = await session.fetchval("select count(*) from session_probe")
        assert seen == 2
    finally:
        await session.close()
        await pool.close()


@pytest.mark.parametrize("fails", [False, True])
async def test_statements_outside_wait_and_then_run(
    dsn: str, db: asyncpg.Connection, fails: bool
) -> None:
    pool = await create_pool(dsn, min_size=1, max_size=1)
    session = Session(pool)
    try:
        order: list[str] = []

        async def field() -> None:
            async with session.transaction():
                order.append("begin")
                await asyncio.sleep(0.2)
                order.append("end")
                if fails:
                    raise RuntimeError

        async def reader() -> None:
            await asyncio.sleep(0.05)
            await session.fetchval("select 1")
            order.append("read")

        await asyncio.gather(field(), reader(), return_exceptions=True)
        assert order == ["begin", "end", "read"]
    finally:
        await session.close()
        await pool.close()


async def test_a_statement_planned_once_runs_on_the_generic_pool_and_is_counted(
    dsn: str, db: asyncpg.Connection
) -> None:
    """fetch_planned_once: historySearch's statement is planned once per connection (its access
    path is chosen in SQL), every other statement is planned for its parameters. A Citus
    coordinator plans every call (app.db._init_generic_connection)."""
    citus = await db.fetchval("select exists (select 1 from pg_extension where extname = 'citus')")
    # Two: a session keeps its connection until it closes, and `alone` below needs its own.
    custom = await create_pool(dsn, min_size=1, max_size=2)
    generic = await create_pool(dsn, min_size=1, max_size=1, generic_plans=True)
    session = Session(custom, planned_once=generic)
    try:
        [row] = await session.fetch_planned_once(
            "select current_setting('plan_cache_mode') as mode, $1::int as v", 7
        )
        planned = "force_custom_plan" if citus else "force_generic_plan"
        assert (row["mode"], row["v"]) == (planned, 7)
        assert await session.fetchval("select current_setting('plan_cache_mode')") == (
            "force_custom_plan"
        )
        assert session.statements == 2 and session.database_seconds > 0
        # Without a generic pool the statement runs on the session's own connection.
        alone = Session(custom)
        try:
            [row] = await alone.fetch_planned_once("select current_setting('plan_cache_mode') m")
            assert row["m"] == "force_custom_plan"
        finally:
            await alone.close()
    finally:
        await session.close()
        await custom.close()
        await generic.close()


async def test_a_statement_planned_once_that_times_out_is_a_timeout_and_frees_its_connection(
    dsn: str,
) -> None:
    custom = await create_pool(dsn, min_size=1, max_size=1)
    generic = await create_pool(
        dsn, min_size=1, max_size=1, generic_plans=True, statement_timeout_ms=100
    )
    session = Session(custom, planned_once=generic)
    try:
        with pytest.raises(Timeout):
            await session.fetch_planned_once("select pg_sleep(2)")
        # The connection it stopped is not handed on half-used: the next statement runs.
        [row] = await asyncio.wait_for(session.fetch_planned_once("select 1 as one"), 5)
        assert row["one"] == 1
    finally:
        await session.close()
        await custom.close()
        await generic.close()
