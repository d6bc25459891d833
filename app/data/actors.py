"""People and agents as live changes and the importer write them, looked up by key.

Written to stay distributable (docs/design.md, Scale): every statement names its workspace as
`workspace_id = $1` on every table it touches, inserts are INSERT ... SELECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class ActorState:
    id: int
    key: str
    kind: str
    name: str
    owner_id: int | None
    deactivated: bool
    archived: bool
    deleted: bool


async def actors_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, ActorState]:
    rows = await db.fetch(
        """
        select id, key, kind, name, owner_id, deactivated_at is not null as deactivated,
               archived_at is not null as archived, deleted_at is not null as deleted
        from actors where workspace_id = $1 and key = any($2::text[])
        """,
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: ActorState(**dict(r)) for r in rows}


async def insert_actor(
    db: Executor, workspace_id: int, key: str, kind: str, name: str, owner_id: int | None
) -> int:
    actor_id: int = await db.fetchval(
        "insert into actors (workspace_id, key, kind, name, owner_id)"
        " select $1, $2, $3, $4, $5 returning id",
        workspace_id,
        key,
        kind,
        name,
        owner_id,
    )
    return actor_id


async def update_actor(
    db: Executor, workspace_id: int, actor_id: int, name: str, owner_id: int | None
) -> None:
    await db.execute(
        "update actors set name = $3, owner_id = $4 where workspace_id = $1 and id = $2",
        workspace_id,
        actor_id,
        name,
        owner_id,
    )


async def deactivate_member(db: Executor, workspace_id: int, member_id: int) -> None:
    """The person reads nothing from now on: their member tokens are revoked in the same
    transaction (tokens of agents they own are the agents' and keep working)."""
    await db.execute(
        "update actors set deactivated_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        member_id,
    )
    await db.execute(
        "update tokens set revoked_at = now() where workspace_id = $1 and actor_id = $2"
        " and kind = 'member' and revoked_at is null",
        workspace_id,
        member_id,
    )


async def archive_agent(db: Executor, workspace_id: int, agent_id: int) -> None:
    await db.execute(
        "update actors set archived_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        agent_id,
    )


async def delete_agent(db: Executor, workspace_id: int, agent_id: int) -> None:
    """What made the actor someone goes: name, owner, memberships (its perspective), tokens.
    The row stays as the author of its messages, marked deleted."""
    await db.execute(
        "update actors set deleted_at = now(), name = '', owner_id = null"
        " where workspace_id = $1 and id = $2",
        workspace_id,
        agent_id,
    )
    await db.execute(
        "delete from scope_members where workspace_id = $1 and actor_id = $2",
        workspace_id,
        agent_id,
    )
    await db.execute(
        "delete from tokens where workspace_id = $1 and actor_id = $2", workspace_id, agent_id
    )
