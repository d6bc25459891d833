"""historySearch's evaluation contract (issue 4): eligibility, not relevance, decides what an
agent may see. Each test is named after the rule it protects; personas in tests/personas.py."""

from __future__ import annotations

from typing import Any

import asyncpg

from tests.client import GraphQLClient
from tests.history_support import (
    audits,
    excluded,
    hit_keys,
    search,
    shown_keys,
    start_turn,
)
from tests.rows import one

DM_ALICE = {"da1", "da2"}


async def test_own_dm_decision_is_found_from_that_dm(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    result = await search(client, token, "salary question")
    assert hit_keys(result)[0] == "da1"
    assert result["status"] == "OK"


async def test_another_persons_dm_is_never_a_candidate_at_any_score(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    # Alice's exact words, and a page as large as allowed: still nothing of her DM.
    result = await search(client, token, "my Acme salary question is private", first=20)
    assert not shown_keys(result) & DM_ALICE
    assert "g3" not in shown_keys(result)  # built from da1: its lineage reaches her DM
    row = (await audits(db))[-1]
    # da1 and da2 matched and were removed by the audience rule, before any ranking.
    assert row["exclusions"]["audience"] >= 2
    assert not {s["message_id"] for s in row["selected"]} & set(
        await db.fetchval("select array_agg(id) from messages where key in ('da1', 'da2')")
    )


async def test_public_channel_exchange_is_found_from_both_dms(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    for scope, person in (("dm-alice", "alice"), ("dm-bob", "bob")):
        token = await start_turn(client, db, issue_token, scope=scope, requester=person)
        result = await search(client, token, "Friday migration")
        assert {"g1", "g2"} <= set(hit_keys(result)), scope


async def test_public_channel_the_requester_never_joined_is_found(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-carol", requester="carol")
    result = await search(client, token, "Friday migration")
    # Carol never wrote in #general, yet it is found.
    assert {"g1", "g2"} <= set(hit_keys(result))


async def test_dm_never_surfaces_in_a_public_channel_even_for_its_participant(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="general", requester="alice")
    result = await search(client, token, "my salary question is private", first=20)
    assert not shown_keys(result) & {"da1", "da2", "g3"}


async def test_private_channel_reaches_itself_and_never_a_public_one(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    inside = await start_turn(client, db, issue_token, scope="secret", requester="alice")
    assert hit_keys(await search(client, inside, "secret budget"))[0] == "s1"
    public = await start_turn(client, db, issue_token, scope="general", requester="alice")
    assert "s1" not in shown_keys(await search(client, public, "secret budget", first=20))


async def test_message_without_source_evidence_is_excluded(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    result = await search(client, token, "legacy row", first=20)
    assert "g5" not in shown_keys(result)
    assert (await audits(db))[-1]["exclusions"]["no_evidence"] == 1


async def test_reply_built_on_private_memory_is_excluded_from_a_wider_audience(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    # g4's own text is innocuous and sits in #general, but it was built from alice's memory.
    wider = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    assert "g4" not in shown_keys(await search(client, wider, "recap from memory", first=20))
    assert (await audits(db))[-1]["exclusions"]["lineage"] >= 1
    # Alice's own DM is inside the memory's audience: there it is found.
    own = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert hit_keys(await search(client, own, "recap from memory"))[0] == "g4"


async def test_neighbors_skip_ineligible_messages_and_take_the_next_eligible(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    result = await search(client, token, "Sam one says hello", first=1)
    node = result["edges"][0]["node"]
    assert node["message"]["key"] == "g6"
    # Between g2 and g6 sit g3 (lineage: alice's DM), g4 (lineage: her memory) and g5 (no
    # evidence): skipped, and the two eligible lines before them taken instead.
    assert [m["key"] for m in node["before"]] == ["g1", "g2"]
    assert [m["key"] for m in node["after"]] == ["g7", "g8"]
    assert not shown_keys(result) & {"g3", "g4", "g5"}


async def test_two_actors_with_the_same_display_name_stay_distinct(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="general", requester="alice")
    result = await search(client, token, "Sam says hello Scout reporting Friday works")
    speakers = {e["node"]["message"]["key"]: e["node"]["speaker"] for e in result["edges"]}
    assert speakers["g6"] == "Sam (sam1)"
    assert speakers["g7"] == "Sam (sam2)"
    assert speakers["g2"] == "Bob"
    assert speakers["g8"] == "Scout (agent)"


async def test_perspective_keeps_an_agent_out_of_scopes_it_is_not_in(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    # #random is public (its text is disclosable to bob), but scout is not a member of it.
    scout = await start_turn(
        client, db, issue_token, agent="scout", scope="dm-bob", requester="bob"
    )
    words = "random public note launch secret budget roadmap salary"
    seen = shown_keys(await search(client, scout, words, first=20))
    assert not seen & {"r1", "s1", "p1", "da1", "da2"}
    # Out-of-perspective rows are not even candidates: the one match in scout's scopes is
    # db1 ("note"), and nothing else is counted anywhere, not even as an exclusion.
    assert seen == {"db1"}
    row = (await audits(db))[-1]
    assert excluded(row) + len(row["selected"]) == row["exclusions"]["examined"] == 1
    helper = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    assert "r1" in hit_keys(await search(client, helper, "random public note"))


async def test_a_document_claiming_another_conversation_is_checked_against_its_message(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    """The sidecar's conversation only narrows the scan: a document that claims to be in one of
    the agent's conversations is still judged by its message's real scope."""
    dm_bob = await db.fetchval("select id from scopes where key = 'dm-bob'")
    r1 = one(await db.fetchrow("select workspace_id, id from messages where key = 'r1'"))
    await db.execute(
        "update search_documents set root_scope_id = $1 where workspace_id = $2 and message_id = $3",
        dm_bob,
        *r1,
    )
    scout = await start_turn(
        client, db, issue_token, agent="scout", scope="dm-bob", requester="bob"
    )
    seen = shown_keys(await search(client, scout, "random public note", first=20))
    assert "r1" not in seen and seen == {"db1"}
    row = (await audits(db))[-1]
    assert row["exclusions"]["examined"] == 1  # db1 only: r1 is not in scout's perspective


async def test_neighbors_skip_lines_whose_audience_excludes_the_destination(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    # g6 as if written while #general was private to bob: its origin audience is his alone.
    bobs = await db.fetchval("select audience_id from messages where key = 'db1'")
    await db.execute("update messages set audience_id = $1 where key = 'g6'", bobs)
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    result = await search(client, token, "Sam two says hello", first=1)
    node = result["edges"][0]["node"]
    assert node["message"]["key"] == "g7"
    # g6 (bob's audience) and g5 (no evidence) are skipped; g4 and g3 are alice's to see.
    assert [m["key"] for m in node["before"]] == ["g3", "g4"]
    assert "g6" not in shown_keys(result)
