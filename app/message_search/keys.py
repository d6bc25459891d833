"""The keys a request works with: the audit digests' master key (RECALL_MASTER_KEY, optional:
digests are empty without it) and the cursor sealer (the installation's `cursors` secret,
migrations/026), read from the database once per process (KeyRing) and handed to every
request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg

from app.data.secrets import cursor_key
from app.errors import ServiceUnavailable
from app.message_search.opaque import Sealer


@dataclass(frozen=True, slots=True)
class Keys:
    master_key: str | None
    cursors: Sealer


class KeyRing:
    """The process's Keys, read on the first request that needs them (or at start-up) through
    the pool, never through a request's counted session. A secret, not data: it never changes."""

    def __init__(self, pool: asyncpg.Pool, master_key: str | None, *, timeout: float) -> None:
        self._pool = pool
        self._master_key = master_key
        self._timeout = timeout
        self._keys: Keys | None = None
        self._lock = asyncio.Lock()

    async def keys(self) -> Keys:
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    try:
                        async with self._pool.acquire(timeout=self._timeout) as conn:
                            key = await cursor_key(conn)
                    except (OSError, TimeoutError, asyncpg.PostgresError) as e:
                        raise ServiceUnavailable(
                            "the database is unavailable; try again shortly"
                        ) from e
                    self._keys = Keys(self._master_key, Sealer(key))
        return self._keys
