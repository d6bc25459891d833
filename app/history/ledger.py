"""The provenance ledger: every message a turn's searches show becomes the turn's evidence.

What an agent saw is what its reply may be built from, so the ledger is the reply's provenance
and the lineage walk rechecks all of it before delivery. That walk denies the whole read past
501 input messages, and a reply with more than 500 history ids can never be read again, so the
ledger is bounded well under both: at most CEILING (400) distinct messages, which together with
the loaded window (at most 100) makes at most 500 sources. Searches shrink their page as the
ledger fills and answer BUDGET_EXHAUSTED once it is full, rather than let a generous `first`
make the turn's reply undeliverable.

The ledger lives on the request context (one lock per request: aliased searches in one request
run one after another, each in its own transaction); the turn_evidence table is the truth and
is re-read under the turn's row lock by every search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest

from app.data.history_search import HitRow, Neighbors
from app.data.rows import MessageRow

CEILING = 400
# A hit and up to two neighbors on either side.
MESSAGES_PER_HIT = 5


@dataclass(frozen=True, slots=True)
class Shown:
    """A hit as it will be shown, with the neighbors that fit the ledger."""

    hit: HitRow
    before: tuple[MessageRow, ...]
    after: tuple[MessageRow, ...]

    def message_ids(self) -> list[int]:
        """Result order: the exchange as it reads, the hit in its place."""
        return [m.id for m in self.before] + [self.hit.message.id] + [m.id for m in self.after]


@dataclass
class Ledger:
    turn_id: int
    evidence: set[int] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def room(self) -> int:
        return max(CEILING - len(self.evidence), 0)

    def page_size(self, first: int) -> int:
        """Hits to ask for: all of `first` while there is room for each with its neighbors,
        fewer as the ledger fills, at least one while anything fits, none when full."""
        if self.room == 0:
            return 0
        return min(first, max(1, self.room // MESSAGES_PER_HIT))

    def fit(self, hits: Sequence[HitRow], neighbors: Sequence[Neighbors]) -> list[Shown]:
        """The hits and neighbors that fit the remaining room, in order. Messages already in
        the ledger cost nothing. Only when the room is smaller than one full hit (fewer than
        five) does anything drop: the farthest neighbors first, then later hits.

        A page shows each message once (prompt tokens are the agent's scarcest budget): a
        neighbor that is a hit of the same page is left to be shown as that hit, and one that
        is already another hit's neighbor is not shown again."""
        taken: set[int] = set()
        room = self.room
        shown: list[Shown] = []
        on_page = {hit.message.id for hit in hits}

        def take(message_id: int) -> bool:
            nonlocal room
            if message_id in self.evidence or message_id in taken:
                return True
            if room == 0:
                return False
            taken.add(message_id)
            room -= 1
            return True

        for hit, around in zip(hits, neighbors, strict=True):
            if not take(hit.message.id):
                break
            # Closest first: the line just before, the line just after, then the next ones.
            pairs = zip_longest(reversed(around.before), around.after)
            closest = [m for pair in pairs for m in pair if m is not None]
            fresh = [m for m in closest if m.id not in on_page]
            on_page.update(m.id for m in fresh)
            kept = {m.id for m in fresh if take(m.id)}
            shown.append(
                Shown(
                    hit,
                    tuple(m for m in around.before if m.id in kept),
                    tuple(m for m in around.after if m.id in kept),
                )
            )
        return shown

    def record(self, shown: Sequence[Shown]) -> list[int]:
        """Every message shown, in result order and deduplicated; the ledger now holds them."""
        ids = shown_ids(shown)
        self.evidence.update(ids)
        return ids


def shown_ids(shown: Sequence[Shown]) -> list[int]:
    """Every message shown, in result order and deduplicated."""
    ids: list[int] = []
    seen: set[int] = set()
    for item in shown:
        for message_id in item.message_ids():
            if message_id not in seen:
                seen.add(message_id)
                ids.append(message_id)
    return ids
