"""historySearch: every eligible match is reachable, and each hit reads as a whole exchange.

The examined window (the newest matches and the rarest words' matches, app.history_search.ranking) is a
cost bound, not the end of the results: a turn that follows `endCursor` reaches every eligible
match, older than the window too, exactly once, and one that keeps paging fills its evidence
budget (BUDGET_EXHAUSTED) with a reply that is still delivered. A hit carries its nearest
eligible messages on either side, in conversation order; a message already shown on the page
(a hit, or a higher hit's neighbor) is not shown again.

Which messages match and which are eligible is decided here from the fixture, independently of
the index and the eligibility SQL.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from app.history_search.ledger import CEILING
from tests.client import GraphQLClient
from tests.history_support import REPLY, search, start_turn
from tests.personas import load

MAX_PAGES = 200


def _channel(
    count: int, body: Any, *, hidden: frozenset[int] | set[int] = frozenset(), elsewhere: int = 0
) -> dict[str, Any]:
    """A public channel `room` with `count` messages (`body(i)` says what message i says),
    a minute apart; the ones in `hidden` have no source evidence (eligible nowhere). And
    `elsewhere` messages saying `body(0)` in a private channel the agent is not in: they make
    the words common in the workspace (so not every match of them is examined at once), and
    are never shown."""
    start = datetime(2026, 4, 1, tzinfo=UTC)
    fixture: dict[str, Any] = {
        "workspace": {"key": "reach", "name": "Reach"},
        "namespace": "slack:reach",
        "members": [{"key": "ana", "name": "Ana"}, {"key": "ben", "name": "Ben"}],
        "agents": [{"key": "bot", "name": "Bot", "owner": "ana"}],
        "scopes": [
            {
                "key": "room",
                "kind": "channel",
                "visibility": "public",
                "name": "room",
                "members": ["ana", "ben", "bot"],
            },
            {"key": "dm", "kind": "dm", "members": ["ana", "bot"]},
        ],
        "memories": [],
        "messages": [
            {
                "key": f"n{i}",
                "scope": "room",
                "author": "ana" if i % 2 else "ben",
                "at": (start + timedelta(minutes=i)).isoformat().replace("+00:00", "Z"),
                "body": body(i),
                **({"evidence": False} if i in hidden else {}),
            }
            for i in range(count)
        ],
    }
    fixture["scopes"].append(
        {"key": "other", "kind": "channel", "visibility": "private", "name": "other",
         "members": ["ana", "ben"]}
    )  # fmt: skip
    fixture["messages"] += [
        {"key": f"o{i}", "scope": "other", "author": "ben", "body": body(0),
         "at": (start - timedelta(minutes=i + 1)).isoformat().replace("+00:00", "Z")}
        for i in range(elsewhere)
    ]  # fmt: skip
    return fixture


async def _turn(client: GraphQLClient, db: asyncpg.Connection, issue_token: Any) -> str:
    """A turn of `bot` in its DM with ana (the public room is in its perspective)."""
    return await start_turn(
        client, db, issue_token, workspace="reach", agent="bot", scope="dm", requester="ana"
    )


def _page_keys(page: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for edge in page["edges"]:
        node = edge["node"]
        keys += [m["key"] for m in node["before"]] + [node["message"]["key"]]
        keys += [m["key"] for m in node["after"]]
    return keys


async def _pages(client: GraphQLClient, token: str, query: str, first: int) -> list[dict[str, Any]]:
    """Every page of the query, following endCursor until there is no next page or the
    turn's budget is spent."""
    pages: list[dict[str, Any]] = []
    after = None
    for _ in range(MAX_PAGES):
        page = await search(client, token, query, first=first, after=after)
        pages.append(page)
        if page["status"] == "BUDGET_EXHAUSTED" or not page["pageInfo"]["hasNextPage"]:
            return pages
        assert page["pageInfo"]["endCursor"], "a next page needs a cursor"
        after = page["pageInfo"]["endCursor"]
    raise AssertionError("paging did not end")


