"""historySearch's one statement: the examined window, its exclusion counts, the ranked page of
its eligible rows with their neighbors, and the turn's ledger.

Authorization is where ranking starts. The window (which matches are examined: the newest
few in the agent's conversations and the rarest words' matches, window.py) is read from the
sidecar and bounded before eligibility is decided, so it can only leave rows out; every row
then ranked, counted, shown or recorded is a message in the agent's perspective that is
eligible for the turn's destination — the shared fragments of app.data.eligibility, applied in
WHERE clauses before any score, the page's ORDER BY or its LIMIT. Every other condition (the
query's words, speaker, time bounds, the turn's own context) is another conjunct: filters only
ever remove rows. The sidecar (search_documents) only narrows the scan; the text returned is
the canonical body. The fragments, in the order the statement defines them:

  weights   the query's lexemes and their IDF (app.data.history_search.weights)
  window    the examined matches, their verdicts and counts, the pool (.window)
  features  the best matches' bodies (exact, asks), the conversation around them,
            supersession (.features)
  page      scores, the page, its hits and neighbors, the ledger (.page)
"""

from __future__ import annotations

from app.data.eligibility import Destination, allowed_audiences_cte
from app.data.history_search.features import (
    NO_CONTEXT,
    NO_REVISIONS,
    best_ctes,
    candidates_cte,
    context_ctes,
    revisions_ctes,
)
from app.data.history_search.inputs import Bound, PageRequest, RankInputs, SearchFilters
from app.data.history_search.neighbors import Neighbors, neighbors_from
from app.data.history_search.page import FINAL, hits_ctes, scoring_ctes
from app.data.history_search.rows import SearchRows, hit_of
from app.data.history_search.weights import bm25, weights_ctes
from app.data.history_search.window import RULES, terms_cte, verdicts_ctes, window_ctes
from app.data.session import Session


def statement(b: Bound, *, complete: bool, context: bool, revisions: bool) -> str:
    """The statement's text. `context` and `revisions`: whether those features have any weight
    (a feature without weight is left out, not computed and multiplied by 0)."""
    return f"""
with {allowed_audiences_cte(b.known_allowed if b.has_known_allowed else None)},
{terms_cte(b)},
{weights_ctes(b)},
{window_ctes(b)},
{verdicts_ctes(b, complete=complete)},
lexed as materialized (
    select p.*, {bm25(b, "p.tsv")} as lexical from pool p
),
{best_ctes(b)},
{context_ctes(b, complete=complete) if context else NO_CONTEXT},
{candidates_cte(b)},
{revisions_ctes(b) if revisions else NO_REVISIONS},
{scoring_ctes(b)},
{hits_ctes(b, complete=complete)}
{FINAL}"""


async def search(
    db: Session,
    destination: Destination,
    filters: SearchFilters,
    rank: RankInputs,
    page: PageRequest,
    *,
    lineage_complete: bool = False,
) -> SearchRows:
    """Up to `page.limit` hits of one window in ranking order (after the cursor position, if
    any) with their neighbors, the exclusion counts of the window they were ranked from, where
    the next window starts, and the turn's ledger: one statement."""
    known = db.allowed_audiences(destination.params())
    b = Bound(destination, filters, rank, page, known)
    w = rank.weights
    sql = statement(
        b,
        complete=lineage_complete,
        context=w.follow_up_share > 0 or w.context_share > 0,
        revisions=w.supersedes_share > 0,
    )
    # Planned once per connection: the access path is chosen in SQL (window.py), so the one
    # plan is right for every query. b.values after the text: the text binds what it reads.
    rows = await db.fetch_planned_once(sql, *b.values)
    db.remember_allowed_audiences(destination.params(), rows)
    counts = dict.fromkeys(RULES, 0)
    counts.update(rows[0]["counts"])  # jsonb, decoded by the pool (app.db)
    hits = [hit_of(r) for r in rows if r["id"] is not None]
    neighbors = {r["id"]: neighbors_from(r["neighbors"]) for r in rows if r["id"] is not None}
    head = next((r for r in rows if r["turn_version"] is not None), None)
    return SearchRows(
        hits,
        counts,
        rows[0]["examined"],
        rows[0]["complete"],
        neighbors,
        frozenset(head["evidence"]) if head is not None else frozenset(),
        head["turn_version"] if head is not None else None,
        head["new_weights"] if head is not None else None,
        rows[0]["next_window"],
        rows[0]["rare_floor"],
    )


__all__ = ["Neighbors", "search", "statement"]
