"""Reads behind the directory types: each returns rows (app.data.rows), never GraphQL objects.

Scope.messages' transcript page lives here too: the eligible messages of a scope, to open a
search hit centered.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.api.context import Info
from app.data import directory, transcript
from app.data.rows import ActorRow, MessageRow, ScopeRow
from app.errors import BadUserInput
from app.request.ids import decode_id
from app.search.cursor import decode_seq_cursor, encode_seq_cursor

MAX_PAGE = 100
DEFAULT_PAGE = 20
DEFAULT_AROUND = 10


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


async def readable_scopes(info: Info) -> list[ScopeRow]:
    return await directory.readable_scopes(info.context.db, info.context.reader)


async def actors_in_workspace(info: Info, kind: str, include_inactive: bool) -> list[ActorRow]:
    return await directory.actors_in_workspace(
        info.context.db,
        info.context.reader.workspace_id,
        kind,
        include_inactive=include_inactive,
    )


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """Messages in seq order, each with its cursor, and whether more exist on either side."""

    messages: list[tuple[str, MessageRow]]
    has_next_page: bool
    has_previous_page: bool


def _count(value: int | None, default: int, name: str) -> int:
    n = default if value is None else value
    if not 0 <= n <= MAX_PAGE:
        raise BadUserInput(f"{name} must be between 0 and {MAX_PAGE}")
    return n


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
    """Three shapes: `around` a message (last before it, the message, first after it);
    forward `first` messages `after` a cursor (or from the start); backward `last` messages
    `before` a cursor (or up to the end)."""
    if around is not None and (after is not None or before is not None):
        raise BadUserInput("around cannot be combined with after or before")
    # Transcript cursors are sealed for this reader (app.search.opaque).
    sealed = (info.context.keys.cursors, info.context.reader.cursor_context)
    target_id: int | None = None
    if around is not None:
        type_name, pk = decode_id(around)
        # A well-formed id of something other than a message matches nothing (id 0 is unused).
        target_id = pk if type_name == "Message" else 0
        n_before = _count(last, DEFAULT_AROUND, "last")
        n_after = _count(first, DEFAULT_AROUND, "first")
        pivot = 0
    elif after is None and first is None and (before is not None or last is not None):
        pivot = (
            transcript.MAX_SEQ if before is None else decode_seq_cursor(before, scope_id, *sealed)
        )
        n_before, n_after = _count(last, DEFAULT_PAGE, "last"), 0
    elif before is None and last is None:
        pivot = 0 if after is None else decode_seq_cursor(after, scope_id, *sealed)
        n_before, n_after = 0, _count(first, DEFAULT_PAGE, "first")
    else:
        raise BadUserInput("page forward with first/after, or backward with last/before")

    # One more row than asked on each side tells whether more exist; a side that was not
    # asked for fetches one row only for hasPreviousPage / hasNextPage.
    w = await transcript.window(
        info.context.db,
        info.context.reader,
        scope_id,
        pivot_seq=pivot,
        target_id=target_id,
        n_before=n_before + 1,
        n_after=n_after + 1,
    )
    if target_id is not None and w.target is None:
        return TranscriptPage([], has_next_page=False, has_previous_page=False)
    shown_before = w.before[max(0, len(w.before) - n_before) :] if n_before else []
    shown_after = w.after[:n_after]
    rows: list[MessageRow] = [*shown_before, *([w.target] if w.target else []), *shown_after]
    return TranscriptPage(
        [(encode_seq_cursor(scope_id, r.seq, *sealed), r) for r in rows],
        has_next_page=len(w.after) > n_after,
        has_previous_page=len(w.before) > n_before,
    )