async def test_every_eligible_match_is_reached_past_the_window_exactly_once(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """125 matches, every third message, each between two lines of chatter (so no hit's
    neighbors reach the next match), every eleventh match hidden: more matches than the window
    examines at once. Paging to the end shows every eligible match, never a hidden message, and
    each message as a hit at most once."""
    count = 375
    matches = set(range(0, count, 3))
    hidden = {i for n, i in enumerate(sorted(matches)) if n % 11 == 5}

    def body(i: int) -> str:
        return f"budgetword capacity note {i}" if i in matches else f"chatter line {i}"

    await load(db, _channel(count, body, hidden=hidden, elsewhere=400))
    token = await _turn(client, db, issue_token)
    pages = await _pages(client, token, "budgetword capacity", first=20)
    assert pages[-1]["status"] == "OK"
    assert not pages[-1]["pageInfo"]["hasNextPage"]
    hits = [e["node"]["message"]["key"] for p in pages for e in p["edges"]]
    assert len(hits) == len(set(hits)), "a match was a hit twice"
    reached = {key for p in pages for key in _page_keys(p)}
    assert not reached & {f"n{i}" for i in hidden}
    assert all(key.startswith("n") for key in reached)
    assert {f"n{i}" for i in matches - hidden} <= set(hits)


async def test_a_turn_that_keeps_paging_fills_its_budget_and_still_replies(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """450 eligible matches of two common words: paging with first 20 reaches the evidence
    ceiling (BUDGET_EXHAUSTED), having shown the newest matches without a gap, and the reply
    built on all of it is delivered."""
    await load(db, _channel(450, lambda i: f"budgetword capacity planning item {i}", elsewhere=50))
    token = await _turn(client, db, issue_token)
    pages = await _pages(client, token, "budgetword capacity", first=20)
    assert pages[-1]["status"] == "BUDGET_EXHAUSTED", [len(p["edges"]) for p in pages]
    evidence = await db.fetchval("select count(*) from turn_evidence")
    assert evidence == CEILING
    reached = {key for p in pages for key in _page_keys(p)}
    assert len(reached) == CEILING
    hits = [e["node"]["message"]["key"] for p in pages for e in p["edges"]]
    assert len(hits) == len(set(hits))
    reply = await client.gql(REPLY, {"body": "summary of the capacity items"}, token=token)
    assert reply["postReply"]["delivered"] is True, reply


# ----------------------------------------------------------------------------------------------
# Each hit reads as a whole exchange.

EACH = 2


def _nearest(order: list[int], eligible: set[int], at: int) -> tuple[list[int], list[int]]:
    """The nearest EACH eligible messages before and after position `at` of `order`, in
    conversation order."""
    i = order.index(at)
    before = [m for m in reversed(order[:i]) if m in eligible][:EACH]
    after = [m for m in order[i + 1 :] if m in eligible][:EACH]
    return list(reversed(before)), after


async def test_a_hit_carries_its_nearest_eligible_neighbors_reported_case(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """n0…n5, n3 deleted, only n2 holds the word: n2 reads with n0, n1 before it and n4, n5
    after it, and none of them is shown again as a hit of its own."""
    from app.data.tokens import issue_connector_token
    from tests.changes_support import Connector, delete

    # Every line shares a word with the hit, so each is also context around it.
    bodies = ["sure thanks deploy", "ok later deploy", "neighborhit in the deploy",
              "done noted deploy", "agreed nice deploy", "fine then deploy"]  # fmt: skip
    await load(db, _channel(6, lambda i: bodies[i]))
    connector = Connector(client, await issue_connector_token(db, "reach"))
    await connector.apply(delete("n3"))
    token = await _turn(client, db, issue_token)
    page = await search(client, token, "neighborhit", first=10)
    nodes = [e["node"] for e in page["edges"]]
    assert nodes[0]["message"]["key"] == "n2"
    assert [m["key"] for m in nodes[0]["before"]] == ["n0", "n1"]
    assert [m["key"] for m in nodes[0]["after"]] == ["n4", "n5"]
    keys = _page_keys(page)
    assert len(keys) == len(set(keys)), keys


@pytest.mark.parametrize("seed", [11, 12, 13])
async def test_each_hit_reads_with_its_nearest_eligible_messages_in_order(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, seed: int
) -> None:
    """Random conversations with hidden rows (no evidence) and deleted ones: each hit's
    `before`/`after` are its nearest eligible messages in conversation order — cut short only
    where the page already shows the next one or shows it as a hit of its own, never skipping
    past it — and no message appears twice on a page."""
    from app.data.tokens import issue_connector_token
    from tests.changes_support import Connector, delete

    rng = random.Random(seed)
    count = 40
    words = ["amber", "cobalt", "harbor"]
    filler = ["ok", "sure", "thanks", "later", "done", "noted"]
    texts = [
        " ".join(rng.sample(filler, 2) + ([rng.choice(words)] if rng.random() < 0.3 else []))
        for _ in range(count)
    ]
    hidden = {i for i in range(count) if rng.random() < 0.15}
    deleted = {i for i in range(count) if i not in hidden and rng.random() < 0.15}
    await load(db, _channel(count, lambda i: texts[i], hidden=hidden))
    connector = Connector(client, await issue_connector_token(db, "reach"))
    for i in sorted(deleted):
        await connector.apply(delete(f"n{i}"))
    eligible = {i for i in range(count) if i not in hidden | deleted}
    order = list(range(count))
    checked = 0
    for query in [*words, "amber cobalt"]:
        token = await _turn(client, db, issue_token)
        for page in await _pages(client, token, query, first=4):
            keys = _page_keys(page)
            assert len(keys) == len(set(keys)), (query, keys)
            shown: set[int] = set()
            hits = {int(e["node"]["message"]["key"][1:]) for e in page["edges"]}
            for edge in page["edges"]:
                node = edge["node"]
                at = int(node["message"]["key"][1:])
                assert at in eligible and at not in shown, (query, at)
                before = [int(m["key"][1:]) for m in node["before"]]
                after = [int(m["key"][1:]) for m in node["after"]]
                near_before, near_after = _nearest(order, eligible, at)
                # Closest first, stopping only at a message this page already shows.
                expect_before: list[int] = []
                for m in reversed(near_before):
                    if m in shown | hits:
                        break
                    expect_before.insert(0, m)
                expect_after: list[int] = []
                for m in near_after:
                    if m in shown | hits:
                        break
                    expect_after.append(m)
                assert (before, after) == (expect_before, expect_after), (query, at, shown)
                shown.update([at, *before, *after])
                checked += 1
    assert checked > 0
