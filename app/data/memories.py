"""Agents' memories as live changes write them, looked up by key."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.executor import Executor


async def memories_by_keys(db: Executor, workspace_id: int, keys: Sequence[str]) -> dict[str, int]:
    rows = await db.fetch(
        "select id, key from memories where workspace_id = $1 and key = any($2::text[])",
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: r["id"] for r in rows}


async def insert_memory(db: Executor, workspace_id: int, key: str, audience_id: int) -> None:
    await db.execute(
        "insert into memories (workspace_id, key, audience_id) select $1, $2, $3",
        workspace_id,
        key,
        audience_id,
    )
