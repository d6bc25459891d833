"""historySearch relevance signals (docs/relevance.md): word weighting from term statistics
that follow every write, identifiers matched by their parts, and the conversation pulled in
around an exact identifier match — all inside eligibility."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from tests.client import GraphQLClient
from tests.history_support import hit_keys, search, shown_keys, start_turn
from tests.personas import acme, load


def _at(minutes: int) -> str:
    t = datetime(2026, 5, 1, 9, 0, tzinfo=UTC) + timedelta(minutes=minutes)
    return t.isoformat().replace("+00:00", "Z")


def relevance_acme() -> dict[str, Any]:
    fixture = acme()
    fixture["scopes"] += [
        {"key": "incidents", "kind": "channel", "visibility": "public", "name": "incidents",
         "members": ["alice", "bob", "helper"]},
        {"key": "t-declined", "kind": "thread", "parent": "incidents", "root": "root"},
    ]  # fmt: skip
    messages = [
        ("root", "incidents", 0, "Spike of ERR_PAYMENT_DECLINED from checkout since 14:05"),
        ("cause", "t-declined", 10, "The processor key was rotated and the bank rejected them"),
        ("hidden", "t-declined", 20, "A note nobody may cite"),
        # The next message in the channel, on another topic: not part of the quote's context.
        ("lunch", "incidents", 1, "Anyone up for tacos at noon?"),
        ("config", "incidents", 600, "Set billing.retry_interval to 24h"),
        # A plan, and the later message in the same channel that changes it.
        ("plan", "incidents", 900, "Plan: the team offsite is in Lisbon in March"),
        ("moved", "incidents", 1900, "Postponing the Lisbon offsite to May"),
        # A question, its answer in the same words, and a request to an agent by name.
        ("ask", "incidents", 3000, "Who runs the status page?"),
        ("tell", "incidents", 3001, "Statuspal runs the status page."),
        ("request", "incidents", 3002, "Helper, check the status page"),
        ("rare", "incidents", 700, "The webhook signature check failed once for a payment"),
    ]
    # A common word, repeated in long messages: it must not outweigh one rare word.
    messages += [
        (f"common{i}", "incidents", 800 + i,
         "payment payment payment: the payment page, payment retries and payment emails")
        for i in range(12)
    ]  # fmt: skip
    fixture["messages"] += [
        {"key": k, "scope": s, "author": "alice", "at": _at(m), "body": b}
        for k, s, m, b in messages
    ]
    fixture["messages"][-len(messages) + 2]["evidence"] = False  # "hidden"
    return fixture


@pytest.fixture
async def turn(client: GraphQLClient, db: asyncpg.Connection, issue_token: Any) -> str:
    await load(db, relevance_acme())
    return await start_turn(client, db, issue_token, scope="incidents", requester="bob")


async def test_an_error_code_finds_the_report_with_the_cause_discussed_after_it(
    client: GraphQLClient, turn: str
) -> None:
    result = await search(client, turn, "ERR_PAYMENT_DECLINED", first=5)
    keys = hit_keys(result)
    # The message quoting the code verbatim comes first; the reply in its thread that never
    # names the code (what followed the report: the cause, the fix) reaches the agent right
    # after it, as its neighbor, and ranks as a hit only below every match.
    assert keys[0] == "root" and result["edges"][0]["node"]["match"] == "EXACT"
    assert "cause" in [m["key"] for m in result["edges"][0]["node"]["after"]]
    assert "cause" not in keys
    # Pulled-in messages pass eligibility like any match: no evidence, never shown.
    assert "hidden" not in shown_keys(result)
    for edge in result["edges"]:
        node = edge["node"]
        assert sum(c["value"] for c in node["why"]) == pytest.approx(node["score"], abs=1e-12)
    # A neighbor in the channel that shares no word with the quote is another conversation.
    assert "lunch" not in hit_keys(result)
    # Excluded words remove pulled-in messages too.
    assert "cause" not in hit_keys(await search(client, turn, "ERR_PAYMENT_DECLINED -rotated"))


async def test_a_later_message_that_changes_a_plan_ranks_above_it(
    client: GraphQLClient, turn: str
) -> None:
    result = await search(client, turn, "offsite Lisbon March", first=3)
    # "plan" matches all three words, "moved" two; but it postpones the plan, later, in the
    # same channel: it supersedes it.
    assert hit_keys(result)[:2] == ["moved", "plan"]
    why = {c["name"]: c["value"] for c in result["edges"][0]["node"]["why"]}
    assert why["supersedes"] > 0
    # Without the change it would not: a message that merely comes later is no revision.
    assert hit_keys(await search(client, turn, "offsite Lisbon March -postponing"))[0] == "plan"


async def test_the_answer_ranks_above_the_question_in_the_same_words(
    client: GraphQLClient, turn: str
) -> None:
    result = await search(client, turn, "status page", first=3)
    assert hit_keys(result)[0] == "tell"
    why = {e["node"]["message"]["key"]: {c["name"]: c["value"] for c in e["node"]["why"]}
           for e in result["edges"]}  # fmt: skip
    # Where the answer was asked for: a question, a request to an agent by name.
    assert why["ask"]["asks"] < 0 and why["request"]["asks"] < 0 and why["tell"]["asks"] == 0


async def test_identifiers_are_found_by_their_parts(client: GraphQLClient, turn: str) -> None:
    assert hit_keys(await search(client, turn, "retry interval", first=3))[0] == "config"
    assert hit_keys(await search(client, turn, "billing.retry_interval", first=3))[0] == "config"


async def test_one_rare_word_outweighs_a_common_word_repeated(
    client: GraphQLClient, turn: str
) -> None:
    assert hit_keys(await search(client, turn, "payment signature", first=3))[0] == "rare"


async def _stats_match_documents(db: asyncpg.Connection) -> None:
    kept = await db.fetch(
        "select workspace_id, lexeme, documents from search_term_stats where documents > 0"
        " order by 1, 2"
    )
    fresh = await db.fetch(
        "select d.workspace_id, l.lexeme, count(*)::int as documents from search_documents d"
        " cross join unnest(tsvector_to_array(d.tsv)) l(lexeme) group by 1, 2 order by 1, 2"
    )
    assert [tuple(r) for r in kept] == [tuple(r) for r in fresh]
    corpus = await db.fetch("select * from search_corpus_stats order by 1")
    counted = await db.fetch(
        "select workspace_id, count(*) as documents, sum(length(tsv)) as lexemes"
        " from search_documents group by 1 order by 1"
    )
    assert [tuple(r) for r in corpus] == [tuple(r) for r in counted]


async def test_term_statistics_follow_imports_edits_and_deletions(
    db: asyncpg.Connection, turn: str
) -> None:
    await _stats_match_documents(db)
    await db.execute("update messages set body = 'The processor token expired' where key = 'cause'")
    await _stats_match_documents(db)
    await db.execute(
        "delete from search_documents where message_id in"
        " (select id from messages where key in ('rare', 'common3'))"
    )
    await _stats_match_documents(db)


async def test_pages_keep_their_order_while_the_statistics_move(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, turn: str
) -> None:
    other = await start_turn(client, db, issue_token, scope="incidents", requester="bob")
    whole = hit_keys(await search(client, other, "payment signature webhook", first=8))
    first = await search(client, turn, "payment signature webhook", first=3)
    assert hit_keys(first) == whole[:3]
    # As if thousands of messages about webhooks had arrived since the first page.
    await db.execute(
        "update search_term_stats set documents = documents + 5000"
        " where lexeme in ('webhook', 'signatur')"
    )
    await db.execute("update search_corpus_stats set documents = documents + 5000")
    cursor = first["pageInfo"]["endCursor"]
    rest = await search(client, turn, "payment signature webhook", first=5, after=cursor)
    assert hit_keys(first) + hit_keys(rest) == whole


async def test_a_message_covering_more_of_the_question_outranks_one_rare_word(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    fixture = relevance_acme()
    fixture["scopes"].append(
        {"key": "ops", "kind": "channel", "visibility": "public", "name": "ops",
         "members": ["alice", "bob", "helper"]}
    )  # fmt: skip
    # "refund" and "queue" are common in the workspace, "stuck" is in one message only: the
    # answer says two of the question's three words, the other message only the rare one.
    messages = [
        ("answer", "The refund queue is not draining since the deploy"),
        ("traffic", "My car got stuck in traffic on the bridge"),
    ]
    messages += [(f"refund{i}", f"Refund issued for order {i}") for i in range(8)]
    messages += [(f"queue{i}", f"Queue depth normal at {i} am") for i in range(8)]
    fixture["messages"] += [
        # Hours apart: no message is another's neighbor, so only the words decide.
        {"key": k, "scope": "ops", "author": "alice", "at": _at(5000 + 300 * i), "body": b}
        for i, (k, b) in enumerate(messages)
    ]
    await load(db, fixture)
    turn = await start_turn(client, db, issue_token, scope="ops", requester="bob")
    keys = hit_keys(await search(client, turn, "refund queue stuck", first=5))
    assert keys.index("answer") < keys.index("traffic")


async def test_copies_of_one_text_do_not_fill_the_page(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    fixture = relevance_acme()
    fixture["scopes"].append(
        {"key": "ops", "kind": "channel", "visibility": "public", "name": "ops",
         "members": ["alice", "bob", "helper"]}
    )  # fmt: skip
    # The one message that says something, then a bot's notice posted every night since: all
    # hold the query's words, and the copies are newer.
    messages = [("failed", "Nightly backup of db-main failed: the volume is full")]
    messages += [(f"notice{i}", "Nightly backup of db-main completed") for i in range(6)]
    fixture["messages"] += [
        {"key": k, "scope": "ops", "author": "alice", "at": _at(5000 + 300 * i), "body": b}
        for i, (k, b) in enumerate(messages)
    ]
    await load(db, fixture)
    turn = await start_turn(client, db, issue_token, scope="ops", requester="bob")
    result = await search(client, turn, "nightly backup db-main", first=3)
    keys = hit_keys(result)
    assert "failed" in keys
    # The copies still count once: the oldest keeps its score, the later ones rank below.
    assert sum(k.startswith("notice") for k in keys) == 2 and "notice0" in keys


async def test_a_cjk_term_matches_the_messages_holding_part_of_it(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    fixture = relevance_acme()
    fixture["scopes"].append(
        {"key": "tokyo", "kind": "channel", "visibility": "public", "name": "tokyo",
         "members": ["alice", "bob", "helper"]}
    )  # fmt: skip
    # Japanese is written without spaces: `DNS設定` ("DNS settings") is two words in one term.
    messages = [
        ("whole", "東京リージョンのDNS設定を変更しました"),
        ("pairs", "DNSのTTLを300秒に戻しました"),
        ("english", "Tokyo region: the DNS misconfiguration is fixed"),
        ("other", "Lunch at the ramen place on Friday"),
    ]
    fixture["messages"] += [
        {"key": k, "scope": "tokyo", "author": "alice", "at": _at(5000 + 300 * i), "body": b}
        for i, (k, b) in enumerate(messages)
    ]
    await load(db, fixture)
    turn = await start_turn(client, db, issue_token, scope="tokyo", requester="bob")
    result = await search(client, turn, "DNS設定", first=5)
    match = {e["node"]["message"]["key"]: e["node"]["match"] for e in result["edges"]}
    assert hit_keys(result)[0] == "whole"
    # Each holds a word of the term: matches, not context, below the one that holds all of it.
    assert match.get("pairs") == "WORDS" and match.get("english") == "WORDS"
    assert "other" not in match
