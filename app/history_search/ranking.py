"""How historySearch orders what it may show: tiers, weights and the examined window.

Hits are ordered by **tier**, then by score (docs/relevance.md):
  EXACT    the message holds the query verbatim: the whole query when it has several words
           (a pasted error line), or every word of it with each identifier and phrase as
           written (`pg-replica-03`, `ERR_WEBHOOK_TIMEOUT`, `"retry after"`), case and runs of
           spaces aside (app.history_search.exact);
  WORDS    it holds some of the query's words;
  CONTEXT  it holds none of them: a message of the conversation around one of the best
           matches, ranked only below every match — and only while the eligible matches are
           fewer than CONTEXT_FILL, so that a page is never short of the answer's thread.
A match outranks context, whatever the weights: no weight below can lift a message with none
of the query's words over one that has them.

score = lexical + context + supersedes + asks + recency + same_conversation, each reported per
hit as `why`:
  lexical     BM25 of the query's lexemes: each weighs its inverse document frequency in the
              workspace, counted once per message, length normalisation B against the
              workspace's average (B 0: in chat the long message is usually the answer),
              times the share of the query's lexemes the message holds (coverage: Lucene's
              classic coord). One rare, specific word outweighs a common one; an identifier's
              whole lexeme is rarer than its parts; a message that says most of the question
              outweighs one that shares a single word of it;
  context     for a message in the conversation around one of the best CONTEXT_SOURCES
              matches, what raises it to a share of that match's lexical score (never below
              its own): FOLLOW_UP_SHARE for the replies after it in its thread — the cause and
              the fix written after the report — CONTEXT_SHARE for the thread's root, its
              earlier replies and its neighbors that share a word with it;
  supersedes  a later message in the same conversation that says it changes something
              (revert, postpone, move, ...) and shares the query's words with one of the best
              matches before it is raised to SUPERSEDES_SHARE of that one;
  asks        minus ASKS_WEIGHT of its lexical score for a question ("...?") or a request to an
              agent by name ("scout, ..."): where the answer was asked for, not the answer;
  recency, same_conversation   shares of the best lexical score among the candidates, so they
              mean the same for every query: they reorder near-equals only.
The features only order rows that eligibility already admitted: a boost never makes an
ineligible row eligible.

Cursors over this order: app.history_search.cursor; the weights a turn's search used are kept for its
later pages (turn_search_weights), so the statistics moving cannot reorder them.
"""

from __future__ import annotations

from app.data.history_search import Weights

# The examined window: the newest WINDOW matches of any of the query's words, and every match
# of its rarest words, however old (the rarest first, as many as have RARE_WINDOW documents at
# most between them). Bounded work per search however common the words; a rare identifier's
# old incident still competes with recent chatter that shares a common word. When a window's
# eligible matches are spent, the cursor continues into the next WINDOW older matches.
WINDOW = 100
RARE_WINDOW = 400
# BM25 (Robertson/Lucene) saturation and length normalisation; with one count per word and
# B = 0 the factor is 1 whatever K1.
K1 = 0.9
B = 0.0
# The best this many matches by lexical score have their bodies read: for the exact tier (a
# body that holds the query verbatim holds all of its lexemes, so it is among them) and for
# `asks`.
BEST_READ = 50
# The conversation around the best few matches (exact ones first).
CONTEXT_SOURCES = 3
CONTEXT_SHARE = 0.6
FOLLOW_UP_SHARE = 1.05
# Messages with none of the query's words join the ranking (below every match) only while the
# eligible matches are fewer than this: past it, a page of matches is there to read.
CONTEXT_FILL = 30
# A later message in the same conversation that says it changes something: raised to this
# share of the lexical score of the best match it revises, just above it.
SUPERSEDES_SHARE = 1.05
# A question (ending in "?") or a request to an agent by name ("scout, ...") loses this share
# of its lexical score: it is where the answer was asked for, not the answer.
ASKS_WEIGHT = 0.1
# Recency decays with the age of the message at the turn's start:
# weight × best lexical × exp(-days / DAYS).
RECENCY_WEIGHT = 0.05
RECENCY_DAYS = 30.0
# The conversation the turn is in (a channel and its threads) is the likeliest context.
SAME_CONVERSATION_WEIGHT = 0.02


def weights() -> Weights:
    """The constants above as a search uses them (read at each search: eval.relevance --tune
    sets them)."""
    return Weights(
        window=WINDOW,
        rare_window=RARE_WINDOW,
        k1=K1,
        b=B,
        best_read=BEST_READ,
        context_sources=CONTEXT_SOURCES,
        context_share=CONTEXT_SHARE,
        follow_up_share=FOLLOW_UP_SHARE,
        context_fill=CONTEXT_FILL,
        supersedes_share=SUPERSEDES_SHARE,
        asks=ASKS_WEIGHT,
        recency=RECENCY_WEIGHT,
        recency_days=RECENCY_DAYS,
        same_conversation=SAME_CONVERSATION_WEIGHT,
    )
