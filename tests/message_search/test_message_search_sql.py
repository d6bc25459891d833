"""app.data.message_search's invariant, checked on the SQL it builds: every filter only
removes rows."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import asyncpg
import pytest

from app.data.audit import SearchAudit
from app.data.message_search.inputs import (
    After,
    AuthorCondition,
    AuthorSet,
    CandidateQuery,
    ScopeCondition,
    ScopeSet,
)
from app.data.message_search.statement import search_page
from app.data.session import Session


class _Sent(Exception):
    """The page's statement was sent: nothing past it is under test."""


class _Recorder(Session):
    """A Session without a database: it keeps the SQL it is asked to run and answers nothing."""

    def __init__(self) -> None:  # no pool, so no Session.__init__
        self.sql: list[str] = []
        self.planned_once: list[bool] = []

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sql.append(sql)
        self.planned_once.append(False)
        raise _Sent

    async def fetch_planned_once(self, sql: str, *args: object) -> list[asyncpg.Record]:
        self.sql.append(sql)
        self.planned_once.append(True)
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


def _scans(sql: str) -> list[list[str]]:
    """The conjuncts of each scan of the sidecar, placeholders unnumbered (a filter's values
    renumber the ones bound after them): for one word, the probe walking the recency index,
    the probe through the text index (its subquery's conjuncts, then its own), then the rest's
    two."""
    scans = []
    for part in sql.split("from search_documents d where ")[1:]:
        inner, _, outer = part.split(" order by ", 1)[0].partition(" offset 0) d where ")
        conjuncts = _conjuncts(inner) + (_conjuncts(outer) if outer else [])
        scans.append([re.sub(r"\$\d+", "$", c) for c in conjuncts if c != "true"])
    return scans


async def _candidate_where(
    *,
    scope: ScopeCondition | None = None,
    author: AuthorCondition | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    after: After | None = None,
) -> list[list[str]]:
    query = CandidateQuery(
        (1, "members", 2, [3]), ["acme"], [], scope=scope, author=author, since=since, until=until
    )
    scans = _scans(await _page_sql(query, after))
    assert len(scans) == 4, scans  # one word: no walk of the newest documents
    return scans


def _added(base: list[str], narrowed: list[str]) -> list[str]:
    """The conjuncts `narrowed` adds to `base`, which it must keep, each one, in order."""
    kept = [c for c in narrowed if c in base]
    assert kept == base, (base, narrowed)
    return [c for c in narrowed if c not in base]


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
    """The invariant of app.data.message_search, checked on the SQL: a filter adds `and`
    conjuncts to every scan of the sidecar (each path of the probe, and of the rest of the
    budget) and keeps every conjunct of its unfiltered self."""
    base = await _candidate_where()
    narrowed = await _candidate_where(**condition)
    for i, (b, n) in enumerate(zip(base, narrowed, strict=True)):
        added = _added(b, n)
        for term in added:
            _assert_no_top_level_or(term)
        if i >= 2:
            # The rest starts where the probe's decision says (not at the cursor), and is
            # gated by it.
            assert "(select go from decided)" in n
            if "after" in condition:
                assert added == []
                continue
        assert added, (i, b, n)


async def test_each_time_bound_is_its_own_conjunct_and_both_together_are_two() -> None:
    """since and until narrow independently: with both, every scan is the base, the since
    conjunct and the until conjunct — each exactly as it is alone."""
    since, until = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 2, tzinfo=UTC)
    base = await _candidate_where()
    only_since = await _candidate_where(since=since)
    both = await _candidate_where(since=since, until=until)
    for b, s, t in zip(base, only_since, both, strict=True):
        assert _added(b, s) == ["d.created_at >= $::timestamptz"]
        assert _added(s, t) == ["d.created_at < $::timestamptz"]


async def test_the_document_time_is_checked_against_the_message_row() -> None:
    """Like scope and author, created_at is the sidecar's copy: a document whose time disagrees
    with its message fails closed (the lateral join finds no message row)."""
    sql = await _page_sql(CandidateQuery((1, "members", 2, [3]), ["acme"], []))
    assert "m.created_at = c.created_at" in sql


@pytest.mark.parametrize(
    ("authors", "scopes", "once"),
    [
        ((), (), True),
        ((AuthorSet((7,)),), (ScopeSet((8,)),), True),
        ((AuthorSet((7, 9), negated=True),), (ScopeSet((8, 10), negated=True),), True),
        ((AuthorSet((7, 9)),), (), False),
        ((), (ScopeSet((8, 10)),), False),
        ((), (ScopeSet((8,), (11,)),), False),
    ],
)
async def test_a_filter_of_several_ids_is_planned_with_its_values(
    authors: tuple[AuthorSet, ...], scopes: tuple[ScopeSet, ...], once: bool
) -> None:
    """The page statement is planned once unless a positive from: or in: names several ids
    (app.data.message_search.statement.planned_once)."""
    recorder = _Recorder()
    query = CandidateQuery((1, "members", 2, [3]), ["acme"], [], authors=authors, scopes=scopes)
    with pytest.raises(_Sent):
        await search_page(
            recorder,
            query,
            after=None,
            first=20,
            budget=200,
            audit=SearchAudit("message_search", 2, None, "", {}, {}),
        )
    assert recorder.planned_once == [once]
