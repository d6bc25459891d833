"""The installation's secrets (migrations/026), read once per process."""

from __future__ import annotations

from app.data.executor import Executor


async def cursor_key(db: Executor) -> bytes:
    """The key that seals cursors (app.search.opaque)."""
    key: bytes | None = await db.fetchval("select value from recall_secrets where name = 'cursors'")
    if key is None:
        raise RuntimeError("recall_secrets has no 'cursors' key: run recall migrate")
    return key
