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
    # A member's namespace (docs/identity.md); None for an agent.
    namespace_id: int | None = None


async def actors_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, ActorState]:
    rows = await db.fetch(
        """
        select id, key, kind, name, owner_id, deactivated_at is not null as deactivated,
               archived_at is not null as archived, deleted_at is not null as deleted,
               namespace_id
        from actors where workspace_id = $1 and key = any($2::text[])
        """,
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: ActorState(**dict(r)) for r in rows}


async def insert_actor(
    db: Executor,
    workspace_id: int,
    key: str,
    kind: str,
    name: str,
    owner_id: int | None,
    namespace_id: int | None = None,
) -> int:
    """A new member (in `namespace_id`) or agent (none)."""
    actor_id: int = await db.fetchval(
        "insert into actors (workspace_id, key, kind, name, owner_id, namespace_id)"
        " select $1, $2, $3, $4, $5, $6 returning id",
        workspace_id,
        key,
        kind,
        name,
        owner_id,
        namespace_id,
    )
    return actor_id


async def namespace_id(db: Executor, workspace_id: int, name: str) -> int:
    """The id of the workspace's namespace `name`, created if it has none yet."""
    found: int = await db.fetchval(
        """
        with created as (
            insert into namespaces (workspace_id, name) select $1, $2
            on conflict do nothing
            returning id
        )
        select id from created
        union all
        select id from namespaces where workspace_id = $1 and name = $2
        limit 1
        """,
        workspace_id,
        name,
    )
    return found


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
