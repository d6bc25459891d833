"""historySearch cursors: a position in the ranked order (app.history.ranking), bound to one
search.

A cursor seals (app.search.opaque) the last hit's (tier, score, id) and a digest binding it to the
turn and the normalized query, speaker and time bounds; the turn is its associated data too.
Even a forged position could only move within the same authorized ranking, never widen it;
sealed, it cannot be forged or read at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from app.errors import InvalidCursor
from app.search.opaque import Sealer


@dataclass(frozen=True, slots=True)
class Position:
    tier: int
    score: float
    message_id: int


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
    payload = {
        "t": position.tier,
        "s": position.score.hex(),
        "i": position.message_id,
        "b": bound_to,
    }
    return sealer.seal(payload, reader)


def decode_cursor(cursor: str, bound_to: str, sealer: Sealer, reader: str) -> Position:
    """The position in `cursor`; INVALID_CURSOR if it is malformed, another reader's or from
    another search."""
    data = sealer.open(cursor, reader)
    try:
        tier = data["t"]
        score = float.fromhex(data["s"])
        message_id = data["i"]
        bound = data["b"]
    except (ValueError, TypeError, KeyError, OverflowError):
        raise InvalidCursor("cursor is not valid for this search") from None
    if bound != bound_to or not isinstance(message_id, int) or not 0 < message_id < 2**63:
        raise InvalidCursor("cursor is not valid for this search")
    if not isinstance(tier, int) or not 0 <= tier <= 2:
        raise InvalidCursor("cursor is not valid for this search")
    if score != score:  # NaN compares unequal to every score: no position at all
        raise InvalidCursor("cursor is not valid for this search")
    return Position(tier, score, message_id)
