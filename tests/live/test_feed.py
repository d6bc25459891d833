"""app.live.feed at unit level: the log is read once per commit for every subscriber, nothing is
skipped or repeated, a subscriber further behind than the feed keeps reads the log itself, and
what is shared is forgotten at the next read."""

from __future__ import annotations

import asyncio

from app.data.live_events import LiveEvent
from app.live.feed import Feed, Waiter


class Log:
    """A workspace's log in memory: positions 1..head, and how often it was read."""

    def __init__(self) -> None:
        self.head = 0
        self.reads = 0

    def append(self, n: int) -> None:
        self.head += n

    async def read(self, after: int, limit: int) -> tuple[list[LiveEvent], int]:
        self.reads += 1
        last = min(self.head, after + limit)
        return [LiveEvent(p, p, "post") for p in range(after + 1, last + 1)], self.head


def _positions(got: tuple[list[LiveEvent], int, int] | None) -> list[int]:
    assert got is not None
    return [e.position for e in got[0]]


async def test_one_read_per_commit_for_every_subscriber() -> None:
    log, feed = Log(), Feed(1, keep=100, poll_interval=60)
    assert _positions(await feed.after(0, 10, log.read)) == []
    log.append(3)
    feed.ring()
    for _ in range(5):  # five subscribers at position 0
        assert _positions(await feed.after(0, 10, log.read)) == [1, 2, 3]
    assert log.reads == 2
    assert _positions(await feed.after(2, 10, log.read)) == [3]  # one that had seen 1 and 2
    assert _positions(await feed.after(3, 10, log.read)) == []
    assert log.reads == 2


async def test_a_subscriber_behind_what_the_feed_keeps_reads_the_log_itself() -> None:
    log, feed = Log(), Feed(1, keep=5, poll_interval=60)
    await feed.after(0, 10, log.read)
    log.append(12)
    feed.ring()
    # More than a buffer's worth: the first five, then the rest at the next ask.
    assert _positions(await feed.after(0, 10, log.read)) == [1, 2, 3, 4, 5]
    got = await feed.after(5, 10, log.read)
    assert _positions(got) == [6, 7, 8, 9, 10]
    assert got is not None and got[1] == 12  # the head: how far behind the subscriber is
    assert await feed.after(0, 10, log.read) is None  # 1..5 are no longer kept
    assert _positions(await feed.after(10, 10, log.read)) == [11, 12]


async def test_a_subscriber_ahead_of_the_feed_is_served_from_its_own_position() -> None:
    log, feed = Log(), Feed(1, keep=100, poll_interval=60)
    await feed.after(0, 10, log.read)
    log.append(4)  # committed; its notification has not rung yet
    assert _positions(await feed.after(4, 10, log.read)) == []  # subscribed at head 4
    log.append(1)
    feed.ring()
    assert _positions(await feed.after(4, 10, log.read)) == [5]


async def test_what_is_shared_lasts_one_read() -> None:
    log, feed = Log(), Feed(1, keep=100, poll_interval=60)
    calls: list[int] = []

    async def work() -> int:
        calls.append(1)
        return len(calls)

    got = await feed.after(0, 10, log.read)
    assert got is not None
    stamp = got[2]
    assert await feed.share(stamp, "k", work) == 1
    assert await feed.share(stamp, "k", work) == 1  # the same wake-up: shared
    assert await feed.share(stamp, "other", work) == 2  # another key: its own
    log.append(1)
    feed.ring()
    got = await feed.after(0, 10, log.read)
    assert got is not None and got[2] != stamp
    assert await feed.share(got[2], "k", work) == 3  # a new read forgets it
    assert await feed.share(stamp, "k", work) == 4  # an old wake-up's stamp shares nothing


async def test_shared_work_nobody_waits_for_stops_and_starts_again_if_asked() -> None:
    log, feed = Log(), Feed(1, keep=100, poll_interval=60)
    got = await feed.after(0, 10, log.read)
    assert got is not None
    stamp, started, finished = got[2], [], []

    async def work() -> str:
        started.append(1)
        await asyncio.sleep(0.2)
        finished.append(1)
        return "done"

    waiters = [asyncio.ensure_future(feed.share(stamp, "k", work)) for _ in range(3)]
    await asyncio.sleep(0.05)
    waiters[0].cancel()  # one leaves: the others still wait, the work goes on
    await asyncio.sleep(0.05)
    assert started == [1] and not finished
    for w in waiters[1:]:
        w.cancel()  # everyone left: the work stops
    await asyncio.sleep(0.3)
    assert finished == []
    # Asked again in the same wake-up: done anew, and answered.
    assert await feed.share(stamp, "k", work) == "done"
    assert started == [1, 1] and finished == [1]


async def test_a_waiter_cancelled_as_its_bell_rings_is_cancelled() -> None:
    """A subscription's task cancelled (its client gone, the server stopping) in the same step
    of the loop as its bell rings ends: the cancellation is not swallowed. Python 3.11's
    asyncio.wait_for returned the bell's result instead (CPython gh-86296), and the
    subscription went on waiting, holding a server's stop for its whole grace period."""
    for steps in range(6):
        waiter = Waiter(workspace_id=1, token_key=b"t")
        task = asyncio.create_task(waiter.wait(10))
        await asyncio.sleep(0)
        waiter.bell.set()
        for _ in range(steps):
            await asyncio.sleep(0)
        if not task.cancel():
            continue  # it had already returned, woken by the bell
        try:
            await task
        except asyncio.CancelledError:
            continue
        raise AssertionError(f"the cancellation was swallowed ({steps} steps after the bell)")
