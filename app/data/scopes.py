"""Conversations (channels, DMs, threads) and their members as live changes write them.

Written to stay distributable (docs/design.md, Scale): every statement names its workspace as
`workspace_id = $1` on every table it touches, inserts are INSERT ... SELECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class ScopeState:
    id: int
    key: str
    kind: str
    visibility: str | None
    parent_id: int | None
    origin_audience_id: int
    last_seq: int
    made_private: bool
    namespace_id: int = 0


async def scopes_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, ScopeState]:
    rows = await db.fetch(
        """
        select id, key, kind, visibility, parent_id, origin_audience_id, last_seq,
               made_private_at is not null as made_private, namespace_id
        from scopes where workspace_id = $1 and key = any($2::text[])
        """,
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: ScopeState(**dict(r)) for r in rows}


async def audiences_of(db: Executor, workspace_id: int, scope_id: int) -> tuple[int, int]:
    """A conversation's (origin, destination) audience ids now: a new thread takes them."""
    row = await db.fetchrow(
        "select origin_audience_id, destination_audience_id from scopes"
        " where workspace_id = $1 and id = $2",
        workspace_id,
        scope_id,
    )
    assert row is not None
    return row["origin_audience_id"], row["destination_audience_id"]


async def insert_scope(
    db: Executor,
    workspace_id: int,
    namespace_id: int,
    *,
    key: str,
    kind: str,
    visibility: str | None,
    name: str | None,
    parent_id: int | None,
    root_message_id: int | None,
    origin_audience_id: int,
    destination_audience_id: int,
    member_ids: Sequence[int],
) -> int:
    scope_id: int = await db.fetchval(
        """
        insert into scopes (workspace_id, key, kind, visibility, name, namespace_id, parent_id,
                            root_message_id, origin_audience_id, destination_audience_id)
        select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
        returning id
        """,
        workspace_id,
        key,
        kind,
        visibility,
        name,
        namespace_id,
        parent_id,
        root_message_id,
        origin_audience_id,
        destination_audience_id,
    )
    await add_members(db, workspace_id, scope_id, member_ids)
    return scope_id


async def add_members(
    db: Executor, workspace_id: int, scope_id: int, actor_ids: Sequence[int]
) -> int:
    """Add actors to a channel or DM; how many were not members yet (counted from RETURNING:
    on Citus the command tag of an INSERT ... SELECT that the coordinator runs counts the rows
    it selected, those ON CONFLICT skipped included)."""
    added = await db.fetch(
        """
        insert into scope_members (workspace_id, scope_id, actor_id)
        select $1, $2, a from unnest($3::bigint[]) as a
        on conflict do nothing
        returning actor_id
        """,
        workspace_id,
        scope_id,
        list(actor_ids),
    )
    return len(added)


async def remove_members(
    db: Executor, workspace_id: int, scope_id: int, actor_ids: Sequence[int]
) -> int:
    status = await db.execute(
        "delete from scope_members where workspace_id = $1 and scope_id = $2"
        " and actor_id = any($3::bigint[])",
        workspace_id,
        scope_id,
        list(actor_ids),
    )
    return _count(status)


async def people_of(db: Executor, workspace_id: int, scope_id: int) -> list[int]:
    """The human members of a channel or DM (agents are never readers)."""
    rows = await db.fetch(
        """
        select sm.actor_id from scope_members sm
        join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
        where sm.workspace_id = $1 and a.workspace_id = $1 and sm.scope_id = $2
          and a.kind = 'member'
        order by sm.actor_id
        """,
        workspace_id,
        scope_id,
    )
    return [r["actor_id"] for r in rows]


async def set_conversation_audiences(
    db: Executor,
    workspace_id: int,
    scope_id: int,
    *,
    visibility: str | None,
    origin_audience_id: int,
    destination_audience_id: int,
) -> None:
    """The audiences later messages of a conversation (and of its threads) are written with
    and shown to. Earlier messages keep theirs: membership is a set of intervals."""
    # `(select now())`, not now(): Citus refuses a non-immutable function inside CASE or
    # COALESCE of an UPDATE; as an InitPlan it is the same value on plain PostgreSQL.
    await db.execute(
        """
        update scopes set origin_audience_id = $3, destination_audience_id = $4,
                          visibility = case when id = $2 then coalesce($5, visibility)
                                            else visibility end,
                          made_private_at = case when id = $2 and $5 = 'private'
                                                 then coalesce(made_private_at, (select now()))
                                                 else made_private_at end
        where workspace_id = $1 and (id = $2 or parent_id = $2)
        """,
        workspace_id,
        scope_id,
        origin_audience_id,
        destination_audience_id,
        visibility,
    )


async def narrow_history(
    db: Executor, workspace_id: int, scope_id: int, audience_id: int
) -> list[int]:
    """Give every message of a conversation and its threads the audience `audience_id`; the
    ids of the messages whose audience changed.

    The per-row trigger of migrations/004 forgets the cached lineage of each such message and
    of everything built from it, so a reply elsewhere that quoted this history is walked
    again (and hidden where the narrower audience no longer allows it)."""
    rows = await db.fetch(
        """
        update messages m set audience_id = $3
        where m.workspace_id = $1 and m.audience_id <> $3
          and m.scope_id in (select s.id from scopes s
                             where s.workspace_id = $1 and (s.id = $2 or s.parent_id = $2))
        returning m.id
        """,
        workspace_id,
        scope_id,
        audience_id,
    )
    return [r["id"] for r in rows]


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])
