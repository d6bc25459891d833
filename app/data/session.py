"""One request's database session: a pooled connection acquired on first use.

asyncpg runs one statement at a time per connection, and dataloaders of one request dispatch
concurrently, so statements are serialized here. Every statement is counted: the count is what
query-count tests pin (no N+1).

Root fields of one request resolve concurrently on this one connection, so a transaction owns
it while it is open: a statement from outside that transaction (another field's) waits until
it ends, instead of running inside it — where it would see the transaction's uncommitted
writes and, if the transaction rolled back, lose its own (a search's audit row). Whether a
statement is inside is told by the task's context (a ContextVar the transaction sets, which
the tasks it starts inherit), not by chance of timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeAlias, TypeVar

import asyncpg

from app.data import retry
from app.errors import ServiceUnavailable, Timeout
from app.observability import context
from app.observability.metrics import POOL_WAITING

# A pooled connection (asyncpg hands out proxies).
_Conn: TypeAlias = "asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
T = TypeVar("T")

# The session whose transaction the current task runs inside, if any.
_inside: ContextVar[Session | None] = ContextVar("recall_session_transaction", default=None)


def _destination_key(destination: Sequence[Any]) -> tuple[Any, ...]:
    workspace_id, kind, namespace_id, readers = destination
    return (workspace_id, kind, namespace_id, tuple(readers))


# What a connection that broke, or a database that stopped answering or is shutting down
# (SQLSTATE classes 08 and 57: a restart terminates every session), raises.
_UNREACHABLE = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.TooManyConnectionsError,
)


# Citus's errors when a worker that one of the transaction's statements used went away (a lost
# worker), raised as internal errors (XX000, no class of their own): SERVICE_UNAVAILABLE (503,
# try again) at once, not an internal error, and not run again here (app.data.retry says why).
# The first is Citus's own. The others are the worker's words as it stops, which Citus relays
# without their SQLSTATE (57P01, 57P03, 08006) when a COPY to a shard fails: an applyChanges
# batch that a worker's fast shutdown interrupted answered 500 in bench.scaleout once.
_WORKER_LOST = (
    "failure on connection marked as essential",
    "terminating connection due to administrator command",
    "the database system is shutting down",
    "server closed the connection unexpectedly",
)


def _worker_lost(e: BaseException) -> bool:
    return isinstance(e, asyncpg.InternalServerError) and str(e).startswith(_WORKER_LOST)


class Session:
    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        planned_once: asyncpg.Pool | None = None,
        acquire_timeout: float = 2.0,
    ) -> None:
        self._pool = pool
        # The pool whose connections plan a statement once (app.db.Pools.generic); without
        # one, fetch_planned_once runs on this session's own connection.
        self._planned_once = planned_once
        self._acquire_timeout = acquire_timeout
        self._conn: _Conn | None = None
        self._lock = asyncio.Lock()
        self._transaction_lock = asyncio.Lock()
        # Set while no transaction is open; statements from outside one wait for it.
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()
        self.statements = 0
        # Set when a statement failed in a way that may leave the connection unusable (a
        # timeout, a lost connection): it is discarded rather than returned to the pool.
        self.broken = False
        # Time spent waiting on the database (round trips included), for the benchmark.
        self.database_seconds = 0.0
        # The allowed audience ids (app.data.eligibility.ALLOWED_AUDIENCE_IDS) of each
        # destination read in this request (they live and die with the request, like every cache
        # here: identity links are checked live).
        self._allowed_audiences: dict[tuple[Any, ...], list[int]] = {}

    async def _connection(self) -> _Conn:
        if self._conn is None:
            # Bounded: with the database down or every connection busy, the request answers
            # SERVICE_UNAVAILABLE in seconds instead of queueing until a client gives up.
            try:
                with POOL_WAITING.track_inprogress():
                    self._conn = await self._pool.acquire(timeout=self._acquire_timeout)
            except (*_UNREACHABLE, asyncpg.PostgresConnectionError) as e:
                raise ServiceUnavailable("the database is unavailable; try again shortly") from e
        return self._conn

    def allowed_audiences(self, destination: Sequence[Any]) -> list[int] | None:
        """The allowed audience ids a statement of this request reported for `destination`
        (its $1-$4 parameters), if any."""
        return self._allowed_audiences.get(_destination_key(destination))

    def remember_allowed_audiences(
        self, destination: Sequence[Any], rows: Sequence[asyncpg.Record]
    ) -> None:
        """Keep the ids a statement reported (REPORT_ALLOWED_AUDIENCES) for this request."""
        for r in rows:
            if r["allowed_audience_ids"] is not None:
                self._allowed_audiences[_destination_key(destination)] = r["allowed_audience_ids"]
                return

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        """A statement stopped by statement_timeout is TIMEOUT; a lost or unreachable database
        SERVICE_UNAVAILABLE. Either way the connection is not handed back to the pool."""
        try:
            yield
        except asyncpg.QueryCanceledError as e:  # statement_timeout (app.db); class 57 too
            self.broken = True
            raise Timeout("the request took too long and was stopped") from e
        except _UNREACHABLE as e:
            self.broken = True
            raise ServiceUnavailable("the database is unavailable; try again shortly") from e
        except (asyncpg.InternalServerError, asyncpg.TransactionRollbackError) as e:
            failure = retry.transient(e)
            if failure is not None:
                # A deadlock, a serialization failure or a moved shard: rolled back, and the
                # connection is fine; the statement (or its transaction) is run again.
                raise failure from e
            if isinstance(e, asyncpg.TransactionRollbackError):
                # The rest of class 40 does not pass (or may have been applied): 503 at once.
                raise ServiceUnavailable(retry.CONFLICT) from e
            if not _worker_lost(e):
                raise
            self.broken = True
            raise ServiceUnavailable("the database is unavailable; try again shortly") from e

    async def _turn(self) -> None:
        """Take the connection for one statement: at once inside this session's open
        transaction, otherwise once no transaction is open (returns holding _lock)."""
        while True:
            if _inside.get() is not self:
                await self._no_transaction.wait()
            await self._lock.acquire()
            if _inside.get() is self or self._no_transaction.is_set():
                return
            self._lock.release()  # a transaction began meanwhile: wait for it to end

    @asynccontextmanager
    async def _statement(self) -> AsyncIterator[_Conn]:
        """One statement's turn on the connection: counted, and its round trip timed."""
        await self._turn()
        try:
            conn = await self._connection()
            self.statements += 1
            started = time.perf_counter()
            try:
                with self._translated():
                    yield conn
            finally:
                self.database_seconds += time.perf_counter() - started
        finally:
            self._lock.release()

    async def _run(self, statement: Callable[[_Conn], Awaitable[T]]) -> T:
        """One statement; outside a transaction, run again after a transient failure (it
        rolled back: app.data.retry). Inside one, the unit run again is the transaction."""

        async def once() -> T:
            async with self._statement() as conn:
                return await statement(conn)

        if _inside.get() is self:
            return await once()
        return await retry.retried(once)

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return list(await self._run(lambda conn: conn.fetch(sql, *args)))

    async def fetch_planned_once(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        """A statement written so that one plan is right for every value of its parameters,
        on a connection that plans it once (app.db.GENERIC_PLANNER_SETTINGS) rather than for
        every call: a connection of its own, held for this statement only, outside any
        transaction of this session (it reads committed rows, as a statement before the
        transaction would). Counted and timed like any other, and run again like any other
        after a transient failure."""
        if self._planned_once is None:
            return await self.fetch(sql, *args)
        run = retry.retried
        if _inside.get() is self:
            # Called inside this session's transaction: the unit run again is that transaction.
            run = retry.once
        return await run(lambda: self._fetch_planned_once(sql, args))

    async def _fetch_planned_once(self, sql: str, args: tuple[Any, ...]) -> list[asyncpg.Record]:
        assert self._planned_once is not None
        pool = self._planned_once
        self.statements += 1
        started = time.perf_counter()
        try:
            try:
                with POOL_WAITING.track_inprogress():
                    conn = await pool.acquire(timeout=self._acquire_timeout)
            except (*_UNREACHABLE, asyncpg.PostgresConnectionError) as e:
                raise ServiceUnavailable("the database is unavailable; try again shortly") from e
            try:
                return list(await conn.fetch(sql, *args))
            except BaseException as e:
                if retry.transient(e) is not None:
                    raise  # rolled back; the connection is fine (retried above)
                # A statement stopped half way (a timeout, a lost connection, a cancelled
                # request): this connection is not handed to another request.
                conn.terminate()
                if isinstance(e, asyncpg.QueryCanceledError):
                    raise Timeout("the request took too long and was stopped") from e
                if isinstance(e, _UNREACHABLE) or _worker_lost(e):
                    raise ServiceUnavailable(
                        "the database is unavailable; try again shortly"
                    ) from e
                if isinstance(e, asyncpg.TransactionRollbackError):
                    raise ServiceUnavailable(retry.CONFLICT) from e
                raise
            finally:
                await pool.release(conn)
        finally:
            self.database_seconds += time.perf_counter() - started

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self._run(lambda conn: conn.fetchrow(sql, *args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._run(lambda conn: conn.fetchval(sql, *args))

    async def execute(self, sql: str, *args: Any) -> str:
        return str(await self._run(lambda conn: conn.execute(sql, *args)))

    async def executemany(self, sql: str, args: list[tuple[Any, ...]]) -> None:
        # asyncpg's executemany is atomic: a failed one wrote nothing.
        await self._run(lambda conn: conn.executemany(sql, args))

    @asynccontextmanager
    async def transaction(self, *, readonly: bool = False) -> AsyncIterator[None]:
        """A transaction on this session's connection. BEGIN and COMMIT (or ROLLBACK) are
        statements too, each a round trip: counted and timed like any other.

        Root fields of one request resolve concurrently (two aliased searches, a search next to
        searchStatus), so transactions take turns (one open at a time), and while one is open
        every statement from outside it waits (the module docstring says why).
        """
        async with self._transaction_lock:
            async with self._statement() as conn:
                tx = conn.transaction(readonly=readonly)
                await tx.start()
                self._no_transaction.clear()
            entered = _inside.set(self)
            try:
                try:
                    yield
                except BaseException:
                    async with self._lock:
                        self.statements += 1
                        started = time.perf_counter()
                        try:
                            await tx.rollback()
                        except (*_UNREACHABLE, asyncpg.PostgresError):
                            # A connection whose statement was cancelled or lost cannot roll
                            # back; discarding it ends the transaction on the server.
                            self.broken = True
                        finally:
                            self.database_seconds += time.perf_counter() - started
                    raise
                async with self._statement():
                    await tx.commit()
            finally:
                _inside.reset(entered)
                self._no_transaction.set()

    async def close(self) -> None:
        context.observe_session(self.statements, self.database_seconds)
        if self._conn is not None:
            conn, self._conn = self._conn, None
            # The pool replaces a connection that died; there is nothing to hand back then.
            with contextlib.suppress(*_UNREACHABLE):
                if self.broken:
                    conn.terminate()
                await self._pool.release(conn)
