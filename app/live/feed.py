"""One workspace's live log as this process's subscribers read it: one read per commit for all,
and only the subscribers a commit may concern woken.

A commit to a workspace used to wake every subscriber of it in the process, and each read the
log, its token and its admission on its own (three statements per subscriber per commit: a
thousand subscribers cost three thousand statements per commit, and a thousand wake-ups). Now:

- The feed reads the log once per commit (`ring`) and keeps its recent events.
- It decides whom the new events may concern. An edit, a deletion or an access change may
  concern anyone. A post concerns a subscription only if it lies in the subscription's
  conversation (if it names one) and meets its search's text condition: one statement for all
  the subscribers' searches (app.data.live_sift). A subscriber it cannot concern and that had
  seen everything before the commit is moved past it without waking; every other subscriber is
  woken. This only ever leaves work undone: whatever is sent is still admitted in SQL for its
  reader at the moment it is sent (app.live.updates).
- Work that two woken subscribers would repeat within one wake-up (the same token read again,
  the same search admitted for the same reader over the same events) is done once and shared
  (`share`).

What is shared lives for one wake-up only, like a request's loaders: a new read of the log
forgets it. Nothing decided for one reader is ever handed to another: a key always includes the
reader it was decided for (its token, for a token read).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from app.data.live_events import LiveEvent
from app.data.live_sift import Posted, Words

T = TypeVar("T")

_log = logging.getLogger("recall.live")

# Reads the log: the events after a position (at most `limit`) and the log's head.
LogRead = Callable[[int, int], Awaitable[tuple[list[LiveEvent], int]]]
# Sifts posts: each posted message's scope and which of the given searches' words it matches.
Sift = Callable[[Sequence[int], Sequence[Words]], Awaitable[dict[int, Posted]]]
# More distinct searches than this in one workspace and process: everyone is woken instead.
MAX_SIFTED_SEARCHES = 1_000


@dataclass(frozen=True, slots=True)
class Interest:
    """Which posts may concern a subscription: those within `scope_id` (None: any
    conversation) that meet the text condition of `words` (None: any post). Edits, deletions
    and access changes may concern every subscription."""

    words: Words | None
    scope_id: int | None


@dataclass(eq=False)
class Waiter:
    """One subscription as its process's feed sees it: its doorbell, how far it has read the
    log (None until it knows), and which posts may concern it."""

    workspace_id: int
    token_key: bytes
    interest: Interest | None = None
    position: int | None = None
    bell: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait(self, seconds: float) -> None:
        """Until woken or `seconds` passed; the bell is reset for the next wake-up.

        asyncio.timeout, not asyncio.wait_for: on Python 3.11 wait_for swallows a cancellation
        that arrives in the step its awaitable completes (CPython gh-86296), and a subscription
        cancelled as its bell rang went on waiting: a server's stop then waited its whole
        grace period for it (bench.live_push, 1,000 subscribers, in two of three stops)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.bell.wait()
        self.bell.clear()

    def reached(self, position: int) -> None:
        """It has handled everything up to `position` (never moves back: the feed may have
        moved it further meanwhile, past posts that cannot concern it)."""
        if self.position is None or position > self.position:
            self.position = position


