"""How historySearch orders what it may show: weights and the candidate pool.

score = lexical + proximity + recency + requester_spoke + same_conversation, each reported
per hit as `why` (docs/relevance.md says what each one bought on the evaluation set):
  lexical     BM25 of the query's lexemes: each weighs its inverse document frequency in the
              workspace (migrations/014 keeps the counts current), its term frequency saturates
              (K1) and long messages are normalised to the workspace's average length (B). One
              rare, specific word outweighs a common one repeated in a long message; an
              identifier's whole lexeme is rarer than its parts, so exact quotes come first;
  proximity   the query's words close together (PROXIMITY_WEIGHT × ts_rank_cd of all of them
              required), plus, for a message in the conversation around an exact match of an
              identifier the query names (its thread, or within two messages of it), CONTEXT_SHARE
              of that match's lexical score: the cause and fix discussed in other words rank
              just below the message that quotes the error code;
  the rest    small features that order near-equals: calibrated on the tuning half of
              eval/ so that together they stay below the lexical gap of one more matching
              specific word, never outranking a better textual match.
The features only order rows that eligibility already admitted: a boost never makes an
ineligible row eligible (the SQL computes scores for the eligible candidates alone, and a
pulled-in message passes every fragment a match passes).

Cursors over this order: app.history.cursor.
"""

from __future__ import annotations

# The newest matches in the agent's perspective that a search examines: the eligible ones are
# ranked, and all of them are counted for the audit. Bounded work per search however common the
# words (at 1M messages, a term in a quarter of them: milliseconds rather than seconds), and deep
# enough that a relevant older exchange still competes with recent chatter. The conversation
# around the best 5 exact identifier matches adds at most 5 × 13 more (history_search.py).
WINDOW = 1000
# BM25 (Robertson/Lucene): term-frequency saturation and length normalisation.
K1 = 0.9
B = 0.5
# ts_rank_cd of all the query's words (about 0.1 per close cover) in lexical units.
PROXIMITY_WEIGHT = 2.0
# A message next to (or in the thread of) an exact identifier match: this share of its score.
CONTEXT_SHARE = 0.8
# ... and so does a message around one of the best few matches of any kind.
CONTEXT_TOP = 3
# Recency decays with the age of the message at the turn's start: weight * exp(-days / DAYS).
RECENCY_WEIGHT = 0.05
RECENCY_DAYS = 30.0
# "Where were *we* talking about X" prefers rooms the requester wrote in: a nudge, not a filter.
REQUESTER_SPOKE_WEIGHT = 0.01
# The conversation the turn is in (a channel and its threads) is the likeliest context.
SAME_CONVERSATION_WEIGHT = 0.02
