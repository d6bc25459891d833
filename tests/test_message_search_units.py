"""Pure parts of messageSearch: highlight parsing, cursors, and turning candidates into a page."""

from __future__ import annotations

import pytest

from app.data.message_search import (
    After,
    AuthorCondition,
    Candidate,
    CandidateQuery,
    ScopeCondition,
    scan_candidates,
)
from app.errors import InvalidCursor
from app.search.cursor import Position, binding, decode_cursor, encode_cursor
from app.search.highlights import cjk_ranges, highlight_ranges, marked_ranges, merge, utf16_offsets
from app.search.paging import page_of

S, E = "\ue000", "\ue001"


def test_utf16_offsets_count_astral_characters_twice() -> None:
    assert utf16_offsets("a😀b") == [0, 1, 3, 4]


def test_marked_ranges_are_utf16_offsets_into_the_body() -> None:
    body = "😀 deploy now"
    assert marked_ranges(body, f"😀 {S}deploy{E} now") == [(3, 9)]
    assert marked_ranges(body, None) == []
    # A marked copy that is not the body plus marks is not trusted.
    assert marked_ranges(body, f"😀 {S}deploy{E} later") == []


def test_bodies_with_marker_characters_keep_their_offsets() -> None:
    body = f"a{S}b deploy"
    # The database copy replaced the body's own marker with U+FFFD before marking.
    assert marked_ranges(body, f"a\ufffdb {S}deploy{E}") == [(4, 10)]


def test_cjk_ranges_find_every_occurrence_of_every_run() -> None:
    body = "🎉東京都と東京"
    assert sorted(cjk_ranges(body, ["東京"])) == [(2, 4), (6, 8)]
    assert cjk_ranges(body, ["tokyo"]) == []


def test_merge_sorts_and_joins_overlapping_or_touching_ranges() -> None:
    assert merge([(5, 7), (0, 2), (1, 3), (7, 9), (11, 12)]) == [(0, 3), (5, 9), (11, 12)]


def test_highlight_ranges_combine_both_sources() -> None:
    body = "deploy 東京 today"
    assert highlight_ranges(body, f"{S}deploy{E} 東京 today", ["deploy", "東京"]) == [
        (0, 6),
        (7, 9),
    ]


def test_cursor_round_trip_and_binding() -> None:
    bound = binding("acme", {"scope": None, "author": None})
    for position in (Position(5, 2, 3, 4), Position(5)):
        assert decode_cursor(encode_cursor(position, bound), bound) == position
    other = binding("acme", {"scope": {"type": "Scope", "id": 1}, "author": None})
    with pytest.raises(InvalidCursor):
        decode_cursor(encode_cursor(Position(5), bound), other)


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


class _Recorder:
    """Stands in for a Session and keeps the SQL it is asked to run."""

    def __init__(self) -> None:
        self.sql: list[str] = []

    async def execute(self, sql: str, *args: object) -> str:
        self.sql.append(sql)
        return ""

    async def fetch(self, sql: str, *args: object) -> list[object]:
        self.sql.append(sql)
        return []

    def allowed_audiences(self, destination: object) -> None:
        return None

    def remember_allowed_audiences(self, destination: object, rows: object) -> None:
        pass


async def _candidate_where(**conditions: object) -> str:
    recorder = _Recorder()
    query = CandidateQuery(
        (1, "members", 2, [3]),
        ["acme"],
        [],
        scope=conditions.get("scope"),  # type: ignore[arg-type]
        author=conditions.get("author"),  # type: ignore[arg-type]
    )
    await scan_candidates(
        recorder,  # type: ignore[arg-type]
        query,
        after=conditions.get("after"),  # type: ignore[arg-type]
        budget=200,
    )
    search_sql = recorder.sql[-1]
    return search_sql.split("from search_documents d", 1)[1].split("order by", 1)[0].strip()


@pytest.mark.parametrize(
    "condition",
    [
        {"scope": ScopeCondition(7)},
        {"scope": ScopeCondition(None)},
        {"author": AuthorCondition("member", 4)},
        {"author": AuthorCondition("agent", 5)},
        {"author": AuthorCondition("member_agents", 4)},
        {"after": After(100, 7, 3, 9)},
        {"after": After(100, None, None, None)},
    ],
)
async def test_every_filter_compiles_to_one_more_and_conjunct(condition: dict[str, object]) -> None:
    """The invariant of app.data.message_search, checked on the SQL: a filter appends
    `and (...)` to the candidate WHERE clause and changes nothing before it."""
    base = await _candidate_where()
    narrowed = await _candidate_where(**condition)
    assert narrowed.startswith(base + " and ")
    extra = narrowed[len(base) :].strip()
    assert extra.startswith("and ")
    # No top-level OR: any OR sits inside the conjunct's own parentheses.
    depth = 0
    for i, ch in enumerate(extra):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        assert not (depth == 0 and extra[i : i + 4] == " or "), extra
