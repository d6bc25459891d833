"""One subscription's loop (docs/live.md): wait for the doorbell, read the log after the last
position, decide every event in SQL for the reader as they are now, hand the updates out. The
doorbell rings only for commits that may concern the subscription; the process's feed moves it
past the others (app.live.feed).

Per wake-up: the log's next events (from the process's feed, app.live.feed: read once per
commit for every subscriber of the workspace), the token again (a revoked or expired one, or a
deactivated person's, ends the subscription with UNAUTHENTICATED) and one admission statement
(app.data.live_admission) for all the events — the same predicates and the same query as a
fresh messageSearch, never a cache of who could read. The token read and the admission are
shared, within the wake-up only: the token read by the subscriptions of the same token, the
admission by those of equal readers (one person through several tokens) with the same search
at the same position. What a subscription keeps between wake-ups is its position and the ids
it delivered (bounded), so that an access change can take back exactly what it showed.

Events, for each log row after the position (its position is the update's `event`):
- post: ADDED when the message is a hit now;
- edit: EDITED when it is a hit now; REMOVED when it is not, if the reader may read it or was
  sent it (it may have been a hit before: a client drops it if it shows it);
- delete: REMOVED if the reader could read it but for the deletion, or was sent it;
- access: REMOVED for each delivered message the reader may no longer read.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal

from app.data import live_events, live_sift
from app.data.live_admission import Admission, admit
from app.data.live_events import LiveEvent
from app.data.live_sift import Posted, Words
from app.data.message_search.inputs import CandidateQuery, ScopeCondition
from app.data.message_search.rows import PageHit
from app.data.readers import Reader, reader_for_token
from app.data.session import Session
from app.data.tokens import hash_token
from app.errors import BadUserInput, InvalidCursor, Unauthenticated
from app.live.feed import Feed, Interest, LogRead, Sift
from app.live.hub import Hub
from app.message_search.readiness import ensure_read_ready
from app.message_search.search import BoundSearch, candidate_query
from app.observability.metrics import LIVE_READS

# Log rows read per statement; a longer backlog is read in several rounds without waiting.
BATCH = 500
# Delivered ids remembered per subscription (for access changes), oldest forgotten first.
MAX_DELIVERED = 10_000

Kind = Literal["ADDED", "EDITED", "REMOVED"]


@dataclass(frozen=True, slots=True)
class Update:
    event: str
    kind: Kind
    # ADDED and EDITED: the hit as its statement read it (its message hydrated for the reader).
    hit: PageHit | None
    removed_id: int | None


@dataclass(frozen=True, slots=True)
class SearchTarget:
    """messageSearchUpdates: a search, bound and parsed as messageSearch binds it."""

    bound: BoundSearch


@dataclass(frozen=True, slots=True)
class ScopeTarget:
    """scopeMessages: every message of one conversation."""

    scope_id: int | None


Target = SearchTarget | ScopeTarget


class TooSlow(Exception):
    """The subscriber is more events behind the log's head than it may be."""


@dataclass(frozen=True, slots=True)
class LiveEnv:
    """What a subscription needs of its process: the hub, a session factory (a pooled
    connection acquired on first use), the backlog a subscriber may fall behind by."""

    hub: Hub
    session: Callable[[], AbstractAsyncContextManager[Session]]
    max_backlog: int


def encode_event(workspace_id: int, position: int) -> str:
    """An update's `event`: opaque to clients, and increasing as a string too (a fixed-width
    position first), so a client may keep the greatest it saw."""
    return f"{position:016x}-{workspace_id}"


def decode_event(workspace_id: int, event: str) -> int:
    """The position an `after` names; INVALID_CURSOR for anything not this workspace's."""
    position, _, workspace = event.partition("-")
    if (
        len(position) != 16
        or workspace != str(workspace_id)
        or not all(c in "0123456789abcdef" for c in position)
    ):
        raise InvalidCursor("after: not an event of this subscription")
    return int(position, 16)


async def live_position(db: Session, workspace_id: int) -> str:
    """The live log's head as an `event`, for a page read right after it (messageSearch's and
    Scope.messages' liveEvent): everything committed after this position comes to a
    subscription started with it as `after`; what was committed before it, the page read
    after it shows (the page may also show some of what follows it: a client merges by id)."""
    return encode_event(workspace_id, await live_events.head(db, workspace_id))


