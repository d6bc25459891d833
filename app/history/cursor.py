"""historySearch cursors: a position in the ranked order (app.history.ranking), bound to one
search.

A cursor is base64url(JSON) of the last hit's (score, id) plus a digest binding it to the turn
and the normalized query, speaker and time bounds. It is not signed: a forged position can only
move within the same authorized ranking, never widen it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from app.errors import InvalidCursor
from app.search.opaque import seal, unseal


@dataclass(frozen=True, slots=True)
class Position:
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


def encode_cursor(position: Position, bound_to: str) -> str:
    # float.hex() round-trips exactly, so the next page resumes at precisely this score.
    return seal({"s": position.score.hex(), "i": position.message_id, "b": bound_to})


def decode_cursor(cursor: str, bound_to: str) -> Position:
    """The position in `cursor`; INVALID_CURSOR if it is malformed or from another search."""
    data = unseal(cursor)
    try:
        score = float.fromhex(data["s"])
        message_id = data["i"]
        bound = data["b"]
    except (ValueError, TypeError, KeyError, OverflowError):
        raise InvalidCursor("cursor is not valid for this search") from None
    if bound != bound_to or not isinstance(message_id, int) or not 0 < message_id < 2**63:
        raise InvalidCursor("cursor is not valid for this search")
    if score != score:  # NaN compares unequal to every score: no position at all
        raise InvalidCursor("cursor is not valid for this search")
    return Position(score, message_id)
