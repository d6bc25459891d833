"""The live log's bounded retention (docs/live.md): every server process forgets events older
than RECALL_LIVE_RETENTION seconds, every tenth of that (at most a minute apart). A resume from
before them is INVALID_CURSOR (app.live.updates)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import asyncpg

from app.data import live_events

_log = logging.getLogger("recall.live")


async def prune_live_log(pool: asyncpg.Pool, retention: float) -> None:
    interval = min(60.0, retention / 10)
    while True:
        await asyncio.sleep(interval)
        with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            async with pool.acquire() as conn:
                removed = await live_events.prune(conn, retention)
            if removed:
                _log.info("live: pruned %d events of the live log", removed)
