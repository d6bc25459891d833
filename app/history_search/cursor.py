"""historySearch cursors: a position in the ranked order (app.history_search.ranking), bound to one
search.

The order is window by window (app.data.history_search.window): the newest matches and the
rarest words' matches first, ranked; then the next older matches, ranked; and so on. A cursor
seals (app.message_search.opaque) the window it is in (`window`: the recency position the window's
matches are older than, None for the first; `rare_floor`: how far back the first window read
the rarest words' matches), the last hit's (tier, score, id) in it — None at the start of a
window — and a digest binding it to the turn and the normalized query, speaker and time
bounds; the turn is its associated data too.
Even a forged position could only move within the same authorized ranking, never widen it;
sealed, it cannot be forged or read at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from app.errors import InvalidCursor
from app.message_search.opaque import Sealer


@dataclass(frozen=True, slots=True)
class Position:
    # The window: matches older than this recency position (None: the first window).
    window: int | None
    # The first window read the rarest words' matches back to this recency position (None:
    # all of them); a later window leaves out the ones it read.
    rare_floor: int | None
    # The last hit's place in its window's ranking (None: the window's start).
    tier: int | None = None
    score: float | None = None
    message_id: int | None = None

    @property
    def ranked(self) -> tuple[int, float, int] | None:
        """(tier, score, id) within the window, or None at its start."""
        if self.tier is None or self.score is None or self.message_id is None:
            return None
        return self.tier, self.score, self.message_id


def binding(
    turn_id: int,
    normalized_query: str,
    speaker: str,
    since: datetime | None,
    until: datetime | None,
) -> str:
    """What a cursor belongs to: the same turn asking the same question with the same filters."""
    material = json.dumps(
        [
            turn_id,
            normalized_query,
            speaker,
            since.isoformat() if since else None,
            until.isoformat() if until else None,
        ]
    )
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def encode_cursor(position: Position, bound_to: str, sealer: Sealer, reader: str) -> str:
    # float.hex() round-trips exactly, so the next page resumes at precisely this score.
    payload: dict[str, object] = {"w": position.window, "r": position.rare_floor, "b": bound_to}
    ranked = position.ranked
    if ranked is not None:
        payload.update(t=ranked[0], s=ranked[1].hex(), i=ranked[2])
    return sealer.seal(payload, reader)


def _recency(value: object) -> bool:
    return value is None or (isinstance(value, int) and 0 <= value < 2**63)


def decode_cursor(cursor: str, bound_to: str, sealer: Sealer, reader: str) -> Position:
    """The position in `cursor`; INVALID_CURSOR if it is malformed, another reader's or from
    another search."""
    data = sealer.open(cursor, reader)
    invalid = InvalidCursor("cursor is not valid for this search")
    try:
        bound, window, rare_floor = data["b"], data["w"], data["r"]
        if "t" not in data:
            if bound != bound_to or window is None or not _recency(window):
                raise invalid  # only a later window starts without a hit
            if not _recency(rare_floor):
                raise invalid
            return Position(window, rare_floor)
        tier = data["t"]
        score = float.fromhex(data["s"])
        message_id = data["i"]
    except (ValueError, TypeError, KeyError, OverflowError, AttributeError):
        raise invalid from None
    if bound != bound_to or not isinstance(message_id, int) or not 0 < message_id < 2**63:
        raise invalid
    if not isinstance(tier, int) or isinstance(tier, bool) or not 0 <= tier <= 2:
        raise invalid
    if score != score:  # NaN compares unequal to every score: no position at all
        raise invalid
    if not _recency(window) or not _recency(rare_floor):
        raise invalid
    return Position(window, rare_floor, tier, score, message_id)
