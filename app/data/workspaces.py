"""The workspace row as the writers' lock (live changes, replies).

Every writer of a workspace's messages takes the workspace row lock first (`lock_workspace`,
or postReply's counter update), then scope rows: one order, so concurrent connectors and
replies queue instead of deadlocking, and `seq` / `global_seq` are handed out under the lock.
The lock is FOR NO KEY UPDATE, never FOR UPDATE: every row a search writes (its audit row, a
turn's evidence) has a foreign key to the workspace, whose check takes FOR KEY SHARE on its
row, which FOR UPDATE blocks and FOR NO KEY UPDATE does not. So writers queue behind each other
and readers never queue behind a writer (tests/data/test_writers_and_readers.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class LockedWorkspace:
    id: int
    namespace_id: int
    last_global_seq: int


async def lock_workspace(db: Executor, workspace_id: int) -> LockedWorkspace:
    row = await db.fetchrow(
        "select id, default_namespace_id, last_global_seq from workspaces where id = $1"
        " for no key update",
        workspace_id,
    )
    assert row is not None
    return LockedWorkspace(row["id"], row["default_namespace_id"], row["last_global_seq"])
