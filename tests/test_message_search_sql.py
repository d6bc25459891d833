"""app.data.message_search's invariant, checked on the SQL it builds: every filter only
removes rows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from app.data.message_search import (
    After,
    AuthorCondition,
    CandidateQuery,
    ScopeCondition,
    scan_candidates,
)
from app.data.session import Session


class _Recorder(Session):
    """A Session without a database: it keeps the SQL it is asked to run and answers nothing."""

    def __init__(self) -> None:  # no pool, so no Session.__init__
        self.sql: list[str] = []

    async def execute(self, sql: str, *args: object) -> str:
        self.sql.append(sql)
        return ""

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sql.append(sql)
        return []

    def allowed_audiences(self, destination: object) -> None:
        return None

    def remember_allowed_audiences(self, destination: object, rows: object) -> None:
        pass


async def _candidate_where(
    *,
    scope: ScopeCondition | None = None,
    author: AuthorCondition | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    after: After | None = None,
) -> str:
    recorder = _Recorder()
    query = CandidateQuery(
        (1, "members", 2, [3]), ["acme"], [], scope=scope, author=author, since=since, until=until
    )
    await scan_candidates(recorder, query, after=after, budget=200)
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
        {"since": datetime(2026, 3, 2, tzinfo=UTC)},
        {"until": datetime(2026, 3, 2, tzinfo=UTC)},
    ],
)
async def test_every_filter_compiles_to_one_more_and_conjunct(condition: dict[str, Any]) -> None:
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


async def test_each_time_bound_is_its_own_conjunct_and_both_together_are_two() -> None:
    """since and until narrow independently: with both, the WHERE clause is the base, then the
    since conjunct, then the until conjunct — each exactly as it is alone."""
    since, until = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    base = await _candidate_where()
    only_since = await _candidate_where(since=since)
    both = await _candidate_where(since=since, until=until)
    assert both.startswith(only_since + " and ")
    assert both[len(only_since) :].strip() == "and d.created_at < $8::timestamptz"
    assert only_since[len(base) :].strip() == "and d.created_at >= $7::timestamptz"


async def test_the_document_time_is_checked_against_the_message_row() -> None:
    """Like scope and author, created_at is the sidecar's copy: a document whose time disagrees
    with its message fails closed (the lateral join finds no message row)."""
    recorder = _Recorder()
    await scan_candidates(
        recorder,
        CandidateQuery((1, "members", 2, [3]), ["acme"], []),
        after=None,
        budget=200,
    )
    assert "m.created_at = c.created_at" in recorder.sql[-1]
