"""How historySearch orders what it may show: weights and the candidate pool.

score = lexical + proximity + supersedes + asks + recency + requester_spoke + same_conversation,
each reported per hit as `why` (docs/relevance.md: what each one bought on the evaluation set,
eval/):
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
              matches or an exact match of an identifier the query names, what raises it to a
              share of that match's lexical score (never below its own): FOLLOW_UP_SHARE for
              the replies after it in its thread or the thread it roots — the cause and the fix
              written after the report, the answer after the question, rank just above it —
              CONTEXT_SHARE for the thread's root and earlier replies and for neighbors within
              two messages and two hours that share a word with it;
  supersedes  a later message in the same conversation that says it changes something
              (revert, postpone, move, extend, ...) and shares the query's words with one of
              the best candidates before it is raised to SUPERSEDES_SHARE of that one: the
              decision that changed ranks above the plan it changed;
  asks        minus ASKS_WEIGHT of its lexical score for a question ("...?") or a request to an
              agent by name ("scout, ..."): where the answer was asked for, not the answer;
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
# (a thread's 8 nearest, its root, 5 neighbors: app/data/history_search.py); supersession
# compares at most 20 × 100 pairs of them.
WINDOW = 1000
# BM25 (Robertson/Lucene) saturation and length normalisation; with one count per word and
# B = 0 the factor is 1 whatever K1.
K1 = 0.9
B = 0.0
# ts_rank_cd of all the query's words (about 0.1 per close cover) in lexical units.
PROXIMITY_WEIGHT = 2.0
# A message around a context source that did not follow it in its thread (the thread's root or
# an earlier reply, a neighbor in the channel sharing a word with it): this share of its score.
# On the tuning half 0.6 to 0.8 tie (0.921 nDCG@10; 0.5: 0.918, 0: 0.904).
CONTEXT_SHARE = 0.6
# ... and so does a message around one of the best few matches of any kind (0: identifier
# matches only; on the tuning half 3 was worth 0.03 nDCG@10).
CONTEXT_TOP = 3
# The replies after a context source in its thread (or in the thread it roots) are raised to
# this share of the source's score: just above it. The report or the question matches the
# words; what was said after it is the cause, the fix, the answer (tuning half: 1.05 0.921,
# 1.0 0.910, 0.9 0.904, 0.4 0.887). Channel neighbors are not replies: raised above the match,
# one common word they shared with it lifted them over an exact match.
FOLLOW_UP_SHARE = 1.05
# A later message in the same conversation that says it changes something and shares matched
# words with one of the best earlier candidates: raised to this share of that one's lexical,
# just above it. Flat on the tuning half (no query there has the changed plan outscoring its
# change), worth +0.02 on the held-out half (docs/relevance.md).
SUPERSEDES_SHARE = 1.05
# A question (ending in "?") or a request to an agent by name ("scout, ...") loses this share
# of its lexical score: it is where the answer was asked for (tuning half: 0.1 to 0.3 tie,
# +0.005 over 0).
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
