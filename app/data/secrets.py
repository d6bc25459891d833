"""The installation's secrets (migrations/026), read once per process."""

from __future__ import annotations

import secrets

from app.data.executor import Executor


async def cursor_key(db: Executor) -> bytes:
    """The key that seals cursors (app.message_search.opaque): drawn from the operating system's
    random source by the first process that needs it; every later one, on any host, reads the
    same (ON CONFLICT keeps the first)."""
    await db.execute(
        "insert into recall_secrets (name, value) values ('cursors', $1) on conflict do nothing",
        secrets.token_bytes(32),
    )
    key: bytes = await db.fetchval("select value from recall_secrets where name = 'cursors'")
    return key
