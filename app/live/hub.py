"""One process's end of live push: one LISTEN connection, the subscribers it wakes, the limits.

Writers NOTIFY `recall_live` with `workspace:position` when they commit (app.data.live_events);
every server process (every worker of `recall serve --workers N`, on every host) listens on
one connection of its own and rings that workspace's feed, which reads the log once and wakes
the subscribers its new events may concern (app.live.feed). A wake-up carries no data: each
woken subscriber decides every event in SQL for its reader (app.live.updates). A notification lost with a dropped connection costs only latency: the
connection is opened again and every subscriber woken, and each also looks on its own every
`poll_interval` seconds.

Limits (docs/live.md): at most `max_per_token` open subscriptions per token and
`max_per_process` per process; past either, a new one is refused with LIMIT_EXCEEDED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import asyncpg

from app.data.live_events import CHANNEL
from app.db import connect
from app.errors import LimitExceeded
from app.live.feed import Feed, Interest, Waiter
from app.observability.metrics import LIVE_SUBSCRIPTIONS

_log = logging.getLogger("recall.live")

# Between two attempts to open the LISTEN connection again.
_RECONNECT_DELAY = 1.0


class Hub:
    def __init__(
        self,
        dsn: str,
        *,
        max_per_token: int,
        max_per_process: int,
        poll_interval: float,
        database_share: int,
        feed_keep: int = 2_000,
    ) -> None:
        self._dsn = dsn
        self.max_per_token = max_per_token
        self.max_per_process = max_per_process
        self.poll_interval = poll_interval
        # How many subscribers may read the database at once: one commit wakes every
        # subscriber of the workspace, and a thousand of them taking the pool's connections
        # left none for requests (searches and the connector's own batches answered 503 after
        # the acquire timeout: bench.live_push). The rest of the pool stays the requests'.
        self._database = asyncio.Semaphore(database_share)
        self._waiters: dict[int, set[Waiter]] = defaultdict(set)
        # Each workspace's log as read once per commit for all its subscribers (app.live.feed).
        self._feeds: dict[int, Feed] = {}
        self._feed_keep = feed_keep
        self._per_token: dict[bytes, int] = defaultdict(int)
        self._count = 0
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()

    @property
    def open_subscriptions(self) -> int:
        return self._count

    @asynccontextmanager
    async def database_turn(self) -> AsyncIterator[None]:
        """One subscriber's reads of a wake-up, in turn with the process's other subscribers."""
        async with self._database:
            yield

    def feed(self, workspace_id: int) -> Feed:
        """The workspace's feed, while it has subscribers in this process."""
        feed = self._feeds.get(workspace_id)
        if feed is None:
            feed = self._feeds[workspace_id] = Feed(
                workspace_id,
                keep=self._feed_keep,
                poll_interval=self.poll_interval,
                subscribers=lambda: self._waiters.get(workspace_id, ()),
            )
        return feed

    @asynccontextmanager
    async def subscribe(
        self, workspace_id: int, token_key: bytes, position: int, interest: Interest | None
    ) -> AsyncIterator[Waiter]:
        """A doorbell rung at each commit to the workspace's live log that may concern a
        subscriber at `position` with this interest (app.live.feed), while the block runs;
        LimitExceeded when the token or the process has as many open as it may."""
        if self._count >= self.max_per_process:
            raise LimitExceeded(
                f"this server has {self._count} open subscriptions, its limit; try again later"
            )
        if self._per_token[token_key] >= self.max_per_token:
            raise LimitExceeded(
                f"this token has {self.max_per_token} open subscriptions, its limit;"
                " complete one first"
            )
        waiter = Waiter(workspace_id, token_key, interest, position)
        self._count += 1
        self._per_token[token_key] += 1
        self._waiters[workspace_id].add(waiter)
        listed = False
        try:
            await self._ensure_listening()
            # Counted once it hears every commit: from then on nothing committed is missed.
            LIVE_SUBSCRIPTIONS.inc()
            listed = True
            yield waiter
        finally:
            if listed:
                LIVE_SUBSCRIPTIONS.dec()
            self._count -= 1
            self._per_token[token_key] -= 1
            if not self._per_token[token_key]:
                del self._per_token[token_key]
            self._waiters[workspace_id].discard(waiter)
            if not self._waiters[workspace_id]:
                del self._waiters[workspace_id]
                gone = self._feeds.pop(workspace_id, None)
                if gone is not None:
                    gone.close()

    async def _ensure_listening(self) -> None:
        """Start the LISTEN connection with the first subscription, and wait (briefly) until it
        listens, so a commit right after a subscription starts rings its bell."""
        if self._listener is None or self._listener.done():
            self._listening.clear()
            self._listener = asyncio.create_task(self._listen())
        # asyncio.timeout: a cancellation is never swallowed (app.live.feed.Waiter.wait).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                await self._listening.wait()

    def _ring(self, workspace_id: int | None) -> None:
        """A commit to a workspace: its feed reads it and wakes whom it may concern (every
        subscriber while the feed cannot read on its own). None (the LISTEN connection was
        lost, so commits may have gone unheard): every subscriber looks."""
        if workspace_id is not None:
            feed = self._feeds.get(workspace_id)
            if feed is not None:
                feed.ring()
            elif workspace_id in self._waiters:
                for w in self._waiters[workspace_id]:
                    w.bell.set()
            return
        for feed in self._feeds.values():
            feed.ring()
        for waiters in self._waiters.values():
            for w in waiters:
                w.bell.set()

    def _on_notification(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        workspace, _, _position = str(payload).partition(":")
        if workspace.isdigit():
            self._ring(int(workspace))

    async def _listen(self) -> None:
        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await connect(self._dsn)
                closed = asyncio.Event()
                conn.add_termination_listener(_setter(closed))
                await conn.add_listener(CHANNEL, self._on_notification)
                self._listening.set()
                # What was committed while nobody listened: everyone looks again.
                self._ring(None)
                await closed.wait()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # any failure: listen again shortly
                _log.warning("live: LISTEN connection failed (%s); retrying", type(e).__name__)
            finally:
                if conn is not None and not conn.is_closed():
                    with contextlib.suppress(Exception):
                        await conn.close()
            self._listening.clear()
            self._ring(None)
            await asyncio.sleep(_RECONNECT_DELAY)

    async def close(self) -> None:
        for feed in self._feeds.values():
            feed.close()
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None


def _setter(event: asyncio.Event) -> Callable[[object], None]:
    return lambda _conn: event.set()