async def _start_position(
    db: Session, workspace_id: int, after: str | None, max_backlog: int
) -> int:
    """Where the subscription starts: the log's head, or `after` if the log still holds
    everything after it and it is no further behind the head than a subscriber may fall."""
    bounds = await live_events.bounds(db, workspace_id)
    if after is None:
        return bounds.head
    position = decode_event(workspace_id, after)
    if position > bounds.head:
        raise InvalidCursor("after: not an event of this subscription")
    if position < bounds.head and (bounds.oldest is None or position < bounds.oldest - 1):
        raise InvalidCursor(
            "after: that event is older than the live log keeps; search again and subscribe"
            " without `after`"
        )
    if bounds.head - position > max_backlog:
        # Started, it would be closed as too slow (4008) at once, and a client resuming
        # after that close would be closed again, for ever.
        raise InvalidCursor(
            f"after: that event is more than {max_backlog} events behind the live log; search"
            " again and subscribe without `after`"
        )
    return position


async def _query(db: Session, reader: Reader, target: Target) -> CandidateQuery:
    if isinstance(target, SearchTarget):
        query, _compiled = await candidate_query(db, reader, target.bound)
        return query
    assert reader.destination is not None
    return CandidateQuery(
        reader.destination.params(),
        (),
        (),
        scope=ScopeCondition(target.scope_id),
        lineage_complete=reader.lineage_complete,
        viewer=reader,
    )


async def check_scope(db: Session, reader: Reader, scope_id: int | None) -> None:
    """scopeMessages' scope must be one the reader may list; another person's DM answers
    exactly like an id of nothing."""
    found = None
    if scope_id is not None:
        found = await db.fetchval(
            "select 1 from scopes s where s.workspace_id = $1 and s.id = $2"
            f" and {reader.scope_predicate('s', '$3')}",
            reader.workspace_id,
            scope_id,
            reader.actor_id,
        )
    if found is None:
        raise BadUserInput("scopeId: no conversation the viewer may read has this id")


async def updates(
    env: LiveEnv,
    token: str,
    reader: Reader,
    target: Target,
    after: str | None,
    *,
    on_batch: Callable[[Reader, Session], Awaitable[None]] | None = None,
) -> AsyncIterator[Update]:
    """The subscription's updates, until the token stops working (UNAUTHENTICATED), the
    subscriber falls too far behind (TooSlow) or the client completes it. `on_batch` is
    called before each batch is handed out with the reader of that wake-up and a fresh,
    lazily connected session for resolving the batch's fields (closed after the batch)."""
    workspace_id = reader.workspace_id
    # The position first: whatever commits after it is read by the first round below, before
    # the subscription ever waits, so nothing between the two is missed.
    async with env.hub.database_turn(), env.session() as db:
        position = await _start_position(db, workspace_id, after, env.max_backlog)
    token_key = hash_token(token)
    target_key = _target_key(target)
    async with env.hub.subscribe(workspace_id, token_key, position, _interest(target)) as waiter:
        feed = env.hub.feed(workspace_id)
        feed.attach(_log_reader(env, workspace_id), _sifter(env, workspace_id))
        delivered: OrderedDict[int, None] = OrderedDict()
        while True:
            # Where it stands: the feed moves it past commits that cannot concern it.
            assert waiter.position is not None
            position = waiter.position
            events, head, stamp = await _next_events(env, feed, workspace_id, position)
            if events and not feed.may_concern(waiter.interest, events):
                # Posts the feed's sift found outside its conversation or its words: nothing
                # to decide, nothing to send (and no token to read for it).
                waiter.reached(events[-1].position)
                continue
            # The token again at every wake-up (once per token and wake-up in this process).
            current = await feed.share(stamp, ("reader", token_key), lambda: _reader(env, token))
            if current is None or current.destination is None:
                raise Unauthenticated(
                    "the token was revoked or has expired; subscribe again with a valid one"
                )
            reader = current
            if head - position > env.max_backlog:
                raise TooSlow
            if not events:
                await waiter.wait(env.hub.poll_interval)
                continue
            ensure_read_ready(reader.search_ready)
            # By the reader read at this wake-up, not by the token: two tokens of one person
            # (two tabs, two devices) have equal readers, and an admission depends on nothing
            # else of the token. Readers that differ in anything are admitted apart.
            key = (reader, target_key, position)
            admission = await _admission(env, feed, stamp, key, reader, target, events, delivered)
            async with env.session() as resolving:
                if on_batch is not None:
                    await on_batch(reader, resolving)
                for update in _decide(workspace_id, events, admission, delivered):
                    yield update
                    # Sending may complete without suspending; without this, the subscribers
                    # woken by one commit would each resolve and send their whole batch in one
                    # step of the event loop, and the requests beside them would wait for all.
                    await asyncio.sleep(0)
            waiter.reached(events[-1].position)


def _interest(target: Target) -> Interest:
    """Which posts may concern the subscription (app.live.feed): those meeting its search's
    words, within the conversation it names."""
    if isinstance(target, ScopeTarget):
        return Interest(None, target.scope_id)
    bound = target.bound
    include, exclude = tuple(bound.parsed.include), tuple(bound.parsed.exclude)
    words = (include, exclude) if include or exclude else None
    return Interest(words, bound.scope.scope_id if bound.scope is not None else None)


