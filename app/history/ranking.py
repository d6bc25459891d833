"""How historySearch orders what it may show: weights and the candidate pool.

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

Cursors over this order: app.history.cursor.
"""

from __future__ import annotations

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
