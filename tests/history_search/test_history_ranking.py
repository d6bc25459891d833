"""historySearch ranking, paging and filters: the order of what eligibility admitted."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.client import GraphQLClient
from tests.history_support import (
    SEARCH,
    audits,
    hit_keys,
    load_history_personas,
    search,
    shown_keys,
    start_turn,
)


async def test_more_words_closer_together_rank_higher_and_why_sums_to_score(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    result = await search(client, token, "decided Acme Friday", first=20)
    # g1 has all three words within five; g2 two of them; the rest only "Acme". t1, the reply
    # in g1's thread, ranks with g1, just above it (what followed it: FOLLOW_UP_SHARE).
    assert hit_keys(result)[:3] == ["t1", "g1", "g2"]
    for edge in result["edges"]:
        node = edge["node"]
        names = [c["name"] for c in node["why"]]
        assert names == [
            "lexical", "context", "supersedes", "asks", "recency", "same_conversation",
        ]  # fmt: skip
        assert sum(c["value"] for c in node["why"]) == pytest.approx(node["score"], abs=1e-12)
    tiers = {"EXACT": 2, "WORDS": 1, "CONTEXT": 0}
    order = [(tiers[e["node"]["match"]], e["node"]["score"]) for e in result["edges"]]
    assert order == sorted(order, reverse=True)


async def test_query_words_are_ored(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    # No message has both words: requiring them all would find nothing.
    assert {"s1", "g1"} <= set(hit_keys(await search(client, token, "budget decided")))


async def test_cursor_pages_continue_the_same_ranking(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_history_personas(db, bulk=30)
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    whole = hit_keys(await search(client, token, "bulk update", first=15))
    paged: list[str] = []
    after = None
    for _ in range(3):
        page = await search(client, token, "bulk update", first=5, after=after)
        paged += hit_keys(page)
        assert page["pageInfo"]["hasNextPage"]
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    assert paged == whole
    assert len(set(paged)) == 15


async def test_cursor_of_another_search_is_invalid(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    other = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    cursor = (await search(client, token, "Acme", first=2))["pageInfo"]["endCursor"]
    for variables, used_by in (
        ({"q": "Friday"}, token),
        ({"q": "Acme", "speaker": "YOU"}, token),
        ({"q": "Acme", "since": "2026-01-01T00:00:00Z"}, token),
        ({"q": "Acme"}, other),
        ({"q": "Acme", "after": "not-a-cursor"}, token),
    ):
        result = await client.post(SEARCH, {"after": cursor, **variables}, token=used_by)
        assert result.codes == ["INVALID_CURSOR"], variables
    # The same search, with the query spelled differently, is the same search.
    again = await client.post(SEARCH, {"q": "  ACME ", "after": cursor}, token=token)
    assert not again.errors


async def test_first_is_between_1_and_20(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    for first in (0, 21, -1):
        result = await client.post(SEARCH, {"q": "Acme", "first": first}, token=token)
        assert result.codes == ["BAD_USER_INPUT"], first
    assert (await search(client, token, "Acme"))["count"] == 8  # the default
    assert (await search(client, token, "Acme", first=20))["count"] == 13


async def test_speaker_narrows_to_the_requester_or_the_agent(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    requester = await search(client, token, "Acme", first=20, speaker="REQUESTER")
    assert set(hit_keys(requester)) == {"g1", "s1", "da1", "r1"}
    you = await search(client, token, "Acme", first=20, speaker="YOU")
    assert set(hit_keys(you)) == {"da2", "g3", "g4"}
    assert {e["node"]["speaker"] for e in you["edges"]} == {"Helper (agent)"}
    anyone = await search(client, token, "Acme", first=20, speaker="ANYONE")
    assert set(hit_keys(requester)) | set(hit_keys(you)) < set(hit_keys(anyone))


async def test_since_and_until_bound_the_time(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    window = {"since": "2026-03-02T12:00:00Z", "until": "2026-03-02T13:00:00Z"}
    # [since, until): da1 at 12:00 is in, g3 at 13:00 is out; db1 at 12:30 is bob's DM.
    assert set(hit_keys(await search(client, token, "Acme", first=20, **window))) == {
        "da1",
        "da2",
    }
    backwards = {"since": window["until"], "until": window["since"]}
    result = await client.post(SEARCH, {"q": "Acme", **backwards}, token=token)
    assert result.codes == ["BAD_USER_INPUT"]


@pytest.mark.parametrize(
    "bounds",
    [
        {"since": "0001-01-01T00:00:00+14:00"},
        {"until": "0001-01-01T00:00:00+14:00"},
        {"since": "9999-12-31T23:59:59-14:00"},
        {"until": "9999-12-31T23:59:59-14:00"},
    ],
)
async def test_times_outside_the_years_1_to_9999_in_utc_are_bad_user_input(
    client: GraphQLClient, alice_turn: str, bounds: dict[str, str]
) -> None:
    result = await client.post(SEARCH, {"q": "Acme", **bounds}, token=alice_turn)
    assert result.codes == ["BAD_USER_INPUT"], result.body


async def test_the_extremes_within_the_range_work(client: GraphQLClient, alice_turn: str) -> None:
    everything = hit_keys(await search(client, alice_turn, "Acme", first=20))
    widest = {"since": "0001-01-01T00:00:00Z", "until": "9999-12-31T23:59:59.999999Z"}
    assert hit_keys(await search(client, alice_turn, "Acme", first=20, **widest)) == everything


async def test_trigger_and_loaded_window_are_excluded_as_already_in_context(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(
        client, db, issue_token, scope="general", requester="alice", trigger="g8", window=3
    )
    # The window is the last three *eligible* messages before g8: g7, g6 and g2 (g5 has no
    # evidence, g3 and g4 fail their lineage in #general).
    window = await db.fetch(
        "select m.key from turn_window w join messages m on m.id = w.message_id order by m.key"
    )
    assert [r["key"] for r in window] == ["g2", "g6", "g7"]
    hits = hit_keys(await search(client, token, "Acme", first=20))
    assert not set(hits) & {"g8", "g7", "g6", "g2"}
    assert "g1" in hits
    assert (await audits(db))[-1]["exclusions"]["already_in_context"] == 4


async def test_hit_labels_say_where_who_and_when(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="general", requester="alice")
    general = {
        e["node"]["message"]["key"]: e["node"]
        for e in (await search(client, token, "Acme", first=20))["edges"]
    }
    assert general["g1"]["where"] == "#general"
    assert general["g1"]["channel"] == "general"
    assert general["g1"]["thisConversation"] is True
    assert general["t1"]["where"] == "thread in #general"
    assert general["t1"]["thisConversation"] is True
    assert general["r1"]["thisConversation"] is False
    assert general["g1"]["ago"].endswith(" ago")
    assert general["g1"]["when"] == "2026-03-02T10:00:00+00:00"
    assert general["g1"]["text"] == "We decided to move Acme on Friday"

    dm = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    labels = {
        e["node"]["message"]["key"]: (e["node"]["where"], e["node"]["channel"])
        for e in (await search(client, dm, "Acme", first=20))["edges"]
    }
    assert labels["da1"] == ("DM with Alice", None)
    assert labels["p1"] == ("#partners (shared)", "partners")
    assert labels["s1"] == ("#secret (private)", "secret")
    assert "db1" not in shown_keys(await search(client, dm, "bob private note"))


async def test_search_is_unavailable_until_the_workspace_is_read_ready(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    await db.execute("update search_readiness set read_ready = false")
    result = await client.post(SEARCH, {"q": "Acme"}, token=token)
    assert result.codes == ["SEARCH_UNAVAILABLE"]
    assert await db.fetchval("select count(*) from search_audit") == 0


async def test_a_query_of_only_stop_words_finds_nothing(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    result = await search(client, token, "the and of")
    assert (result["status"], result["count"], result["messageIds"]) == ("OK", 0, [])
    empty = await client.post(SEARCH, {"q": "   "}, token=token)
    assert empty.codes == ["BAD_USER_INPUT"]