def _log_reader(env: LiveEnv, workspace_id: int) -> LogRead:
    async def read(after: int, limit: int) -> tuple[list[LiveEvent], int]:
        LIVE_READS.labels("log").inc()
        async with env.hub.database_turn(), env.session() as db:
            return await live_events.events_after(db, workspace_id, after, limit)

    return read


def _sifter(env: LiveEnv, workspace_id: int) -> Sift:
    async def sift(message_ids: Sequence[int], searches: Sequence[Words]) -> dict[int, Posted]:
        LIVE_READS.labels("sift").inc()
        async with env.hub.database_turn(), env.session() as db:
            return await live_sift.sift(db, workspace_id, message_ids, searches)

    return sift


async def _next_events(
    env: LiveEnv, feed: Feed, workspace_id: int, position: int
) -> tuple[list[LiveEvent], int, int]:
    """The next events after `position`, the log's head and the wake-up's stamp: from the
    process's feed (one read of the log for every subscriber), or read alone (stamp -1: nothing
    shared) by a subscriber further behind than the feed keeps."""
    read = _log_reader(env, workspace_id)
    got = await feed.after(position, BATCH, read)
    if got is not None:
        return got
    events, head = await read(position, BATCH)
    return events, head, -1


async def _reader(env: LiveEnv, token: str) -> Reader | None:
    LIVE_READS.labels("token").inc()
    async with env.hub.database_turn(), env.session() as db:
        return await reader_for_token(db, token)


def _target_key(target: Target) -> tuple[str, object]:
    """Two subscriptions with equal keys (and the same token) admit the same events alike."""
    if isinstance(target, SearchTarget):
        return ("search", target.bound.bound_to)
    return ("scope", target.scope_id)


async def _admission(
    env: LiveEnv,
    feed: Feed,
    stamp: int,
    key: tuple[object, ...],
    reader: Reader,
    target: Target,
    events: list[LiveEvent],
    delivered: OrderedDict[int, None],
) -> Admission:
    """One admission statement for every subscription of an equal reader and the same search
    at the same position in this wake-up (`key`); an access event rechecks what this
    subscription delivered, so that batch is admitted alone."""

    async def admit_alone(delivered: OrderedDict[int, None]) -> Admission:
        LIVE_READS.labels("admission").inc()
        async with env.hub.database_turn(), env.session() as db:
            return await _admit(db, reader, target, events, delivered)

    if any(e.kind == "access" for e in events):
        return await admit_alone(delivered)
    return await feed.share(stamp, ("admit", *key, len(events)), lambda: admit_alone(OrderedDict()))


async def _admit(
    db: Session,
    reader: Reader,
    target: Target,
    events: list[LiveEvent],
    delivered: OrderedDict[int, None],
) -> Admission:
    candidates = {e.message_id for e in events if e.kind in ("post", "edit")}
    recheck = {e.message_id for e in events if e.kind in ("edit", "delete")}
    if any(e.kind == "access" for e in events):
        # Everything delivered, and what this batch may deliver before the access event.
        recheck |= set(delivered) | candidates
    query = await _query(db, reader, target)
    return await admit(
        db,
        query,
        candidates=sorted(i for i in candidates if i is not None),
        recheck=sorted(i for i in recheck if i is not None),
        within_scope=target.scope_id if isinstance(target, ScopeTarget) else None,
    )


def _decide(
    workspace_id: int,
    events: list[LiveEvent],
    admission: Admission,
    delivered: OrderedDict[int, None],
) -> list[Update]:
    hits = {h.candidate.message_id: h for h in admission.hits if h.message is not None}
    out: list[Update] = []

    def removed(event: str, message_id: int) -> None:
        delivered.pop(message_id, None)
        out.append(Update(event, "REMOVED", None, message_id))

    # An event's name is made only for an update: a woken subscriber decides every event of
    # its batch (50 a commit at 1,000 posts/s), and most send nothing.
    for e in events:
        m = e.message_id
        if e.kind == "access":
            event = encode_event(workspace_id, e.position)
            for gone in [d for d in delivered if d not in admission.readable]:
                removed(event, gone)
        elif m is None:
            continue
        elif e.kind in ("post", "edit") and m in hits:
            event = encode_event(workspace_id, e.position)
            out.append(Update(event, "ADDED" if e.kind == "post" else "EDITED", hits[m], None))
            delivered[m] = None
            delivered.move_to_end(m)
            while len(delivered) > MAX_DELIVERED:
                delivered.popitem(last=False)
        elif e.kind != "post" and (
            m in delivered
            or m in (admission.readable if e.kind == "edit" else admission.deleted_readable)
        ):
            removed(encode_event(workspace_id, e.position), m)
    return out
