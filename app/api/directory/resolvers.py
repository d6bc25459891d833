"""Reads behind the directory types: each returns rows (app.data.rows) or domain results, never
GraphQL objects. Scope.messages' page is app.message_search.transcript's."""

from __future__ import annotations

from collections.abc import Sequence

from app import access
from app.api.context import Info, selects
from app.data import directory
from app.data.rows import ActorRow, MessageRow, ScopeRow, WorkspaceRow
from app.live.updates import live_position
from app.message_search.transcript import TranscriptPage, transcript_page
from app.request.ids import expect_id


async def load_actor(info: Info, actor_id: int) -> ActorRow:
    """An actor referenced by a row already read (foreign keys guarantee it exists)."""
    row = await info.context.loaders.actor_by_id.load(actor_id)
    assert row is not None
    return row


async def load_scope(info: Info, scope_id: int) -> ScopeRow:
    """The scope of a row already read (a message's, a turn's): shown with that row."""
    row = await info.context.loaders.unchecked_scope_by_id.load(scope_id)
    assert row is not None
    return row


async def workspaces_by_ids(info: Info, pks: Sequence[int]) -> list[WorkspaceRow | None]:
    """node(id:) of a Workspace: the token's own workspace only; any other is None."""
    own = info.context.reader.workspace_id
    row = await directory.workspace_by_id(info.context.db, own) if own in pks else None
    return [row if row and pk == own else None for pk in pks]


async def readable_scopes_by_ids(info: Info, pks: Sequence[int]) -> list[ScopeRow | None]:
    return await info.context.loaders.readable_scope_by_id.load_many(pks)


async def actors_by_ids(info: Info, kind: str, pks: Sequence[int]) -> list[ActorRow | None]:
    """The members or agents (`kind`) among `pks`; None for any other id. A deleted agent is no
    object any more (its messages show a DeletedAgent author)."""
    rows = await info.context.loaders.actor_by_id.load_many(pks)
    return [r if r is not None and r.kind == kind and r.state != "deleted" else None for r in rows]


async def readable_messages_by_ids(info: Info, pks: Sequence[int]) -> list[MessageRow | None]:
    return await info.context.loaders.message_by_id.load_many(pks)


async def readable_scopes(info: Info) -> list[ScopeRow]:
    return await directory.readable_scopes(info.context.db, info.context.reader)


async def actors_in_workspace(info: Info, kind: str, include_inactive: bool) -> list[ActorRow]:
    return await directory.actors_in_workspace(
        info.context.db,
        info.context.reader.workspace_id,
        kind,
        include_inactive=include_inactive,
    )


async def live_event_before(info: Info) -> str | None:
    """Scope.messages' liveEvent, read before its page when asked for, and only for a member
    (the only token that may subscribe: access.SCOPE_MESSAGES)."""
    ctx = info.context
    if not access.SCOPE_MESSAGES.allows(ctx.reader.kind) or not selects(info, "liveEvent"):
        return None
    return await live_position(ctx.db, ctx.reader.workspace_id)


async def scope_messages(
    info: Info,
    scope_id: int,
    *,
    around: str | None,
    first: int | None,
    last: int | None,
    after: str | None,
    before: str | None,
) -> TranscriptPage:
    """Scope.messages' page (app.message_search.transcript). A well-formed id of something other than
    a message is centered on nothing (id 0 is unused): an empty page."""
    return await transcript_page(
        info.context.db,
        info.context.reader,
        info.context.keys,
        scope_id,
        around=None if around is None else (expect_id(around, "Message") or 0),
        first=first,
        last=last,
        after=after,
        before=before,
    )
