"""A scope's transcript as the reader may read it, to open a search hit centered: a page of
Scope.messages (around a message, or forward / backward from a cursor) and MCP's
read_conversation (the messages around one message). Both read one window of
app.data.transcript (one statement): a message the reader may not read is skipped, never shown,
and the window extends past it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app import access
from app.data import directory, messages, transcript
from app.data.readers import Reader
from app.data.rows import MessageRow, ScopeRow
from app.data.session import Session
from app.errors import BadUserInput, Forbidden
from app.message_search.cursor import decode_seq_cursor, encode_seq_cursor
from app.message_search.keys import Keys

MAX_PAGE = 100
DEFAULT_PAGE = 20
DEFAULT_AROUND = 10
# A message that does not exist and one the reader may not read answer alike.
NO_MESSAGE = "no readable message with that id"


@dataclass(frozen=True, slots=True)
class TranscriptPage:
    """Messages in seq order, each with its cursor, and whether more exist on either side."""

    messages: list[tuple[str, MessageRow]]
    has_next_page: bool
    has_previous_page: bool


@dataclass(frozen=True, slots=True)
class Conversation:
    """The readable messages around one, in seq order, each with its author; and their scope."""

    scope: ScopeRow | None
    messages: list[MessageRow]
    target_id: int


@dataclass(frozen=True, slots=True)
class _Shown:
    rows: list[MessageRow]
    has_next: bool
    has_previous: bool


def _count(value: int | None, default: int, name: str) -> int:
    n = default if value is None else value
    if not 0 <= n <= MAX_PAGE:
        raise BadUserInput(f"{name} must be between 0 and {MAX_PAGE}")
    return n


async def _shown(
    db: Session,
    reader: Reader,
    scope_id: int,
    *,
    pivot: int,
    target_id: int | None,
    n_before: int,
    n_after: int,
) -> _Shown:
    """Up to `n_before` readable messages before the pivot (or the target message), the target,
    and up to `n_after` after it; nothing when the target is not a readable message of the
    scope."""
    # One more row than asked on each side tells whether more exist; a side that was not
    # asked for fetches one row only for hasPreviousPage / hasNextPage.
    w = await transcript.window(
        db,
        reader,
        scope_id,
        pivot_seq=pivot,
        target_id=target_id,
        n_before=n_before + 1,
        n_after=n_after + 1,
    )
    if target_id is not None and w.target is None:
        return _Shown([], has_next=False, has_previous=False)
    shown_before = w.before[max(0, len(w.before) - n_before) :] if n_before else []
    shown_after = w.after[:n_after]
    return _Shown(
        [*shown_before, *([w.target] if w.target else []), *shown_after],
        has_next=len(w.after) > n_after,
        has_previous=len(w.before) > n_before,
    )


async def transcript_page(
    db: Session,
    reader: Reader,
    keys: Keys,
    scope_id: int,
    *,
    around: int | None,
    first: int | None,
    last: int | None,
    after: str | None,
    before: str | None,
) -> TranscriptPage:
    """Scope.messages. Three shapes: `around` a message (its id; last before it, the message,
    first after it); forward `first` messages `after` a cursor (or from the start); backward
    `last` messages `before` a cursor (or up to the end)."""
    if around is not None and (after is not None or before is not None):
        raise BadUserInput("around cannot be combined with after or before")
    # Transcript cursors are sealed for this reader (app.message_search.opaque).
    sealed = (keys.cursors, reader.cursor_context)
    if around is not None:
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
    shown = await _shown(
        db, reader, scope_id, pivot=pivot, target_id=around, n_before=n_before, n_after=n_after
    )
    return TranscriptPage(
        [(encode_seq_cursor(scope_id, r.seq, *sealed), r) for r in shown.rows],
        has_next_page=shown.has_next,
        has_previous_page=shown.has_previous,
    )


async def conversation(
    db: Session, reader: Reader, message_id: int | None, *, n_before: int, n_after: int
) -> Conversation:
    """read_conversation: the readable messages of a message's scope around it, each with its
    author. `message_id` None (an id of something else), a message that does not exist and one
    the reader may not read are all FORBIDDEN alike."""
    access.READ_CONVERSATION.check(reader)
    n_before, n_after = _count(n_before, 0, "before"), _count(n_after, 0, "after")
    found = (
        await messages.readable_messages_by_ids(db, reader, [message_id])
        if message_id is not None
        else []
    )
    if not found:
        raise Forbidden(NO_MESSAGE)
    target = found[0]
    shown = await _shown(
        db,
        reader,
        target.scope_id,
        pivot=0,
        target_id=target.id,
        n_before=n_before,
        n_after=n_after,
    )
    if not shown.rows:
        raise Forbidden(NO_MESSAGE)
    # The target's author came with it; the others in one statement.
    authors = {target.author.id: target.author} if target.author is not None else {}
    missing = {r.author_id for r in shown.rows} - authors.keys()
    if missing:
        rows = await directory.actors_by_ids(db, reader.workspace_id, sorted(missing))
        authors.update((a.id, a) for a in rows)
    return Conversation(
        scope=target.scope,
        messages=[replace(r, author=authors.get(r.author_id)) for r in shown.rows],
        target_id=target.id,
    )
