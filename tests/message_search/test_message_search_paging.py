"""messageSearch cursors and the candidate budget: pages of any size add up to exactly the
unpaged result, invisible matches never hide older visible ones, cursors are bound to their
search."""

from __future__ import annotations

import base64
import json
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.data.eligibility import eligible
from app.data.message_search import scan
from tests.message_search_support import (
    SEARCH,
    author,
    forge_cursor,
    global_id,
    open_cursor,
    search,
    workspace,
)
from tests.personas import load
from tests.rows import one


def _corpus() -> dict[str, Any]:
    """Oldest first: 30 matches ann may read, then 450 in ben's DM she may not, then 20 she
    may read among 60 she may not. Every third message ann may read mentions "odd"; some of
    hers lack evidence; plain chatter that does not match is mixed in."""
    messages: list[tuple[str, str, str, str]] = []

    def visible(i: int) -> None:
        word = " odd" if i % 3 == 0 else ""
        messages.append((f"v{i}", "room", ("ann", "ben", "bot")[i % 3], f"needle {i}{word}"))

    def hidden(i: int) -> None:
        messages.append((f"h{i}", "dm-ben", "ben", f"needle hidden {i} odd"))

    for i in range(30):
        visible(i)
        if i % 5 == 0:
            messages.append((f"c{i}", "room", "ann", "haystack chatter"))
    for i in range(450):
        hidden(i)
    for i in range(80):
        if i % 4 == 0:
            visible(30 + i // 4)
        else:
            hidden(450 + i)
    fixture = workspace(messages)
    for m in fixture["messages"]:
        if m["key"] in ("v7", "v31"):
            m["evidence"] = False
    return fixture


@pytest.fixture
async def ann(db: asyncpg.Connection, issue_token: Any) -> str:
    await load(db, _corpus())
    token: str = await issue_token("member", "lab", "ann")
    return token


async def _oracle(db: asyncpg.Connection, include: list[str], exclude: list[str]) -> list[str]:
    """Every eligible match for ann, straight from SQL with no budget and no pages."""
    ws, ns, ann = one(
        await db.fetchrow(
            "select w.id, w.default_namespace_id, a.id from workspaces w"
            " join actors a on a.workspace_id = w.id and a.key = 'ann' where w.key = 'lab'"
        )
    )
    rows = await db.fetch(
        f"""
        select m.key from search_documents d
        join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id
        where d.workspace_id = $1 and d.tsv @@ recall_search_tsquery($5, $6, false)
          and {eligible("m")}
        order by d.global_seq desc, d.scope_id, d.seq desc, d.message_id
        """,
        ws,
        "members",
        ns,
        [ann],
        include,
        exclude,
    )
    return [r["key"] for r in rows]


async def _all_pages(client: Any, token: str, q: str, sizes: list[int]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    after = None
    while True:
        assert len(pages) < 300, "paging does not terminate"
        page = await search(client, token, q, first=sizes[len(pages) % len(sizes)], after=after)
        pages.append(page)
        if not page["pageInfo"]["hasNextPage"]:
            return pages
        after = page["pageInfo"]["endCursor"]
        assert after is not None


@settings(
    max_examples=10,
    deadline=None,
    # One corpus per test; every example only reads it (and appends audit rows).
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=100), min_size=1, max_size=4),
    query=st.sampled_from(["needle", "needle odd", "needle -odd", "odd"]),
)
async def test_pages_of_any_size_add_up_to_exactly_the_unpaged_result(
    client: Any, db: asyncpg.Connection, ann: str, sizes: list[int], query: str
) -> None:
    words = query.split()
    expected = await _oracle(
        db, [w for w in words if not w.startswith("-")], [w[1:] for w in words if w[0] == "-"]
    )
    pages = await _all_pages(client, ann, query, sizes)
    got = [e["node"]["key"] for p in pages for e in p["edges"]]
    assert got == expected
    assert len(set(got)) == len(got)


@pytest.mark.parametrize("walk", [7, 40, 10_000])
@pytest.mark.parametrize("query", ["needle odd", "odd needle -chatter"])
async def test_walking_the_newest_documents_first_changes_no_page(
    client: Any, db: asyncpg.Connection, ann: str, monkeypatch: Any, walk: int, query: str
) -> None:
    """Queries of several words read the newest `WALK` documents before the planner's scan
    takes over; wherever that boundary falls, the pages are exactly the unpaged result."""
    monkeypatch.setattr(scan, "WALK", walk)
    words = query.split()
    expected = await _oracle(
        db, [w for w in words if not w.startswith("-")], [w[1:] for w in words if w[0] == "-"]
    )
    for sizes in ([3], [20], [7, 50]):
        pages = await _all_pages(client, ann, query, sizes)
        assert [e["node"]["key"] for p in pages for e in p["edges"]] == expected


# The token with its reader and readiness; the scan, the page and the page's messages with their
# highlights in one statement; the audit row (app.data.message_search.statement.search_page). No
# BEGIN or COMMIT.
STATEMENTS_PER_SEARCH = 3


@pytest.mark.parametrize("query", ["needle", "needle odd", "odd needle -chatter"])
async def test_every_page_costs_the_same_three_statements(
    client: Any, ann: str, query: str
) -> None:
    """Whether the probe filled the page, the scan read on to the budget (the 450 invisible
    matches), or the newest documents were walked first (several words), and whatever the
    page size: two statements, BEGIN and COMMIT included, had there been any."""
    seen = set()
    for first in (1, 3, 20, 100):
        after = None
        while True:
            result = await client.post(
                SEARCH, {"q": query, "first": first, "after": after}, token=ann
            )
            assert not result.errors, result.body
            assert result.statements == STATEMENTS_PER_SEARCH, (query, first, after)
            page = result.data["messageSearch"]
            seen.add((page["candidateBudgetExhausted"], bool(page["edges"])))
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
    if query == "needle":
        # The corpus makes the budget run out, with and without hits on the page.
        assert (True, False) in seen and (False, True) in seen


