"""messageSearch(since:, until:): a half-open range of the message's created_at that only
removes rows, is bound into the cursor, and answers BAD_USER_INPUT (never an internal error)
for a range it cannot use. Personas in tests/personas.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from app.data.readiness import backfill_batch
from tests.message_search_support import SEARCH, global_id, keys, search
from tests.personas import load_personas


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load_personas(db)
    return {who: await issue_token("member", "acme", who) for who in ("alice", "bob", "carol")}


async def _times(db: asyncpg.Connection) -> dict[str, datetime]:
    rows = await db.fetch("select key, created_at from messages")
    return {r["key"]: r["created_at"] for r in rows}


def _iso(t: datetime) -> str:
    return t.isoformat()


async def test_since_is_inclusive_and_until_exclusive(client: Any, tokens: dict[str, str]) -> None:
    # alice reads g1 (10:00), g2 (10:01), t1 (10:02), da1 (12:00), da2 (12:01), ...
    everything = await keys(client, tokens["alice"], "acme")
    assert {"g1", "g2", "t1"} <= set(everything)
    got = await keys(
        client,
        tokens["alice"],
        "acme",
        since="2026-03-02T10:01:00Z",
        until="2026-03-02T10:02:00Z",
    )
    assert got == ["g2"]
    assert await keys(client, tokens["alice"], "acme", until="2026-03-02T10:01:00Z") == ["g1"]


async def test_a_time_with_another_zone_or_none_is_the_same_instant(
    client: Any, tokens: dict[str, str]
) -> None:
    utc = await keys(client, tokens["alice"], "acme", since="2026-03-02T12:00:00Z")
    assert utc and "g1" not in utc
    assert await keys(client, tokens["alice"], "acme", since="2026-03-02T14:00:00+02:00") == utc
    # No zone: UTC, as for historySearch.
    assert await keys(client, tokens["alice"], "acme", since="2026-03-02T12:00:00") == utc


async def test_every_time_bound_only_removes_rows(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    """For each viewer, every since, every until and every since/until pair drawn from the
    messages' own times (and a microsecond either side), alone and with a scope filter: the
    result is exactly the unfiltered result narrowed by the range — never a row more."""
    times = await _times(db)
    cuts = sorted(
        {t + d for t in times.values() for d in (timedelta(0), timedelta(microseconds=1))}
    )
    cuts = [cuts[0] - timedelta(days=1), *cuts[::3], cuts[-1] + timedelta(days=1)]
    general = await global_id(db, "Scope", "general")
    general_keys = {
        r["key"]
        for r in await db.fetch(
            "select m.key from messages m join scopes s on s.id = m.scope_id where s.key = 'general'"
        )
    }
    for viewer in ("alice", "bob", "carol"):
        everything = await keys(client, tokens[viewer], "acme")
        assert everything, f"{viewer} finds nothing: the property would hold vacuously"
        for cut in cuts:
            got = await keys(client, tokens[viewer], "acme", since=_iso(cut))
            assert got == [k for k in everything if times[k] >= cut], (viewer, "since", cut)
            got = await keys(client, tokens[viewer], "acme", until=_iso(cut))
            assert got == [k for k in everything if times[k] < cut], (viewer, "until", cut)
        for lo, hi in zip(cuts, cuts[2:], strict=False):
            got = await keys(client, tokens[viewer], "acme", since=_iso(lo), until=_iso(hi))
            assert got == [k for k in everything if lo <= times[k] < hi], (viewer, lo, hi)
            got = await keys(
                client, tokens[viewer], "acme", since=_iso(lo), until=_iso(hi), scope=general
            )
            assert got == [k for k in everything if lo <= times[k] < hi and k in general_keys], (
                viewer,
                lo,
                hi,
                "general",
            )


@pytest.mark.parametrize(
    ("since", "until"),
    [
        ("2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z"),
        ("2026-03-02T10:00:00Z", "2026-03-02T09:59:59Z"),
        # The same instant in two zones.
        ("2026-03-02T12:00:00+02:00", "2026-03-02T10:00:00Z"),
    ],
)
async def test_since_not_before_until_is_bad_user_input(
    client: Any, tokens: dict[str, str], since: str, until: str
) -> None:
    result = await client.post(
        SEARCH, {"q": "acme", "since": since, "until": until}, token=tokens["alice"]
    )
    assert result.status == 200, result.body
    assert result.codes == ["BAD_USER_INPUT"], result.body
    assert "since must be earlier than until" in result.errors[0]["message"]


@pytest.mark.parametrize(
    "variables",
    [
        # Valid local times whose instant is outside the years 1-9999 in UTC.
        {"since": "0001-01-01T00:00:00+14:00"},
        {"until": "0001-01-01T00:00:00+14:00"},
        {"since": "9999-12-31T23:59:59-14:00"},
        {"until": "9999-12-31T23:59:59-14:00"},
        {"since": "0001-01-01T00:00:00+14:00", "until": "9999-12-31T23:59:59-14:00"},
    ],
)
async def test_times_outside_the_representable_range_are_bad_user_input(
    client: Any, tokens: dict[str, str], variables: dict[str, str]
) -> None:
    result = await client.post(SEARCH, {"q": "acme", **variables}, token=tokens["alice"])
    assert result.codes == ["BAD_USER_INPUT"], result.body
    assert "outside the years 1-9999" in result.errors[0]["message"]


@pytest.mark.parametrize(
    "value", ["yesterday", "2026-13-01T00:00:00Z", "10000-01-01T00:00:00Z", "", "2026-03-02T25:00"]
)
async def test_a_time_that_does_not_parse_is_a_request_error(
    client: Any, tokens: dict[str, str], value: str
) -> None:
    result = await client.post(SEARCH, {"q": "acme", "since": value}, token=tokens["alice"])
    assert result.status == 400, result.body
    assert result.codes == ["BAD_USER_INPUT"]


async def test_the_extremes_of_the_range_work(client: Any, tokens: dict[str, str]) -> None:
    everything = await keys(client, tokens["alice"], "acme")
    lowest, highest = "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"
    assert await keys(client, tokens["alice"], "acme", since=lowest) == everything
    assert await keys(client, tokens["alice"], "acme", until=highest) == everything
    assert await keys(client, tokens["alice"], "acme", since=lowest, until=highest) == everything
    assert await keys(client, tokens["alice"], "acme", since=highest) == []
    assert await keys(client, tokens["alice"], "acme", until=lowest) == []
    # The extremes in other zones that stay within the years 1-9999 in UTC.
    assert await keys(client, tokens["alice"], "acme", since="0001-01-01T00:00:00-14:00") == (
        everything
    )
    assert await keys(client, tokens["alice"], "acme", until="9999-12-31T23:59:59+14:00") == (
        everything
    )


async def test_pages_of_a_time_range_add_up_to_the_unpaged_range(
    client: Any, tokens: dict[str, str]
) -> None:
    bounds = {"since": "2026-03-02T10:01:00Z", "until": "2026-03-02T13:21:00Z"}
    whole = await keys(client, tokens["alice"], "acme", **bounds)
    assert len(whole) > 3
    paged: list[str] = []
    after = None
    while True:
        page = await search(client, tokens["alice"], "acme", first=2, after=after, **bounds)
        paged += [e["node"]["key"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert paged == whole


async def test_a_cursor_is_bound_to_its_time_range(client: Any, tokens: dict[str, str]) -> None:
    since, until = "2026-03-02T10:00:00Z", "2026-03-02T13:30:00Z"
    plain = (await search(client, tokens["alice"], "acme", first=1))["pageInfo"]["endCursor"]
    ranged = await search(client, tokens["alice"], "acme", first=1, since=since, until=until)
    cursor = ranged["pageInfo"]["endCursor"]
    for variables in (
        {},  # no range
        {"since": since},  # part of the range
        {"until": until},
        {"since": "2026-03-02T10:00:01Z", "until": until},  # another range
        {"since": since, "until": "2026-03-02T13:29:59Z"},
    ):
        result = await client.post(
            SEARCH, {"q": "acme", "after": cursor, **variables}, token=tokens["alice"]
        )
        assert result.codes == ["INVALID_CURSOR"], variables
    # A cursor without a range does not continue a ranged search either.
    result = await client.post(
        SEARCH, {"q": "acme", "after": plain, "since": since}, token=tokens["alice"]
    )
    assert result.codes == ["INVALID_CURSOR"]
    # The same instants spelled in another zone are the same range.
    same = await search(
        client,
        tokens["alice"],
        "acme",
        first=1,
        after=cursor,
        since="2026-03-02T12:00:00+02:00",
        until="2026-03-02T15:30:00+02:00",
    )
    assert same["edges"]


async def test_a_range_costs_no_statement_more(client: Any, tokens: dict[str, str]) -> None:
    query = (
        "query($since: DateTime, $until: DateTime) {"
        ' messageSearch(query: "acme", first: 5, since: $since, until: $until)'
        " { edges { node { key } } } }"
    )
    plain = await client.post(query, {}, token=tokens["alice"])
    ranged = await client.post(
        query,
        {"since": "2026-03-02T10:00:00Z", "until": "2026-03-02T13:00:00Z"},
        token=tokens["alice"],
    )
    assert not plain.errors and not ranged.errors, (plain.body, ranged.body)
    assert ranged.statements == plain.statements


async def test_the_range_is_recorded_in_the_audit(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    await keys(client, tokens["alice"], "acme", since="2026-03-02T12:00:00+02:00")
    row = await db.fetchrow("select filters from search_audit")
    assert row is not None
    filters = row["filters"]
    assert filters["since"] == "2026-03-02T10:00:00+00:00"
    assert "until" not in filters


async def test_live_and_backfilled_documents_carry_the_message_time(
    db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    """Every write path copies created_at: the import (the insert trigger) and the backfill of
    a document that went missing; an edit (the update trigger) keeps it."""
    mismatched = (
        "select count(*) from messages m join search_documents d"
        " on d.workspace_id = m.workspace_id and d.message_id = m.id"
        " where d.created_at is distinct from m.created_at"
    )
    assert await db.fetchval(mismatched) == 0
    await db.execute("update messages set body = body || ' edited' where key = 'g1'")
    await db.execute(
        "delete from search_documents d using messages m"
        " where m.workspace_id = d.workspace_id and m.id = d.message_id"
        " and m.key in ('g2', 'da1')"
    )
    workspace = await db.fetchval("select id from workspaces where key = 'acme'")
    assert await backfill_batch(db, workspace, 100) == 2
    assert await db.fetchval(mismatched) == 0
    assert await db.fetchval("select count(*) from search_documents") == await db.fetchval(
        "select count(*) from messages"
    )
    assert datetime(2026, 3, 2, 10, tzinfo=UTC) == (await _times(db))["g1"]
