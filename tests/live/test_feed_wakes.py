"""app.live.feed's wake-ups at unit level: a read of the log wakes each subscriber its new
events may concern and moves the others past them unwoken; anything it cannot judge wakes."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from app.data.live_events import LiveEvent
from app.data.live_sift import Posted, Words
from app.live.feed import Feed, Interest, Waiter

ZEBRA: Words = (("zebra",), ())
OKAPI: Words = (("okapi",), ())


class Log:
    """A log in memory whose events the test writes, and the sift's answers for its posts."""

    def __init__(self) -> None:
        self.events: list[LiveEvent] = []
        # message id -> (scope, the words it contains)
        self.documents: dict[int, tuple[int, set[Words]]] = {}
        self.sifts = 0
        self.fail_sift = False

    def post(self, message_id: int, scope: int, *words: Words) -> None:
        self.documents[message_id] = (scope, set(words))
        self.events.append(LiveEvent(len(self.events) + 1, message_id, "post"))

    def add(self, message_id: int | None, kind: str) -> None:
        self.events.append(LiveEvent(len(self.events) + 1, message_id, kind))

    async def read(self, after: int, limit: int) -> tuple[list[LiveEvent], int]:
        return self.events[after : after + limit], len(self.events)

    async def sift(self, ids: Sequence[int], searches: Sequence[Words]) -> dict[int, Posted]:
        self.sifts += 1
        if self.fail_sift:
            raise ConnectionError("the database went away")
        out = {}
        for i in ids:
            if i in self.documents:
                scope, words = self.documents[i]
                out[i] = Posted(scope, frozenset(n for n, w in enumerate(searches) if w in words))
        return out


async def _setup(*interests: Interest | None) -> tuple[Log, Feed, list[Waiter]]:
    log = Log()
    waiters = [Waiter(1, b"t", interest, 0) for interest in interests]
    feed = Feed(1, keep=100, poll_interval=60, subscribers=lambda: waiters)
    feed.attach(log.read, log.sift)
    await feed.after(0, 10, log.read)  # the feed has read the (empty) log
    return log, feed, waiters


async def _commit(feed: Feed) -> None:
    feed.ring()
    for _ in range(5):  # the feed's read and wake-up run as a task of their own
        await asyncio.sleep(0)


def _woken(waiters: list[Waiter]) -> list[bool]:
    woken = [w.bell.is_set() for w in waiters]
    for w in waiters:
        w.bell.clear()
    return woken


