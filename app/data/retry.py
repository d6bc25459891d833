"""Work the database rolled back for a reason that passes, done again inside the request.

Two failures mean "nothing of this happened, and the same work sent again succeeds":

- a deadlock or a serialization failure (SQLSTATE class 40): PostgreSQL, or Citus's distributed
  deadlock detection while a shard move blocks writes for its catch-up, cancelled the
  transaction;
- a statement planned against a shard that Citus moved or split while the statement waited for
  the shard's lock ("could not find valid entry for shard": tenant isolation, a blocking move).

Both are reported before anything commits, so the unit that failed is run again, whole: one
statement outside a transaction (Session does that), or a whole transaction (`in_transaction`,
whose body must be safe to run again: it keeps nothing but what it returns). A few attempts
with growing, jittered pauses (about 2 s of waiting at most, well inside the request budget);
then the request answers 503 SERVICE_UNAVAILABLE, try again, as before. Nothing else is retried:
after a lost connection the commit may have happened, a timeout has spent the budget, and a lost
worker does not come back in seconds (its tenants answer 503 at once: docs/scale.md).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from app.data.executor import Transactional
from app.errors import ServiceUnavailable
from app.observability.metrics import RETRIES

T = TypeVar("T")

# Pauses before the second, third, … attempt (each times a random factor in [0.5, 1.5]): a
# deadlock's other side and a move's catch-up need some milliseconds to finish, not seconds.
PAUSES = (0.02, 0.08, 0.25, 0.6)

# Citus's message when the shard a statement was planned against is gone (moved or split).
SHARD_MOVED = "could not find valid entry for shard"

CONFLICT = "the request met a concurrent change and was rolled back; try again"
MOVED = "the database is unavailable; try again shortly"


class Transient(ServiceUnavailable):
    """SERVICE_UNAVAILABLE for a failure that rolled back the unit that met it and passes."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def shard_moved(e: BaseException) -> bool:
    return isinstance(e, asyncpg.InternalServerError) and str(e).startswith(SHARD_MOVED)


# Of class 40, the two that pass. Not 40003 (statement completion unknown: it may have been
# applied) nor 40002 (an integrity violation at commit: it fails the same way every time).
CONFLICTS = (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)


def transient(e: BaseException) -> Transient | None:
    """`e` as a Transient if it is one (as raised by Session, or straight from asyncpg)."""
    if isinstance(e, Transient):
        return e
    if isinstance(e, CONFLICTS):
        return Transient(CONFLICT, "conflict")
    if shard_moved(e):
        return Transient(MOVED, "shard_moved")
    return None


async def once(work: Callable[[], Awaitable[T]]) -> T:
    """`work()` once; a transient failure is raised as a Transient (for the caller's unit to
    run again, or the client to see as 503)."""
    try:
        return await work()
    except Exception as e:
        failure = transient(e)
        if failure is None or failure is e:
            raise
        raise failure from e


async def retried(work: Callable[[], Awaitable[T]]) -> T:
    """`work()`, run again after a transient failure (the last one is raised, as a Transient)."""
    for pause in PAUSES:
        try:
            return await work()
        except Exception as e:
            failure = transient(e)
            if failure is None:
                raise
            RETRIES.labels(failure.reason).inc()
        await asyncio.sleep(pause * random.uniform(0.5, 1.5))
    return await once(work)


async def in_transaction(db: Transactional, body: Callable[[], Awaitable[T]]) -> T:
    """`body()` inside one transaction of `db`; the whole transaction again after a transient
    failure (the database rolled it back: nothing of it happened). On a connection already
    inside a transaction the unit is that outer transaction, which has failed: no retry."""

    async def once() -> T:
        async with db.transaction():
            return await body()

    if isinstance(db, asyncpg.Connection) and db.is_in_transaction():
        return await once()
    return await retried(once)
