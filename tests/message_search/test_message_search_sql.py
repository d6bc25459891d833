"""app.data.message_search's invariant, checked on the SQL it builds: every filter only
removes rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from app.data.audit import SearchAudit
from app.data.message_search.inputs import (
    After,
    AuthorCondition,
    CandidateQuery,
    ScopeCondition,
)
from app.data.message_search.statement import search_page
from app.data.session import Session


class _Sent(Exception):
    """The page's statement was sent: nothing past it is under test."""


class _Recorder(Session):
    """A Session without a database: it keeps the SQL it is asked to run and answers nothing."""

    def __init__(self) -> None:  # no pool, so no Session.__init__
        self.sql: list[str] = []

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sql.append(sql)
        raise _Sent

    def allowed_audiences(self, destination: object) -> None:
        return None

    def remember_allowed_audiences(self, destination: object, rows: object) -> None:
        pass


async def _page_sql(query: CandidateQuery, after: After | None = None) -> str:
    """The page statement search_page sends for `query`."""
    recorder = _Recorder()
    with pytest.raises(_Sent):
        await search_page(
            recorder,
            query,
            after=after,
            first=20,
            budget=200,
            audit=SearchAudit("message_search", 2, None, "", {}, {}),
        )
    return recorder.sql[-1]


def _scans(sql: str) -> list[str]:
    """The WHERE clause of each scan of the sidecar: the probe, then the rest of the budget."""
    return [
        part.split("order by", 1)[0].strip() for part in sql.split("from search_documents d")[1:]
    ]


async def _candidate_where(
    *,
    scope: ScopeCondition | None = None,
    author: AuthorCondition | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    after: After | None = None,
) -> list[str]:
    query = CandidateQuery(
        (1, "members", 2, [3]), ["acme"], [], scope=scope, author=author, since=since, until=until
    )
    scans = _scans(await _page_sql(query, after))
    assert len(scans) == 2, scans  # one word: no walk of the newest documents
    return scans


def _conjuncts(where: str) -> list[str]:
    """The top-level `and` terms of a WHERE clause."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(where):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and where.startswith(" and ", i):
            terms.append(where[start:i])
            start = i + len(" and ")
    return [*terms, where[start:]]


def _assert_no_top_level_or(extra: str) -> None:
    """Any OR sits inside the conjunct's own parentheses."""
    depth = 0
    for i, ch in enumerate(extra):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        assert not (depth == 0 and extra[i : i + 4] == " or "), extra


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
        {"since": datetime(2026, 3, 2, tzinfo=UTC)},
        {"until": datetime(2026, 3, 2, tzinfo=UTC)},
    ],
)
async def test_every_filter_compiles_to_one_more_and_conjunct(condition: dict[str, Any]) -> None:
    """The invariant of app.data.message_search, checked on the SQL: a filter appends
    `and (...)` to the candidate WHERE clause and changes nothing before it; in the scan of
    the rest of the budget too, which keeps every conjunct of its unfiltered self."""
    base_probe, base_rest = await _candidate_where()
    narrowed_probe, narrowed_rest = await _candidate_where(**condition)
    assert narrowed_probe.startswith(base_probe + " and ")
    extra = narrowed_probe[len(base_probe) :].strip()
    assert extra.startswith("and ")
    _assert_no_top_level_or(extra)
    # The rest starts where the probe's decision says (not at the cursor), and is gated by it:
    # a filter is one more conjunct there, in front of the gate.
    base, narrowed = _conjuncts(base_rest), _conjuncts(narrowed_rest)
    assert base[-1] == narrowed[-1] == "(select go from decided)"
    if "after" in condition:
        assert narrowed == base
    else:
        assert narrowed[: len(base) - 1] == base[:-1]
        for term in narrowed[len(base) - 1 : -1]:
            _assert_no_top_level_or(term)
        assert len(narrowed) > len(base)


async def test_each_time_bound_is_its_own_conjunct_and_both_together_are_two() -> None:
    """since and until narrow independently: with both, the WHERE clause is the base, then the
    since conjunct, then the until conjunct — each exactly as it is alone."""
    since, until = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    base, _ = await _candidate_where()
    only_since, _ = await _candidate_where(since=since)
    both, _ = await _candidate_where(since=since, until=until)
    assert both.startswith(only_since + " and ")
    assert both[len(only_since) :].strip() == "and d.created_at < $8::timestamptz"
    assert only_since[len(base) :].strip() == "and d.created_at >= $7::timestamptz"


async def test_the_document_time_is_checked_against_the_message_row() -> None:
    """Like scope and author, created_at is the sidecar's copy: a document whose time disagrees
    with its message fails closed (the lateral join finds no message row)."""
    sql = await _page_sql(CandidateQuery((1, "members", 2, [3]), ["acme"], []))
    assert "m.created_at = c.created_at" in sql