async def test_budget_exhaustion_continues_to_older_visible_matches(
    client: Any, db: asyncpg.Connection, ann: str
) -> None:
    pages = await _all_pages(client, ann, "needle", [20])
    shape = [
        (len(p["edges"]), p["candidateBudgetExhausted"], p["pageInfo"]["hasNextPage"])
        for p in pages
    ]
    # 20 visible among the newest 80, then 200 of the 450 invisible ones fill the budget; the
    # next page is all invisible (empty, yet not the end); then the 29 older visible ones.
    assert shape == [(19, True, True), (0, True, True), (20, False, True), (9, False, False)]
    assert [e["node"]["key"] for p in pages for e in p["edges"]][-1] == "v0"
    assert await _oracle(db, ["needle"], []) == [
        e["node"]["key"] for p in pages for e in p["edges"]
    ]


async def test_a_continuation_past_an_invisible_match_reveals_nothing_of_it(
    client: Any, ann: str, db: asyncpg.Connection
) -> None:
    page = await search(client, ann, "needle", first=20)
    assert page["candidateBudgetExhausted"]
    cursor = page["pageInfo"]["endCursor"]
    # Sealed: the client reads nothing of it (app.message_search.opaque)...
    raw = base64.urlsafe_b64decode(cursor[3:] + "=" * (-len(cursor[3:]) % 4))
    with pytest.raises(ValueError):
        json.loads(raw)
    # ...and even opened with the server's key it holds no more than the invisible match's
    # global_seq.
    payload = await open_cursor(db, cursor, "lab", "ann")
    global_seq, *rest = payload["p"]
    assert isinstance(global_seq, int) and rest == [None, None, None]


async def test_page_size_may_change_between_pages(client: Any, ann: str) -> None:
    first = await search(client, ann, "needle", first=3)
    second = await search(client, ann, "needle", first=5, after=first["pageInfo"]["endCursor"])
    both = [e["node"]["key"] for e in first["edges"] + second["edges"]]
    all_at_once = await search(client, ann, "needle", first=8)
    assert both == [e["node"]["key"] for e in all_at_once["edges"]]
    # The edge cursor of a hit continues right after it.
    third = await search(client, ann, "needle", first=2, after=first["edges"][1]["cursor"])
    assert [e["node"]["key"] for e in third["edges"]] == both[2:4]


async def test_a_cursor_survives_respelling_of_the_same_query(client: Any, ann: str) -> None:
    first = await search(client, ann, "needle  odd", first=2)
    again = await search(client, ann, "NEEDLE odd", first=2, after=first["pageInfo"]["endCursor"])
    assert again["edges"]


async def test_a_cursor_used_with_another_query_scope_or_filter_is_invalid(
    client: Any, db: asyncpg.Connection, ann: str
) -> None:
    cursor = (await search(client, ann, "needle", first=2))["pageInfo"]["endCursor"]
    room = await global_id(db, "Scope", "room")
    ben = await global_id(db, "Member", "ben")
    for variables in (
        {"q": "needle odd"},
        {"q": "needle", "scope": room},
        {"q": "needle", "author": author("MEMBER", ben)},
    ):
        result = await client.post(SEARCH, {**variables, "after": cursor}, token=ann)
        assert result.codes == ["INVALID_CURSOR"], variables
    # A filtered search's cursor is just as bound to its filter.
    filtered = await search(client, ann, "needle", first=1, scope=room)
    result = await client.post(
        SEARCH, {"q": "needle", "after": filtered["pageInfo"]["endCursor"]}, token=ann
    )
    assert result.codes == ["INVALID_CURSOR"]


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        "",
        base64.urlsafe_b64encode(b"{}").decode(),
        base64.urlsafe_b64encode(b'{"v":1,"p":[1,2,3],"b":"x"}').decode(),
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        "A" * 2000,
    ],
)
async def test_garbage_cursors_are_invalid(client: Any, ann: str, cursor: str) -> None:
    result = await client.post(SEARCH, {"q": "needle", "after": cursor}, token=ann)
    assert result.codes == ["INVALID_CURSOR"], result.body


async def test_a_tampered_position_is_still_bound_and_only_moves_the_start(
    client: Any, ann: str, db: asyncpg.Connection
) -> None:
    cursor = (await search(client, ann, "needle", first=1))["pageInfo"]["endCursor"]
    # A client cannot tamper with a sealed cursor at all; one forged with the server's own key
    # still only moves where the same authorized search starts.
    payload = await open_cursor(db, cursor, "lab", "ann")
    payload["p"] = [10**12, None, None, None]  # before everything: the first page again
    forged = await forge_cursor(db, payload, "lab", "ann")
    page = await search(client, ann, "needle", first=100, after=forged)
    assert [e["node"]["key"] for e in page["edges"]][:2] == ["v49", "v48"]
    payload["p"] = [1, "x", None, None]
    forged = await forge_cursor(db, payload, "lab", "ann")
    result = await client.post(SEARCH, {"q": "needle", "after": forged}, token=ann)
    assert result.codes == ["INVALID_CURSOR"]
    plain = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
    result = await client.post(SEARCH, {"q": "needle", "after": plain}, token=ann)
    assert result.codes == ["INVALID_CURSOR"]
