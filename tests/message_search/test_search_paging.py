"""app.message_search.paging: turning a bounded candidate scan into one page."""

from __future__ import annotations

from app.data.message_search.rows import Candidate
from app.message_search.cursor import Position
from app.message_search.paging import page_of


def _c(n: int, excluded_by: str | None = None) -> Candidate:
    return Candidate(n, 1000 - n, 1, 1000 - n, excluded_by)


def test_a_full_page_ends_at_its_last_hit() -> None:
    page = page_of([_c(1), _c(2, "audience"), _c(3), _c(4)], first=2, budget=200)
    assert [h.message_id for h in page.hits] == [1, 3]
    assert page.has_next_page and not page.budget_exhausted
    assert page.end == Position(997, 1, 997, 3)
    assert page.exclusions == {"no_evidence": 0, "audience": 1, "lineage": 0}


def test_an_exhausted_budget_continues_after_the_last_candidate_without_naming_it() -> None:
    page = page_of([_c(1), _c(2, "lineage"), _c(3, "audience")], first=5, budget=3)
    assert [h.message_id for h in page.hits] == [1]
    assert page.has_next_page and page.budget_exhausted
    assert page.end == Position(997)


def test_the_last_page_has_no_next_page() -> None:
    page = page_of([_c(1), _c(2, "no_evidence")], first=5, budget=200)
    assert not page.has_next_page and not page.budget_exhausted
    assert page.end == Position(999, 1, 999, 1)
    assert page_of([], first=5, budget=200).end is None
