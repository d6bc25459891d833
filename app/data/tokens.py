"""Bearer tokens: random, shown once, stored only as a SHA-256 digest (lookup: app.data.readers)."""

from __future__ import annotations

import hashlib
import secrets

from app.data.executor import Executor
from app.errors import UsageError

_PREFIX = {"member": "rcm_", "agent": "rca_", "turn": "rct_", "connector": "rcc_"}


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token(kind: str) -> str:
    return _PREFIX[kind] + secrets.token_urlsafe(32)


async def issue_actor_token(db: Executor, workspace_key: str, kind: str, actor_key: str) -> str:
    """A new token for a member or agent, named by fixture keys."""
    row = await db.fetchrow(
        """
        select w.id as workspace_id, a.id as actor_id, a.kind,
               a.deactivated_at is not null or a.deleted_at is not null as gone
        from workspaces w
        left join actors a on a.workspace_id = w.id and a.key = $2
        where w.key = $1
        """,
        workspace_key,
        actor_key,
    )
    if row is None:
        raise UsageError(f"unknown workspace '{workspace_key}'")
    if row["actor_id"] is None or row["kind"] != kind:
        raise UsageError(f"unknown {kind} '{actor_key}' in workspace '{workspace_key}'")
    if row["gone"]:
        what = "deactivated" if kind == "member" else "deleted"
        raise UsageError(f"{kind} '{actor_key}' in workspace '{workspace_key}' was {what}")
    return await store_token(db, row["workspace_id"], kind, row["actor_id"], None)


async def issue_connector_token(db: Executor, workspace_key: str) -> str:
    """A new token for a workspace's connector: it applies changes and reads no messages."""
    workspace_id = await db.fetchval("select id from workspaces where key = $1", workspace_key)
    if workspace_id is None:
        raise UsageError(f"unknown workspace '{workspace_key}'")
    return await store_token(db, workspace_id, "connector", None, None)


async def store_token(
    db: Executor, workspace_id: int, kind: str, actor_id: int | None, turn_id: int | None
) -> str:
    token = new_token(kind)
    await db.execute(
        """
        insert into tokens (workspace_id, token_hash, kind, actor_id, turn_id)
        values ($1, $2, $3, $4, $5)
        """,
        workspace_id,
        hash_token(token),
        kind,
        actor_id,
        turn_id,
    )
    return token
