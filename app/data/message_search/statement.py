"""messageSearch's page statement, assembled from its named fragments, and search_page, which
runs it and then writes the page's audit row.

The audit row is its own INSERT, written before the page is returned: a failed write fails the
search and nothing is shown. Inside the page's statement (a data-modifying CTE) it would save a
round trip on plain PostgreSQL, but on Citus an INSERT ... SELECT there splits the statement
into subplans, each a round trip to the shard (17 for a page: 32 ms instead of 13 at 100k
messages; docs/scale.md); the page's statement is one router query instead.
"""

from __future__ import annotations

from app.data.audit import SearchAudit, write_audit
from app.data.eligibility import allowed_audiences_cte
from app.data.message_search.conditions import filters_of
from app.data.message_search.hydrate import hydrated_ctes
from app.data.message_search.inputs import After, CandidateQuery
from app.data.message_search.page import FINAL, bind_page, page_ctes, probe_ctes
from app.data.message_search.rows import PageRows, exclusions_of, page_rows_of, selected_of
from app.data.message_search.scan import probe_scan, rest_scan, several_lexemes
from app.data.message_search.words import words
from app.data.params import Params
from app.data.session import Session


def statement(
    q: CandidateQuery,
    p: Params,
    *,
    after: After | None,
    first: int,
    budget: int,
    known_allowed: list[int] | None,
) -> str:
    """The page statement's text; its values are bound to `p` (which starts with the
    destination's $1-$4) in the order the fragments are built."""
    several = several_lexemes(q.include)
    w = words(q.include, q.exclude, p, several=several)
    filters = filters_of(q, p)
    b = bind_page(p, after, first, budget)
    probe = probe_scan(p, w, filters, after, b.probe, several=several)
    rest = rest_scan(w, filters, b.budget, several=several)
    # The probe's own gate (the same text, so the same statement constant).
    walked_newest = f"not {w.gin(b.probe)}" if several else None
    allowed = allowed_audiences_cte(p.add(known_allowed) if known_allowed is not None else None)
    hydrated = hydrated_ctes(p, q.include)
    complete = q.lineage_complete
    return f"""
        with {allowed},
        {w.cte},
        {probe_ctes(probe, b, walked_newest=walked_newest, complete=complete)},
        {page_ctes(rest, b, complete=complete)},
        {hydrated}{FINAL}"""


def planned_once(q: CandidateQuery) -> bool:
    """Whether the statement runs planned once per connection (its access path chosen in SQL,
    app.data.message_search.words) rather than planned with its values.

    Not when a from: or in: names several ids: such a filter is read either by walking the
    recency index or through each id's own index range and a sort of all their documents,
    and which is cheaper depends on how many documents the ids hold, which only a plan made
    with the values sees (two busy channels and a common word: 253 ms planned once, 10 ms
    planned with the values, at 1M messages). A negated set only removes rows: no index
    reads it."""
    for a in q.authors:
        if not a.negated and len(a.actor_ids) > 1:
            return False
    return all(s.negated or len(s.root_ids) + len(s.thread_ids) <= 1 for s in q.scopes)


async def search_page(
    db: Session,
    q: CandidateQuery,
    *,
    after: After | None,
    first: int,
    budget: int,
    audit: SearchAudit,
) -> PageRows:
    """A page of `first`: the bounded, authorized scan, the page, its messages (with author and
    scope) and their highlights in one statement; then its audit row.

    The candidates, their order and their verdicts are exactly those of one scan of `budget`
    in search order, cut where the page is decided (app.message_search.paging.page_of, which this
    statement computes: the first `first` eligible candidates; the candidates before a further
    eligible one are the examined ones, whose exclusions the audit counts).

    The audit row (what the page selected, what its examined candidates were excluded by) is
    written next; if that fails, the search fails and nothing is shown. The page's messages are
    read from the rows their verdicts were decided on: one statement sees one snapshot, so the
    row shown is the row found eligible (an authorization "again" in a later statement, as the
    loaders do, is for rows read in another snapshot; here it would only cost planning,
    ~0.5 ms)."""
    destination = q.destination
    p = Params(destination)
    sql = statement(
        q,
        p,
        after=after,
        first=first,
        budget=budget,
        known_allowed=db.allowed_audiences(destination),
    )
    run = db.fetch_planned_once if planned_once(q) else db.fetch
    rows = await run(sql, *p.values)
    db.remember_allowed_audiences(destination, rows)
    exclusions = exclusions_of(rows)
    await write_audit(db, destination[0], audit, selected=selected_of(rows), exclusions=exclusions)
    return page_rows_of(rows, exclusions)
