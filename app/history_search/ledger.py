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
from collections.abc import Iterable, Sequence
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

    def fit(
        self, hits: Sequence[HitRow], neighbors: Sequence[Neighbors], limit: int
    ) -> tuple[list[Shown], int]:
        """At most `limit` of the hits, with the neighbors that fit the remaining room, in
        order, and how many of `hits` were used up (shown, or passed over). Messages already in
        the ledger cost nothing. Only when the room is smaller than one full hit (fewer than
        five) does anything drop: the farthest neighbors first, then later hits.

        A hit reads as an exchange: its nearest eligible messages on either side, in
        conversation order, closest first. A page shows each message once (prompt tokens are
        the agent's scarcest budget), without holes: an exchange stops where the page already
        shows the next message, or where the next message is a match shown as a hit of its own
        on this page (the two exchanges then read on from one another). A context hit (none of
        the query's words: there for the conversation around a match) already shown, on this
        page or before, is passed over."""
        taken: set[int] = set()
        room = self.room
        shown: list[Shown] = []
        on_page: set[int] = set()
        # The matches this page shows as hits (a match outranks context: they come first).
        page_matches = {h.message.id for h in [h for h in hits if h.tier > 0][:limit]}

        def take(message_id: int) -> bool:
            nonlocal room
            if message_id in self.evidence or message_id in taken:
                return True
            if room == 0:
                return False
            taken.add(message_id)
            room -= 1
            return True

        used = 0
        for hit, around in zip(hits, neighbors, strict=True):
            if len(shown) == limit:
                break
            hit_id = hit.message.id
            if hit.tier == 0 and (hit_id in on_page or hit_id in self.evidence):
                used += 1
                continue
            if not take(hit_id):
                break
            used += 1
            on_page.add(hit_id)
            stops = on_page | page_matches
            sides = (_until(reversed(around.before), stops), _until(around.after, stops))
            kept: tuple[list[MessageRow], list[MessageRow]] = ([], [])
            # Closest first: the line just before, the line just after, then the next ones; a
            # side that runs out of room ends there (no hole in the exchange).
            open_sides = [True, True]
            for pair in zip_longest(*sides):
                for side, message in enumerate(pair):
                    if message is None or not open_sides[side]:
                        continue
                    if take(message.id):
                        kept[side].append(message)
                    else:
                        open_sides[side] = False
            on_page.update(m.id for side in kept for m in side)
            shown.append(Shown(hit, tuple(reversed(kept[0])), tuple(kept[1])))
        return shown, used

    def record(self, shown: Sequence[Shown]) -> list[int]:
        """Every message shown, in result order and deduplicated; the ledger now holds them."""
        ids = shown_ids(shown)
        self.evidence.update(ids)
        return ids


def _until(closest_first: Iterable[MessageRow], stops: set[int]) -> list[MessageRow]:
    """The neighbors on one side, closest first, up to the first one in `stops`."""
    out: list[MessageRow] = []
    for message in closest_first:
        if message.id in stops:
            break
        out.append(message)
    return out


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
