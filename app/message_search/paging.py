"""Turning a bounded candidate scan into one page of messageSearch.

The scan hands back up to `budget` candidates in search order, each with its verdict. A page
takes eligible candidates until it has `first` of them; one more eligible candidate proves there
is a next page. When the scan ran out of budget first, the page ends early and says so
(candidateBudgetExhausted), with a continuation position just after the last candidate examined:
invisible matches never hide older visible ones, and an empty page with continuation is not the
end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.data.message_search.rows import Candidate, PageRows
from app.message_search.cursor import Position

EXCLUSION_RULES = ("no_evidence", "audience", "lineage")


@dataclass(frozen=True, slots=True)
class Page:
    hits: list[Candidate]
    has_next_page: bool
    budget_exhausted: bool
    # Where the next page starts (endCursor); None at the end of an empty result.
    end: Position | None
    # Candidates examined for this page, by the first rule that removed them.
    exclusions: dict[str, int] = field(default_factory=dict)


def budget_for(first: int) -> int:
    """Candidates examined per request: enough that a page is rarely cut short, bounded so a
    request never scans without limit."""
    return max(200, 10 * first)


def position_of(c: Candidate) -> Position:
    return Position(c.global_seq, c.scope_id, c.seq, c.message_id)


def page_of(candidates: Sequence[Candidate], first: int, budget: int) -> Page:
    hits: list[Candidate] = []
    exclusions = dict.fromkeys(EXCLUSION_RULES, 0)
    for c in candidates:
        if c.excluded_by is None:
            if len(hits) == first:
                # A further eligible match: the page is full and more exist.
                return Page(hits, True, False, position_of(hits[-1]), exclusions)
            hits.append(c)
        else:
            exclusions[c.excluded_by] = exclusions.get(c.excluded_by, 0) + 1
    if len(candidates) >= budget:
        last = candidates[-1]
        # Past an invisible candidate only its global_seq is kept (app.message_search.cursor explains
        # why that is the same position and why the rest must not be revealed).
        end = position_of(last) if last.excluded_by is None else Position(last.global_seq)
        return Page(hits, True, True, end, exclusions)
    return Page(hits, False, False, position_of(hits[-1]) if hits else None, exclusions)


def page_decided(rows: PageRows, budget: int) -> Page:
    """The Page of a page decided in SQL (app.data.message_search.statement.search_page, which
    computes page_of's cut in the statement): the same hits, flags, end and exclusions page_of
    gives for the candidates that statement read."""
    hits = [h.candidate for h in rows.hits]
    exclusions = {rule: rows.exclusions.get(rule, 0) for rule in EXCLUSION_RULES}
    if rows.cut:
        return Page(hits, True, False, position_of(hits[-1]), exclusions)
    if rows.examined >= budget and rows.last is not None:
        last = rows.last
        end = position_of(last) if last.excluded_by is None else Position(last.global_seq)
        return Page(hits, True, True, end, exclusions)
    return Page(hits, False, False, position_of(hits[-1]) if hits else None, exclusions)
