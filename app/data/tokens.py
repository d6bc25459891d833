"""Bearer tokens: random, shown once, stored only as a SHA-256 digest (lookup: app.data.readers).

A token may expire (`expires_at`, from a time to live) and may be revoked; either way it stops
authenticating at once. Listing shows what a token is for, never the token.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from app.data.executor import Executor
from app.errors import UsageError

_PREFIX = {"member": "rcm_", "agent": "rca_", "turn": "rct_", "connector": "rcc_"}


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_token(kind: str, workspace_id: int) -> str:
    """`rcm_w<workspace id>.<random>`: the workspace routes the lookup to one shard on Citus
    (migrations/015). token_urlsafe never writes a '.', so the separator is unambiguous."""
    return f"{_PREFIX[kind]}w{workspace_id}.{secrets.token_urlsafe(32)}"


def token_workspace(token: str) -> int | None:
    """The workspace a token names, or None for a token without one (minted before
    migrations/015, or not a Recall token at all)."""
    head, dot, _ = token.partition(".")
    if not dot or len(head) < 6 or head[3] != "_" or head[4] != "w":
        return None
    digits = head[5:]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    return int(digits)


async def issue_actor_token(
    db: Executor, workspace_key: str, kind: str, actor_key: str, *, ttl: timedelta | None = None
) -> str:
    """A new token for a member or agent, named by fixture keys."""
    workspace_id = await _workspace_id(db, workspace_key)
    row = await db.fetchrow(
        """
        select a.id as actor_id, a.kind,
               a.deactivated_at is not null or a.deleted_at is not null as gone
        from actors a
        where a.workspace_id = $1 and a.key = $2
        """,
        workspace_id,
        actor_key,
    )
    if row is None or row["kind"] != kind:
        raise UsageError(f"unknown {kind} '{actor_key}' in workspace '{workspace_key}'")
    if row["gone"]:
        what = "deactivated" if kind == "member" else "deleted"
        raise UsageError(f"{kind} '{actor_key}' in workspace '{workspace_key}' was {what}")
    return await store_token(db, workspace_id, kind, row["actor_id"], None, ttl=ttl)


async def workspace_id_by_key(db: Executor, workspace_key: str) -> int | None:
    """The workspace named by a key, through workspace_keys (a reference table on Citus)."""
    found: int | None = await db.fetchval(
        "select workspace_id from workspace_keys where key = $1", workspace_key
    )
    return found


async def _workspace_id(db: Executor, workspace_key: str) -> int:
    found = await workspace_id_by_key(db, workspace_key)
    if found is None:
        raise UsageError(f"unknown workspace '{workspace_key}'")
    return found


async def issue_connector_token(
    db: Executor, workspace_key: str, *, ttl: timedelta | None = None
) -> str:
    """A new token for a workspace's connector: it applies changes and reads no messages."""
    workspace_id = await _workspace_id(db, workspace_key)
    return await store_token(db, workspace_id, "connector", None, None, ttl=ttl)


async def store_token(
    db: Executor,
    workspace_id: int,
    kind: str,
    actor_id: int | None,
    turn_id: int | None,
    *,
    ttl: timedelta | None = None,
) -> str:
    if ttl is not None and ttl <= timedelta(0):
        raise UsageError("a token's time to live must be positive")
    token = new_token(kind, workspace_id)
    await db.execute(
        """
        insert into tokens (workspace_id, token_hash, kind, actor_id, turn_id, expires_at)
        values ($1, $2, $3, $4, $5, now() + $6::interval)
        """,
        workspace_id,
        hash_token(token),
        kind,
        actor_id,
        turn_id,
        ttl,
    )
    return token


async def list_tokens(db: Executor, workspace_key: str | None) -> list[dict[str, Any]]:
    """Every token (of one workspace, or all): id, kind, whom it speaks for, when it was
    created, expires and was revoked, and whether it still works. Never the token."""
    if workspace_key is not None:
        await _workspace_id(db, workspace_key)
    rows = await db.fetch(
        """
        select t.id, w.key as workspace, t.kind, a.key as actor, t.turn_id,
               t.created_at, t.expires_at, t.revoked_at,
               case when t.revoked_at is not null then 'revoked'
                    when t.expires_at is not null and t.expires_at <= now() then 'expired'
                    else 'active' end as state
        from tokens t
        join workspaces w on w.id = t.workspace_id
        left join actors a on a.workspace_id = t.workspace_id and a.id = t.actor_id
        where $1::text is null or w.key = $1
        order by t.created_at, t.id
        """,
        workspace_key,
    )
    return [
        {
            "id": r["id"],
            "workspace": r["workspace"],
            "kind": r["kind"],
            "actor": r["actor"],
            "turn_id": r["turn_id"],
            "created_at": r["created_at"].isoformat(),
            "expires_at": r["expires_at"].isoformat() if r["expires_at"] else None,
            "revoked_at": r["revoked_at"].isoformat() if r["revoked_at"] else None,
            "state": r["state"],
        }
        for r in rows
    ]


async def revoke_token(db: Executor, token_id: int) -> dict[str, Any]:
    """Revoke a token by id (as `recall token list` shows it); revoking twice is a no-op."""
    # The token's workspace first, so that the update names it: on Citus an UPDATE that is
    # not routed to one shard may not use a subquery (`(select now())`, itself needed because
    # Citus refuses now() inside COALESCE of an UPDATE).
    workspace_id = await db.fetchval("select workspace_id from tokens where id = $1", token_id)
    row = await db.fetchrow(
        """
        update tokens set revoked_at = coalesce(revoked_at, (select now()))
        where workspace_id = $1 and id = $2
        returning id, kind, revoked_at
        """,
        workspace_id,
        token_id,
    )
    if row is None:
        raise UsageError(f"unknown token id {token_id}")
    return {"id": row["id"], "kind": row["kind"], "revoked_at": row["revoked_at"].isoformat()}
