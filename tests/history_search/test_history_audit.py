"""historySearch audit rows and statement counts: every search leaves one row, in its own
transaction, with exclusion counts computed by the search's own predicates."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.history_search.ranking import RARE_WINDOW, WINDOW
from app.request.ids import decode_id
from app.settings import Settings
from tests.client import GraphQLClient
from tests.history_support import (
    SEARCH,
    audits,
    excluded,
    load_history_personas,
    search,
    start_turn,
)

MASTER_KEY = "test-master-key-0123456789"

TRACE = """
{ viewer { turn { searches {
    queryDigest status speaker since until createdAt
    selected { messageId score why { name value } }
    exclusions { alreadyInContext noEvidence audience lineage belowCutoff examined complete }
} } } }
"""


@pytest.fixture
def settings() -> Settings:
    return Settings(RECALL_EXPOSE_STATEMENT_COUNT=True, RECALL_MASTER_KEY=MASTER_KEY)


async def test_every_search_writes_one_audit_row_with_exclusions_by_first_rule(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="general", requester="bob", window=1)
    result = await search(client, token, "Acme", first=3)
    await search(client, token, "zebra")  # finds nothing: still audited
    rows = await audits(db)
    assert len(rows) == 2
    row = rows[0]
    # In helper's perspective "Acme" matches 15 messages. For #general: g8 is the loaded
    # window; g5 has no evidence; s1, p1, da1, da2, db1 fail the audience; g3, g4 the lineage;
    # of the 6 eligible (g1, g2, t1, g6, g7, r1) three were selected.
    assert row["exclusions"] == {
        "already_in_context": 1,
        "no_evidence": 1,
        "audience": 5,
        "lineage": 2,
        "below_cutoff": 3,
        "examined": 15,
        "window": WINDOW,
        "windows": 1,
        "complete": True,
    }
    hits = [decode_id(e["node"]["message"]["id"])[1] for e in result["edges"]]
    assert [s["message_id"] for s in row["selected"]] == hits
    assert [s["score"] for s in row["selected"]] == [e["node"]["score"] for e in result["edges"]]
    assert set(row["selected"][0]["why"]) == {
        "lexical",
        "context",
        "supersedes",
        "asks",
        "recency",
        "same_conversation",
    }
    assert row["destination"]["kind"] == "workspace"
    assert row["filters"]["speaker"] == "ANYONE" and row["filters"]["status"] == "OK"
    assert rows[1]["selected"] == [] and rows[1]["exclusions"]["examined"] == 0
    assert excluded(rows[1]) == 0

    trace = (await client.gql(TRACE, token=token))["viewer"]["turn"]["searches"]
    assert len(trace) == 2
    assert trace[0]["exclusions"]["audience"] == 5
    assert trace[0]["exclusions"]["examined"] == 15 and trace[0]["exclusions"]["complete"] is True
    assert [s["messageId"] for s in trace[0]["selected"]] == [
        e["node"]["message"]["id"] for e in result["edges"]
    ]


async def test_audit_digest_is_keyed_and_never_the_query(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    await search(client, token, "salary question")
    await search(client, token, "  Salary   QUESTION ")
    rows = await audits(db)
    digest = rows[0]["query_digest"]
    assert len(digest) == 64 and digest == rows[1]["query_digest"]
    stored = await db.fetchval("select string_agg(t::text, ' ') from search_audit t")
    assert "salary" not in stored.lower()


async def test_exclusion_counts_hold_past_the_candidate_pool(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_history_personas(db, bulk=300)
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await search(client, token, "Acme")
    row = (await audits(db))[-1]
    # 313 eligible matches (300 in #bulk and 13 others), all examined (a word in at most
    # RARE_WINDOW documents is examined in all of them), far past the page: each is counted.
    assert WINDOW < 313 <= RARE_WINDOW
    assert row["exclusions"]["below_cutoff"] == 313 - 8
    assert (row["exclusions"]["no_evidence"], row["exclusions"]["audience"]) == (1, 1)


async def test_a_search_examines_the_newest_matches_up_to_the_window_and_says_so(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_history_personas(db, bulk=RARE_WINDOW + 100)
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    result = await search(client, token, "Acme")
    row = (await audits(db))[-1]
    x = row["exclusions"]
    # Every examined match is counted once: the rules, the shown hits and the rest add up.
    # "acme" is in more than RARE_WINDOW documents: the window is its newest WINDOW matches.
    assert x["examined"] == WINDOW == excluded(row) + len(row["selected"])
    # Both parts are the newest matches: the bulk channel's messages are the newest, so every
    # hit comes from it and nothing older (the personas' own messages) was examined.
    assert {e["node"]["where"] for e in result["edges"]} == {"#bulk"}
    assert (x["no_evidence"], x["audience"], x["lineage"]) == (0, 0, 0)
    trace = (await client.gql(TRACE, token=token))["viewer"]["turn"]["searches"]
    assert trace[-1]["exclusions"]["complete"] is False


async def test_failed_audit_write_fails_the_search_and_keeps_no_evidence(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    # One statement each: Citus propagates DDL to the shards one command at a time.
    await db.execute(
        "create function fail_audit() returns trigger language plpgsql as"
        " $$ begin raise exception 'audit store is down'; end $$"
    )
    await db.execute(
        "create trigger fail_audit before insert on search_audit"
        " for each row execute function fail_audit()"
    )
    result = await client.post(SEARCH, {"q": "Acme"}, token=token)
    assert result.codes == ["INTERNAL_SERVER_ERROR"]
    assert "audit store" not in str(result.body)
    assert await db.fetchval("select count(*) from turn_evidence") == 0


async def test_statement_count_is_constant_in_the_number_of_hits(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_history_personas(db, bulk=40)
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    counts = []
    for first in (1, 5, 20):
        result = await client.post(SEARCH, {"q": "Acme bulk", "first": first}, token=token)
        assert not result.errors and len(result.data["historySearch"]["edges"]) == first
        counts.append(result.statements)
    # The token with its reader, readiness and turn; the window with its counts, the ranked
    # page, its neighbors and the ledger; the evidence with the audit row. No BEGIN or COMMIT.
    assert counts == [3, 3, 3]
