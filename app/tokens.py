"""Bearer tokens: random, shown once, stored only as a SHA-256 digest."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

import asyncpg

from app.data.session import Session
from app.errors import UsageError

_PREFIX = {"member": "rcm_", "agent": "rca_", "turn": "rct_"}


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token(kind: str) -> str:
    return _PREFIX[kind] + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request speaks for. `turn_id` is set only for turn tokens."""

    workspace_id: int
    kind: str  # member | agent | turn
    actor_id: int
    turn_id: int | None


async def issue_actor_token(
    conn: asyncpg.Connection, workspace_key: str, kind: str, actor_key: str
) -> str:
    """A new token for a member or agent, named by fixture keys."""
    row = await conn.fetchrow(
        """
        select w.id as workspace_id, a.id as actor_id, a.kind
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
    return await store_token(conn, row["workspace_id"], kind, row["actor_id"], None)


async def store_token(
    conn: asyncpg.Connection, workspace_id: int, kind: str, actor_id: int, turn_id: int | None
) -> str:
    token = new_token(kind)
    await conn.execute(
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


async def authenticate(conn: asyncpg.Connection | Session, token: str) -> Principal | None:
    """The principal behind a token, or None for an unknown or revoked one."""
    if not token or len(token) > 200:
        return None
    row = await conn.fetchrow(
        """
        select workspace_id, kind, actor_id, turn_id
        from tokens where token_hash = $1 and revoked_at is null
        """,
        hash_token(token),
    )
    if row is None:
        return None
    return Principal(row["workspace_id"], row["kind"], row["actor_id"], row["turn_id"])
