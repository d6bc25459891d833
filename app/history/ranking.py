"""How historySearch orders what it may show: weights, the candidate pool, and cursors.

score = lexical + proximity + recency + requester_spoke + same_conversation, each reported
per hit as `why`:
  lexical     ts_rank_cd of the OR'd query: about 0.1 per matching occurrence, so a message
              matching more of the words ranks higher;
  proximity   ts_rank_cd of the same words all required (queries of two or more words): up to
              0.1 when they all occur close together, falling with their distance;
  the rest    small features, together worth less than one more matching word (< 0.1), so
              they order hits of equal lexical evidence and never outrank a better match.
The features only order rows that eligibility already admitted: a boost never makes an
ineligible row eligible (the SQL computes scores for the pool alone).

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

# The newest matches in the agent's perspective that a search examines: the eligible ones are
# ranked, and all of them are counted for the audit. Bounded work per search however common the
# words (at 1M messages, a term in a quarter of them: milliseconds rather than seconds), and deep
# enough that a relevant older exchange still competes with recent chatter.
WINDOW = 1000
# Recency decays with the age of the message at the turn's start: weight * exp(-days / DAYS).
RECENCY_WEIGHT = 0.04
RECENCY_DAYS = 30.0
# "Where were *we* talking about X" prefers rooms the requester wrote in: a nudge, not a filter.
REQUESTER_SPOKE_WEIGHT = 0.02
# The conversation the turn is in (a channel and its threads) is the likeliest context.
SAME_CONVERSATION_WEIGHT = 0.03


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