async def test_a_post_wakes_only_the_searches_whose_words_it_meets() -> None:
    log, feed, waiters = await _setup(Interest(ZEBRA, None), Interest(OKAPI, None))
    log.post(10, 1, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [True, False]
    # The one left asleep is past the post; the woken one reads it itself.
    assert [w.position for w in waiters] == [0, 1]
    assert log.sifts == 1


async def test_a_post_in_another_conversation_wakes_no_one_watching_a_conversation() -> None:
    log, feed, waiters = await _setup(Interest(None, 7), Interest(None, 8), Interest(ZEBRA, 8))
    log.post(10, 7, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [True, False, False]


async def test_edits_deletions_and_access_changes_wake_everyone() -> None:
    for kind, message_id in (("edit", 10), ("delete", 10), ("access", None)):
        log, feed, waiters = await _setup(Interest(ZEBRA, None), Interest(None, 8))
        log.add(message_id, kind)
        await _commit(feed)
        assert _woken(waiters) == [True, True], kind
        assert log.sifts == 0


async def test_a_subscriber_behind_or_not_yet_placed_is_always_woken() -> None:
    log, feed, waiters = await _setup(Interest(OKAPI, None), Interest(OKAPI, None))
    log.post(10, 1, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [False, False]
    waiters[0].position = None  # not placed yet
    waiters[1].position = 0  # has not handled the first post (it was busy): behind
    log.post(11, 1, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [True, True]


async def test_a_failed_sift_wakes_everyone_it_might_concern() -> None:
    log, feed, waiters = await _setup(Interest(OKAPI, None))
    log.fail_sift = True
    log.post(10, 1, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [True]
    assert waiters[0].position == 0


async def test_a_post_without_a_document_concerns_no_one() -> None:
    log, feed, waiters = await _setup(Interest(ZEBRA, None), Interest(None, None))
    log.events.append(LiveEvent(1, 99, "post"))  # no search document for message 99
    await _commit(feed)
    assert _woken(waiters) == [False, False]
    assert [w.position for w in waiters] == [1, 1]


async def test_a_read_by_a_subscriber_wakes_the_others_it_concerns() -> None:
    log, feed, waiters = await _setup(Interest(ZEBRA, None), Interest(ZEBRA, None))
    log.post(10, 1, ZEBRA)
    feed._stale = True  # a commit rang but the feed's own read has not run yet
    got = await feed.after(0, 10, log.read)  # the first subscriber reads it first
    assert got is not None and [e.position for e in got[0]] == [1]
    assert _woken(waiters) == [True, True]
    for w in waiters:
        w.reached(1)  # both handled it
    await _commit(feed)  # the feed's own read finds nothing more
    assert _woken(waiters) == [False, False]


async def test_a_commit_read_by_no_feed_yet_wakes_everyone() -> None:
    waiters = [Waiter(1, b"t", Interest(OKAPI, None), 0)]
    feed = Feed(1, keep=100, poll_interval=60, subscribers=lambda: waiters)
    feed.ring()  # nothing attached: it cannot read on its own
    assert _woken(waiters) == [True]


async def test_a_subscriber_behind_skips_what_the_sift_found_cannot_concern_it() -> None:
    log, feed, waiters = await _setup(Interest(ZEBRA, None), Interest(OKAPI, 8))
    log.post(10, 1, ZEBRA)
    await _commit(feed)
    log.post(11, 1, OKAPI)  # okapi words, another conversation
    log.post(12, 8)  # its conversation, no words
    await _commit(feed)
    assert _woken(waiters) == [True, False]
    events = log.events
    assert feed.may_concern(waiters[0].interest, events)  # the zebra post
    assert not feed.may_concern(waiters[0].interest, events[1:])
    assert not feed.may_concern(waiters[1].interest, events)
    # Unknown words (a search opened after the sift) and edits may concern anyone.
    assert feed.may_concern(Interest((("giraffe",), ()), None), events[1:])
    log.add(11, "edit")
    assert feed.may_concern(waiters[1].interest, log.events[3:])


async def test_a_commit_is_judged_once_per_interest_not_per_subscriber(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    judged: list[Interest | None] = []
    judge = Feed._judge

    def counting(self: Feed, interest: Interest | None, events: Sequence[LiveEvent]) -> bool:
        judged.append(interest)
        return judge(self, interest, events)

    monkeypatch.setattr(Feed, "_judge", counting)
    interests = [Interest(ZEBRA, None), Interest(OKAPI, None), Interest(None, 8)]
    log, feed, waiters = await _setup(*(interests * 100))
    for i in range(50):
        log.post(10 + i, 1, ZEBRA)
    await _commit(feed)
    assert _woken(waiters) == [True, False, False] * 100
    assert sorted(judged, key=repr) == sorted(interests, key=repr)


async def test_what_the_sift_records_later_is_judged_anew() -> None:
    log, feed, waiters = await _setup(Interest(OKAPI, None))
    log.post(10, 1, ZEBRA)
    asked: list[bool] = []
    sift = log.sift

    async def sift_asked_meanwhile(
        ids: Sequence[int], searches: Sequence[Words]
    ) -> dict[int, Posted]:
        # A subscriber asks while the sift is in flight: not sifted yet, it may concern it...
        asked.append(feed.may_concern(waiters[0].interest, log.events))
        return await sift(ids, searches)

    feed._sift = sift_asked_meanwhile
    await _commit(feed)
    # ...and once sifted, the zebra post cannot concern an okapi search.
    assert asked == [True]
    assert not feed.may_concern(waiters[0].interest, log.events)
