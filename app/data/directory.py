"""Workspaces, actors and scopes, always within one workspace and filtered by the reader."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.params import Params
from app.data.readers import Reader
from app.data.rows import ActorRow, ScopeRow, WorkspaceRow, actor_columns
from app.data.session import Session

_SCOPE_COLUMNS = (
    "s.id, s.key, s.kind, s.visibility, s.name, s.parent_id, s.root_message_id,"
    " s.destination_audience_id"
)


async def workspace_by_id(db: Session, workspace_id: int) -> WorkspaceRow | None:
    row = await db.fetchrow(
        "select id, key, name, default_namespace_id from workspaces where id = $1", workspace_id
    )
    return WorkspaceRow.of(row) if row else None


async def actors_by_ids(db: Session, workspace_id: int, ids: Sequence[int]) -> list[ActorRow]:
    """Members and agents are a workspace directory: every member of the workspace may see
    every actor of it (names and keys, never content)."""
    rows = await db.fetch(
        f"select {actor_columns('a')} from actors a where a.workspace_id = $1 and a.id = any($2)",
        workspace_id,
        list(ids),
    )
    return [ActorRow.of(r) for r in rows]


async def namespace_names(db: Session, workspace_id: int, ids: Sequence[int]) -> dict[int, str]:
    """The names of the workspace's namespaces `ids` (a member's: docs/identity.md)."""
    rows = await db.fetch(
        "select id, name from namespaces where workspace_id = $1 and id = any($2::bigint[])",
        workspace_id,
        list(ids),
    )
    return {r["id"]: r["name"] for r in rows}


async def actors_in_workspace(
    db: Session, workspace_id: int, kind: str, *, include_inactive: bool = False
) -> list[ActorRow]:
    """The people or agents a client may pick from: deleted agents never; archived agents
    and deactivated people only when asked for."""
    rows = await db.fetch(
        f"select {actor_columns('a')} from actors a where a.workspace_id = $1 and a.kind = $2"
        " and a.deleted_at is null"
        " and ($3 or (a.archived_at is null and a.deactivated_at is null))"
        " order by a.key",
        workspace_id,
        kind,
        include_inactive,
    )
    return [ActorRow.of(r) for r in rows]


async def readable_scopes_by_ids(db: Session, reader: Reader, ids: Sequence[int]) -> list[ScopeRow]:
    p = Params([reader.workspace_id])  # $1: the workspace, as scope_predicate reads it
    wanted = p.add(list(ids))
    rows = await db.fetch(
        f"select {_SCOPE_COLUMNS} from scopes s where s.workspace_id = $1 and s.id = any({wanted})"
        f" and {reader.scope_predicate('s', p.add(reader.actor_id))}",
        *p.values,
    )
    return [ScopeRow.of(r) for r in rows]


async def scopes_by_ids_unfiltered(
    db: Session, workspace_id: int, ids: Sequence[int]
) -> list[ScopeRow]:
    """Scopes of messages the reader was already allowed to read: a message's scope is part of
    the message (where it was said), so it is shown with the message even if unlisted."""
    rows = await db.fetch(
        f"select {_SCOPE_COLUMNS} from scopes s where s.workspace_id = $1 and s.id = any($2)",
        workspace_id,
        list(ids),
    )
    return [ScopeRow.of(r) for r in rows]


async def readable_scopes(db: Session, reader: Reader) -> list[ScopeRow]:
    p = Params([reader.workspace_id])  # $1: the workspace, as scope_predicate reads it
    rows = await db.fetch(
        f"select {_SCOPE_COLUMNS} from scopes s where s.workspace_id = $1"
        f" and {reader.scope_predicate('s', p.add(reader.actor_id))} order by s.kind, s.key",
        *p.values,
    )
    return [ScopeRow.of(r) for r in rows]


async def ids_by_keys(
    db: Session, workspace_id: int, *, scope_key: str | None, member_key: str | None
) -> tuple[int | None, int | None]:
    """The scope and the member a client named by fixture key (MCP's start_turn accepts keys
    as well as ids), in one statement; None for a key that names nothing. Only ids: what the
    caller may do with them is decided where they are used (startTurn's checks)."""
    row = await db.fetchrow(
        "select (select s.id from scopes s where s.workspace_id = $1 and s.key = $2) as scope,"
        " (select a.id from actors a where a.workspace_id = $1 and a.key = $3"
        " and a.kind = 'member') as member",
        workspace_id,
        scope_key,
        member_key,
    )
    assert row is not None
    return row["scope"], row["member"]
