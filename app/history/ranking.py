"""How historySearch orders what it may show: weights and the candidate pool.

score = lexical + proximity + recency + requester_spoke + same_conversation, each reported
per hit as `why` (docs/relevance.md: what each one bought on the evaluation set, eval/):
  lexical     BM25 of the query's lexemes: each weighs its inverse document frequency in the
              workspace (migrations/014 keeps the counts current as messages arrive), counted
              once per message (saturated at the first occurrence), with length normalisation
              B against the workspace's average. One rare, specific word outweighs a common one
              repeated in a long message; an identifier's whole lexeme is rarer than its parts,
              so exact quotes come first. B is 0: on the tuning half, normalising length cost
              0.024 nDCG@10 (in chat the long message is usually the answer), and with B 0 and
              one count per word, lexical is the sum of the matched lexemes' IDF;
  proximity   the query's words close together (PROXIMITY_WEIGHT × ts_rank_cd of all of them
              required), plus, for a message in the conversation around one of the best
              matches or an exact match of an identifier the query names (its thread, or
              within two messages and two hours of it), what raises it to CONTEXT_SHARE of that
              match's lexical score, never past its own: the cause and fix discussed in other
              words rank just below the message that quotes the error code;
  the rest    shares of the best lexical score among the candidates, so they mean the same for
              every query: calibrated on the tuning half of eval/ to reorder near-equals
              only, never a better textual match (requester_spoke calibrated to 0: it cost one
              query there; it stays in `why`).
The features only order rows that eligibility already admitted: a boost never makes an
ineligible row eligible (the SQL computes scores for the eligible candidates alone, and a
pulled-in message passes every conjunct a match passes).

Cursors over this order: app.history.cursor; the weights a turn's search used are kept for its
later pages (turn_search_weights), so the statistics moving cannot reorder them.
"""

from __future__ import annotations

# The newest matches in the agent's perspective that a search examines: the eligible ones are
# ranked, and all of them are counted for the audit. Bounded work per search however common the
# words (at 1M messages, a term in a quarter of them: milliseconds rather than seconds), and deep
# enough that a relevant older exchange still competes with recent chatter. The conversation
# around the best 3 matches and 5 exact identifier matches adds at most 8 × 14 more candidates
# (a thread's 8 nearest, its root, 5 neighbors: app/data/history_search.py).
WINDOW = 1000
# BM25 (Robertson/Lucene) saturation and length normalisation; with one count per word and
# B = 0 the factor is 1 whatever K1.
K1 = 0.9
B = 0.0
# ts_rank_cd of all the query's words (about 0.1 per close cover) in lexical units.
PROXIMITY_WEIGHT = 2.0
# A message next to (or in the thread of) an exact identifier match: this share of its score.
# 0.7 measured best on the tuning half (0.893 against 0.871 nDCG@10), but lifted a thread reply
# with one of the query's words level with a message holding two of them
# (tests/test_history_ranking.py: more words rank higher); below 0.44 that cannot happen there.
CONTEXT_SHARE = 0.6
# ... and so does a message around one of the best few matches of any kind (0: identifier
# matches only; on the tuning half 3 was worth 0.03 nDCG@10).
CONTEXT_TOP = 3
# What follows a context source in its thread (or, sharing a word with it, among its later
# neighbors) is raised to this share of the source's score: just above it. The report or the
# question matches the words; what was said after it is the cause, the fix, the answer.
FOLLOW_UP_SHARE = 1.05
# A later message in the same conversation that says it changes something and shares a matched
# word with one of the best earlier candidates: raised to this share of that one's lexical.
SUPERSEDES_SHARE = 1.05
# A question (ending in "?") or a request to an agent by name ("scout, ...") loses this share
# of its lexical score: it is where the answer was asked for.
ASKS_WEIGHT = 0.1
# Recency decays with the age of the message at the turn's start:
# weight × best lexical × exp(-days / DAYS).
RECENCY_WEIGHT = 0.05
RECENCY_DAYS = 30.0
# "Where were *we* talking about X" prefers rooms the requester wrote in: a nudge, not a filter;
# calibrated to 0 on eval/ (it cost one query), kept for workspaces where it helps.
REQUESTER_SPOKE_WEIGHT = 0.0
# The conversation the turn is in (a channel and its threads) is the likeliest context.
SAME_CONVERSATION_WEIGHT = 0.02
