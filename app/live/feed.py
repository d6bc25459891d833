"""One workspace's live log as this process's subscribers read it: one read per commit for all.

A commit to a workspace wakes every subscriber of it in the process. Each used to read the log,
its token and its admission on its own (three statements per subscriber per commit: a thousand
subscribers cost three thousand statements per commit). The feed reads the log once per wake-up
and keeps its recent events; work that two subscribers would repeat within one wake-up (the
same token read again, the same search admitted for the same reader over the same events) is
done once and shared (`share`).

What is shared lives for one wake-up only, like a request's loaders: a new read of the log
forgets it. Nothing decided for one reader is ever handed to another: a key always includes the
token (the reader) it was decided for.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from app.data.live_events import LiveEvent

T = TypeVar("T")

# Reads the log: the events after a position (at most `limit`) and the log's head.
LogRead = Callable[[int, int], Awaitable[tuple[list[LiveEvent], int]]]


class Feed:
    def __init__(self, workspace_id: int, *, keep: int, poll_interval: float) -> None:
        self.workspace_id = workspace_id
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

    def ring(self) -> None:
        """A commit to the workspace: the next subscriber to ask reads the log again."""
        self._stale = True

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
        # Cleared before the read: a commit that rings during it is read by the next one.
        self._stale = False
        if self._base is None or position > self._read_to:
            # Nothing read yet, or a subscriber ahead of the feed (it read the head after a
            # commit whose notification had not arrived yet): start again from there.
            self._events, self._base, self._read_to = [], position, position
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
        self.stamp += 1
        self._shared.clear()

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