class Feed:
    def __init__(
        self,
        workspace_id: int,
        *,
        keep: int,
        poll_interval: float,
        subscribers: Callable[[], Collection[Waiter]] = tuple,
    ) -> None:
        self.workspace_id = workspace_id
        # This process's subscribers of the workspace, as the hub lists them.
        self._subscribers = subscribers
        # How a commit is read and sifted without any subscriber asking (`attach`); until
        # then a commit wakes every subscriber and they read for themselves.
        self._log: LogRead | None = None
        self._sift: Sift | None = None
        self._waking: asyncio.Future[None] | None = None
        # What the sift found of each post the buffer holds (`may_concern`).
        self._sifted: dict[int, _Sifted] = {}
        # may_concern's answers per interest and run of events, until the next read of the log
        # or sift (what they are judged by changes then): a commit is judged once per distinct
        # interest, not once per subscriber (a thousand subscribers and 50 posts a commit were
        # 50,000 steps per commit, a tenth of a 1,000-posts/s server's CPU).
        self._concerns: dict[tuple[Interest | None, int, int, int], bool] = {}
        # Events kept: a subscriber further behind than this reads the log itself.
        self._keep = keep
        # A notification lost with a dropped connection costs only latency: the log is read
        # again at least this often while subscribers ask.
        self._poll_interval = poll_interval
        self._events: list[LiveEvent] = []
        # The buffer holds every event with base < position <= read_to (base None: nothing
        # read yet).
        self._base: int | None = None
        self._read_to = 0
        # The log's head at the last read (beyond read_to when more than a buffer was due).
        self._head = 0
        self._read_at = 0.0
        self._stale = True
        self._lock = asyncio.Lock()
        # Bumped at every read of the log; what `share` keeps is for one stamp only.
        self.stamp = 0
        self._shared: dict[Hashable, _Shared] = {}

    def attach(self, log: LogRead, sift: Sift) -> None:
        """How the feed reads the log and sifts posts on its own (the first subscriber's
        session factory; any subscriber's would do)."""
        if self._log is None:
            self._log, self._sift = log, sift

    def ring(self) -> None:
        """A commit to the workspace: the log is read again (once) and whomever its new events
        may concern is woken."""
        self._stale = True
        if self._log is None:
            self._wake(self._subscribers())
        elif self._waking is None or self._waking.done():
            self._waking = asyncio.ensure_future(self._read_and_wake())

    def close(self) -> None:
        if self._waking is not None:
            self._waking.cancel()

    async def _read_and_wake(self) -> None:
        # A commit that rings while this runs is read by the next turn of the loop.
        while self._stale:
            try:
                await self._read_once_and_wake()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the log or the sift failed: everyone reads for itself
                _log.warning(
                    "live: reading workspace %s's log failed (%s)",
                    self.workspace_id,
                    type(e).__name__,
                )
                self._wake(self._subscribers())
                return

    async def _read_once_and_wake(self) -> None:
        assert self._log is not None
        async with self._lock:
            if not self._stale:
                return  # a subscriber read it meanwhile, and woke whom it concerns
            if self._base is None:
                # Nothing read yet: every subscriber reads from where it stands.
                self._stale = False
                self._wake(self._subscribers())
                return
            await self._read(self._read_to, self._log)

    async def _wake_concerned(self, start: int) -> None:
        """After a read of the log from `start` to `_read_to`: sift the new posts, then wake
        every subscriber the new events may concern, and move past them, unwoken, each
        subscriber they cannot concern that had read up to `start` exactly."""
        end = self._read_to
        subscribers = list(self._subscribers())
        first = bisect.bisect_right(self._events, start, key=_position)
        new = self._events[first:]
        # The buffer holds all of (start, end] unless more than a buffer was read at once.
        whole = self._base is not None and start >= self._base
        await self._sift_posts(new, subscribers)
        for w in subscribers:
            if w.position is not None and w.position >= end:
                continue
            if whole and w.position == start and not self.may_concern(w.interest, new):
                w.reached(end)
            else:
                # Not placed yet, or it has not handled what came before (it is busy, or
                # was woken already): it looks for itself, and skips what cannot concern it.
                w.bell.set()

    async def _sift_posts(self, events: list[LiveEvent], subscribers: list[Waiter]) -> None:
        """Record, for each new post, its conversation and which of the subscribers' searches'
        words it meets (one statement); nothing recorded when that cannot be done."""
        posts = [e.message_id for e in events if e.kind == "post" and e.message_id is not None]
        words = sorted({w.interest.words for w in subscribers if w.interest and w.interest.words})
        if not posts or self._sift is None or len(words) > MAX_SIFTED_SEARCHES:
            return
        try:
            posted = await self._sift(posts, words)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # unrecorded: whoever the posts might concern is woken
            _log.warning(
                "live: sifting workspace %s's posts failed (%s)",
                self.workspace_id,
                type(e).__name__,
            )
            return
        tested = frozenset(words)
        self._concerns.clear()
        for message_id in posts:
            seen = posted.get(message_id)
            self._sifted[message_id] = (
                _Sifted(None, frozenset(), tested)
                if seen is None
                else _Sifted(seen.scope_id, frozenset(words[i] for i in seen.matches), tested)
            )

    def may_concern(self, interest: Interest | None, events: Sequence[LiveEvent]) -> bool:
        """Whether any of the events may concern a subscription with this interest, from what
        the sift recorded: False only for posts it recorded that lie outside the interest's
        conversation or miss its words (or have no search document, so no search admits them:
        the admission reads documents too). An edit, a deletion, an access change, or a post
        not sifted for these words may concern it.

        Remembered per interest and run of events (a position holds the same event for
        good, so a run's first and last positions and its length name it) until the log is
        read again or the sift records more."""
        if not events:
            return False
        key = (interest, events[0].position, events[-1].position, len(events))
        known = self._concerns.get(key)
        if known is None:
            known = self._concerns[key] = self._judge(interest, events)
        return known

    def _judge(self, interest: Interest | None, events: Sequence[LiveEvent]) -> bool:
        for e in events:
            if e.kind != "post" or interest is None:
                return True
            if e.message_id is None:
                continue
            seen = self._sifted.get(e.message_id)
            if seen is None:
                return True
            if seen.scope_id is None:
                continue
            if interest.scope_id is not None and seen.scope_id != interest.scope_id:
                continue
            if interest.words is None or interest.words not in seen.tested:
                return True
            if interest.words in seen.matched:
                return True
        return False

    @staticmethod
    def _wake(subscribers: Iterable[Waiter]) -> None:
        for w in subscribers:
            w.bell.set()

    async def after(
        self, position: int, limit: int, read: LogRead
    ) -> tuple[list[LiveEvent], int, int] | None:
        """The next `limit` events after `position`, the log's head as last read, and the
        stamp of that read; the log is read first (once, for every subscriber) if a commit rang
        since the last read. None when the feed does not reach back to `position` (the caller
        reads the log itself)."""
        async with self._lock:
            due = time.monotonic() - self._read_at >= self._poll_interval
            if self._stale or due or self._base is None or position > self._read_to:
                await self._read(position, read)
            assert self._base is not None
            if position < self._base:
                return None
            first = bisect.bisect_right(self._events, position, key=_position)
            return self._events[first : first + limit], self._head, self.stamp

    async def _read(self, position: int, read: LogRead) -> None:
        """Read the log on from what the feed holds, then wake whom the new events concern
        (so every read, whoever makes it, wakes the others it concerns)."""
        # Cleared before the read: a commit that rings during it is read by the next one.
        self._stale = False
        if self._base is None or position > self._read_to:
            # Nothing read yet, or a subscriber ahead of the feed (it read the head after a
            # commit whose notification had not arrived yet): start again from there.
            self._events, self._base, self._read_to = [], position, position
            self._sifted.clear()
        start = self._read_to
        try:
            events, head = await read(self._read_to, self._keep)
        except BaseException:
            self._stale = True  # the next subscriber to ask tries again
            raise
        self._read_at = time.monotonic()
        self._head = max(self._head, head)
        self._events.extend(events)
        if len(events) == self._keep:
            # More than a buffer's worth: what is read so far, and read on at the next ask.
            self._read_to, self._stale = events[-1].position, True
        else:
            self._read_to = max(self._read_to, head)
        if len(self._events) > self._keep:
            dropped = self._events[: len(self._events) - self._keep]
            self._events = self._events[len(dropped) :]
            self._base = dropped[-1].position
            for e in dropped:
                if e.message_id is not None:
                    self._sifted.pop(e.message_id, None)
        self.stamp += 1
        self._shared.clear()
        self._concerns.clear()
        await self._wake_concerned(start)

    async def share(self, stamp: int, key: Hashable, work: Callable[[], Awaitable[T]]) -> T:
        """`work`'s result, computed once for every subscriber asking with the same key within
        the wake-up `stamp` names; computed alone once that wake-up is over."""
        if stamp != self.stamp:
            return await work()
        shared = self._shared.get(key)
        if shared is None:
            shared = self._shared[key] = _Shared(asyncio.ensure_future(work()))
        shared.waiting += 1
        try:
            # A subscriber cancelled while it waits (its client left) does not cancel the work
            # the others wait for...
            result: T = await asyncio.shield(shared.task)
            return result
        finally:
            shared.waiting -= 1
            if not shared.waiting and not shared.task.done():
                # ...but work nobody waits for any more stops: clients that left all at once
                # (a server stopping, a network failure) must not leave a backlog of it behind.
                # A subscriber asking later in the same wake-up starts it again.
                shared.task.cancel()
                if self._shared.get(key) is shared:
                    del self._shared[key]


class _Shared:
    """A shared piece of work and how many subscribers wait for it."""

    __slots__ = ("task", "waiting")

    def __init__(self, task: asyncio.Future[Any]) -> None:
        self.task = task
        self.waiting = 0
        # Its failure reaches whoever waits; read here too, so that one nobody waits for any
        # more is not reported as never retrieved.
        task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _position(event: LiveEvent) -> int:
    return event.position


@dataclass(frozen=True, slots=True)
class _Sifted:
    """What the sift found of a post: its conversation (None: no search document), the
    searches' words it meets, and the words it was tested against."""

    scope_id: int | None
    matched: frozenset[Words]
    tested: frozenset[Words]
