"""The provenance ledger and postReply: what a turn saw is what its reply is built from, and
the ledger's arithmetic (app.history_search.ledger) that keeps it under its ceiling."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

from app.data.history_search import Neighbors
from app.history_search.ledger import CEILING, Ledger
from app.request.ids import decode_id
from tests.client import GraphQLClient
from tests.history_support import (
    REPLY,
    SEARCH,
    hit_keys,
    hit_row,
    keys_of,
    load_history_personas,
    message_row,
    search,
    shown_keys,
    start_turn,
)

EVIDENCE = "{ viewer { turn { evidence { key } } } }"


async def _sources(db: asyncpg.Connection, message_key: str) -> set[str]:
    rows = await db.fetch(
        """
        select s.key from message_sources ms
        join messages m on m.id = ms.message_id join messages s on s.id = ms.source_message_id
        where m.key = $1
        """,
        message_key,
    )
    return {r["key"] for r in rows}


async def test_message_ids_are_every_shown_message_and_join_the_evidence(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    result = await search(client, token, "Sam one says hello", first=2)
    shown = await keys_of(db, result["messageIds"])
    # Result order: each hit's exchange as it reads, each message once and no holes: g7, the
    # next hit, is not also shown as g6's neighbor, so g6's `after` stops there and g7's
    # exchange reads on from it (g8).
    assert shown[:5] == ["g1", "g2", "g6", "g7", "g8"]
    assert len(shown) == len(set(shown)) and set(shown) == shown_keys(result)
    evidence = (await client.gql(EVIDENCE, token=token))["viewer"]["turn"]["evidence"]
    assert sorted(m["key"] for m in evidence) == sorted(shown)


async def test_search_results_are_in_the_reply_provenance(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice", window=1)
    shown = await keys_of(db, (await search(client, token, "Friday secret budget"))["messageIds"])
    reply = (await client.gql(REPLY, {"body": "Friday, and the budget is 40k"}, token=token))[
        "postReply"
    ]
    assert reply["delivered"] is True and reply["withheldReason"] is None
    key = reply["message"]["key"]
    # The ledger and the loaded window (da2, the latest message of the DM) are the provenance.
    assert await _sources(db, key) == set(shown) | {"da2"}
    row = await db.fetchrow(
        "select m.seq, m.global_seq, m.has_provenance, m.evidence, s.last_seq, w.last_global_seq"
        " from messages m join scopes s on s.id = m.scope_id"
        " join workspaces w on w.id = m.workspace_id where m.key = $1",
        key,
    )
    assert row is not None
    assert (row["seq"], row["has_provenance"], row["evidence"]) == (3, True, True)
    assert (row["last_seq"], row["last_global_seq"]) == (row["seq"], row["global_seq"])


async def test_large_first_near_the_caps_never_makes_a_reply_undeliverable(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    await load_history_personas(db, bulk=700)
    token = await start_turn(client, db, issue_token, scope="bulk", requester="alice", window=100)
    statuses: list[str] = []
    counts: list[int] = []
    # Page after page, batch after batch (a search examines a bounded window of matches: a
    # batch's 50 are each found by its own rare word), until the ledger says it is full.
    for batch in range(14):
        after = None
        while statuses[-1:] != ["BUDGET_EXHAUSTED"]:
            result = await search(client, token, f"bulk batch{batch}", first=20, after=after)
            statuses.append(result["status"])
            counts.append(result["count"])
            if not result["pageInfo"]["hasNextPage"]:
                break
            after = result["pageInfo"]["endCursor"]
    evidence = await db.fetchval("select count(*) from turn_evidence")
    # The page shrank as the ledger filled, stopped exactly at the ceiling, then said so.
    assert evidence == 400
    assert statuses[-1] == "BUDGET_EXHAUSTED" and counts[-1] == 0
    assert counts[0] == 20 and 0 < counts[-2] < 20
    again = await search(client, token, "Acme", first=20)
    assert (again["status"], again["count"], again["messageIds"]) == ("BUDGET_EXHAUSTED", 0, [])

    reply = (await client.gql(REPLY, {"body": "Acme bulk summary"}, token=token))["postReply"]
    assert reply["delivered"] is True
    # Its provenance is the ledger and the window (a neighbor may be a window message too):
    # at most 400 + 100 sources, within every cap of the lineage walk.
    union = await db.fetchval(
        "select count(*) from (select message_id from turn_evidence"
        " union select message_id from turn_window) u"
    )
    assert len(await _sources(db, reply["message"]["key"])) == union
    assert 400 < union <= 500
    # Delivered replies are searchable like any message, lineage and all.
    other = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    assert hit_keys(await search(client, other, "bulk summary"))[0] == reply["message"]["key"]


async def test_concurrent_searches_of_one_turn_never_overrun_the_ceiling(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """Searches of one turn in concurrent requests each decide the ledger's room on the ledger
    they record against (app.data.turns.record_shown): eight at once, a few messages short of
    the ceiling, each wanting more than the room left, never overrun it; every one of them is
    audited, and everything any of them showed is evidence."""
    await load_history_personas(db, bulk=700)
    token = await start_turn(client, db, issue_token, scope="bulk", requester="alice", window=100)
    for batch in range(14):  # as above: a batch's matches each, a page of 5 at a time
        after = None
        while await db.fetchval("select count(*) from turn_evidence") < CEILING - 12:
            page = await search(client, token, f"bulk batch{batch}", first=5, after=after)
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
    audits = await db.fetchval("select count(*) from search_audit")
    before = await db.fetchval("select count(*) from turn_evidence")
    # Eight messages not shown yet, far enough apart that their neighbors differ too: each
    # search finds one (its number) and would show five messages.
    unseen = await db.fetch(
        "select m.key from messages m where m.key like 'b%' and m.id not in"
        " (select message_id from turn_evidence union select message_id from turn_window)"
        " order by m.seq"
    )
    queries = [f"number {r['key'][1:]}" for r in unseen[::10][:8]]
    assert len(queries) == 8
    results = await asyncio.gather(
        *(client.post(SEARCH, {"q": q, "first": 20}, token=token) for q in queries)
    )
    assert all(r.status == 200 and not r.errors for r in results), [r.body for r in results]
    evidence = {r["message_id"] for r in await db.fetch("select message_id from turn_evidence")}
    assert before < len(evidence) <= CEILING
    for r in results:
        shown = {decode_id(i)[1] for i in r.data["historySearch"]["messageIds"]}
        assert shown <= evidence
    assert await db.fetchval("select count(*) from search_audit") == audits + len(queries)


async def test_reply_whose_provenance_fails_the_recheck_is_withheld_and_not_kept(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="general", requester="alice")
    await search(client, token, "Friday")
    # A ledger that (somehow) holds alice's DM: the recheck is the last line of defense.
    await db.execute(
        "insert into turn_evidence (workspace_id, turn_id, message_id)"
        " select m.workspace_id, t.id, m.id from turns t"
        " join messages m on m.workspace_id = t.workspace_id where m.key = 'da1'"
    )
    before = await db.fetchval("select count(*) from messages")
    reply = (await client.gql(REPLY, {"body": "nothing private here"}, token=token))["postReply"]
    assert reply["delivered"] is False and reply["message"] is None
    assert "not delivered" in reply["withheldReason"]
    assert await db.fetchval("select count(*) from messages") == before
    assert await db.fetchval("select last_seq from scopes where key = 'general'") == 8


async def test_reply_body_must_be_1_to_20000_characters(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    for body in ("", "   ", "x" * 20_001):
        result = await client.post(REPLY, {"body": body}, token=token)
        assert result.codes == ["BAD_USER_INPUT"]
    assert (await client.gql(REPLY, {"body": "x" * 20_000}, token=token))["postReply"]["delivered"]


async def test_aliased_searches_in_one_request_each_join_the_ledger_and_the_audit(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, alice_turn: str
) -> None:
    token = alice_turn
    data = await client.gql(
        """{ a: historySearch(query: "Friday") { messageIds }
             b: historySearch(query: "secret budget") { messageIds } }""",
        token=token,
    )
    shown = set(data["a"]["messageIds"]) | set(data["b"]["messageIds"])
    evidence = (await client.gql(EVIDENCE, token=token))["viewer"]["turn"]["evidence"]
    assert {m["key"] for m in evidence} == set(await keys_of(db, sorted(shown)))
    assert await db.fetchval("select count(*) from search_audit") == 2


async def test_reply_is_refused_once_the_agent_left_the_scope(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    token = await start_turn(client, db, issue_token, scope="secret", requester="alice")
    await db.execute(
        "delete from scope_members where scope_id = (select id from scopes where key = 'secret')"
        " and actor_id = (select id from actors where key = 'helper')"
    )
    assert (await client.post(REPLY, {"body": "hello"}, token=token)).codes == ["FORBIDDEN"]
    # Its searches see nothing of the scope either: the perspective is evaluated per search.
    assert "s1" not in shown_keys(await search(client, token, "secret budget"))


def test_page_shrinks_as_the_ledger_fills_and_stops_at_the_ceiling() -> None:
    ledger = Ledger(1)
    assert ledger.page_size(20) == 20
    ledger.evidence = set(range(CEILING - 30))
    assert ledger.page_size(20) == 6
    ledger.evidence = set(range(CEILING - 3))
    assert ledger.page_size(20) == 1
    ledger.evidence = set(range(CEILING))
    assert ledger.page_size(20) == 0


def test_fit_never_overruns_the_ceiling_and_drops_farthest_neighbors_first() -> None:
    ledger = Ledger(1, evidence=set(range(1000, 1000 + CEILING - 3)))
    around = Neighbors((message_row(1), message_row(2)), (message_row(4), message_row(5)))
    shown, used = ledger.fit([hit_row(3)], [around], 1)
    assert used == 1
    # Room for three: the hit, then the line just before and the line just after it.
    assert [m.id for m in shown[0].before] == [2]
    assert [m.id for m in shown[0].after] == [4]
    assert ledger.record(shown) == [2, 3, 4]
    assert len(ledger.evidence) == CEILING
