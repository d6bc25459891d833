"""historySearch: a match outranks context, whatever the weights, and a page shows each message
once.

Random conversations of a small vocabulary, searched end to end over GraphQL and paged to the
end. Whether a message matches is decided here from its text (it holds one of the query's
words), independently of the index: no message without any of the query's words may come
before one that has one, and the hits that hold the whole query verbatim come first.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from app.history_search import ranking
from tests.client import GraphQLClient
from tests.history_support import START, gid, search, shown_keys
from tests.personas import load

# Words the English stemmer leaves whole and that are no stop words: a body holds the query's
# word exactly when it holds it as written.
WORDS = ["amber", "cobalt", "harbor", "lantern", "meadow", "orchid", "quartz", "walnut"]
FILLER = ["ok", "sure", "thanks", "later", "done", "noted", "agreed", "nice"]
ORDER = {"EXACT": 2, "WORDS": 1, "CONTEXT": 0}


def _conversations(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    people = ["ana", "ben", "cy"]
    fixture: dict[str, Any] = {
        "workspace": {"key": "vocab", "name": "Vocab"},
        "namespace": "slack:vocab",
        "members": [{"key": p, "name": p.title()} for p in people],
        "agents": [{"key": "bot", "name": "Bot", "owner": "ana"}],
        "scopes": [
            {
                "key": "room",
                "kind": "channel",
                "visibility": "public",
                "name": "room",
                "members": [*people, "bot"],
            },
            {"key": "dm", "kind": "dm", "members": ["ana", "bot"]},
        ],
        "memories": [],
        "messages": [],
    }
    at = datetime(2026, 5, 1, tzinfo=UTC)
    n = 0

    def post(scope: str, body: str) -> str:
        nonlocal n, at
        n += 1
        at += timedelta(minutes=rng.randint(1, 30))
        key = f"m{n}"
        fixture["messages"].append(
            {"key": key, "scope": scope, "author": rng.choice(people),
             "at": at.isoformat().replace("+00:00", "Z"), "body": body}
        )  # fmt: skip
        return key

    for t in range(12):
        # A root that names one or two words, and a thread of replies, mostly filler: the
        # conversation around a match, most of it without the query's words.
        named = rng.sample(WORDS, rng.randint(1, 2))
        root = post("room", " ".join(named + rng.sample(FILLER, 2)))
        thread = f"thread{t}"
        fixture["scopes"].append({"key": thread, "kind": "thread", "parent": "room", "root": root})
        for _ in range(rng.randint(2, 5)):
            words = rng.sample(FILLER, 3)
            if rng.random() < 0.25:
                words.append(rng.choice(WORDS))
            post(thread, " ".join(words))
        for _ in range(rng.randint(0, 3)):
            post("room", " ".join(rng.sample(FILLER, 3)))
    return fixture


async def _turn(client: GraphQLClient, db: asyncpg.Connection, issue_token: Any) -> str:
    """A turn of `bot` in its DM with ana (the public room is in its perspective)."""
    token = await issue_token("agent", "vocab", "bot")
    variables = {
        "scope": await gid(db, "Scope", "dm"),
        "requester": await gid(db, "Member", "ana"),
        "window": 0,
    }
    data = await client.gql(START, variables, token=token)
    turn: str = data["startTurn"]["token"]
    return turn


def _holds(body: str, words: list[str]) -> bool:
    return any(w in body.split() for w in words)


async def _ranked(
    client: GraphQLClient, token: str, query: str
) -> list[tuple[str, str, list[str]]]:
    """Every hit of the query, paged to the end: (key, match, the keys shown on its page)."""
    out: list[tuple[str, str, list[str]]] = []
    after = None
    for _ in range(50):
        page = await search(client, token, query, first=5, after=after)
        shown: list[str] = []
        for edge in page["edges"]:
            node = edge["node"]
            shown += [m["key"] for m in node["before"]] + [node["message"]["key"]]
            shown += [m["key"] for m in node["after"]]
        # Each message once on a page: a hit is nobody's neighbor, a neighbor nobody else's.
        assert len(shown) == len(set(shown)), (query, shown)
        out += [(e["node"]["message"]["key"], e["node"]["match"], shown) for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return out
        after = page["pageInfo"]["endCursor"]
    raise AssertionError("paging did not end")


async def _check(client: GraphQLClient, db: asyncpg.Connection, issue_token: Any) -> int:
    """Check every query of the vocabulary; the number of context hits seen."""
    bodies = {r["key"]: r["body"] for r in await db.fetch("select key, body from messages")}
    context_hits = 0
    for query in [*WORDS, "amber cobalt", "harbor quartz", "lantern meadow orchid"]:
        words = query.split()
        token = await _turn(client, db, issue_token)
        ranked = await _ranked(client, token, query)
        assert ranked, query
        matches = [_holds(bodies[key], words) for key, _, _ in ranked]
        # A match outranks context: once a hit without the query's words is shown, no hit
        # with them follows.
        first_context = matches.index(False) if False in matches else len(matches)
        assert all(matches[:first_context]) and not any(matches[first_context:]), (
            query,
            [(key, bodies[key]) for key, _, _ in ranked],
        )
        # The tier says so, and orders the hits.
        for (key, match, _), holds in zip(ranked, matches, strict=True):
            assert (match != "CONTEXT") == holds, (query, key, match)
            if match == "EXACT":
                assert " ".join(bodies[key].split()).find(query) >= 0 or len(words) == 1
        tiers = [ORDER[match] for _, match, _ in ranked]
        assert tiers == sorted(tiers, reverse=True), query
        context_hits += matches.count(False)
        # Every message that holds a query word is found (the window holds them all here).
        expected = {k for k, b in bodies.items() if _holds(b, words)}
        assert expected <= {key for key, _, _ in ranked}, query
    return context_hits


@pytest.mark.parametrize("seed", [1, 2])
async def test_a_match_outranks_context_whatever_the_weights(
    client: GraphQLClient,
    db: asyncpg.Connection,
    issue_token: Any,
    seed: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await load(db, _conversations(seed))
    # Context rows join the ranking (few matches each), so the rule is tested, not vacuous.
    assert await _check(client, db, issue_token) > 0
    # Weights that would lift the conversation around a match far above any match.
    monkeypatch.setattr(ranking, "CONTEXT_SHARE", 50.0)
    monkeypatch.setattr(ranking, "FOLLOW_UP_SHARE", 80.0)
    monkeypatch.setattr(ranking, "RECENCY_WEIGHT", 20.0)
    monkeypatch.setattr(ranking, "SAME_CONVERSATION_WEIGHT", 20.0)
    assert await _check(client, db, issue_token) > 0


async def test_the_message_holding_an_identifier_verbatim_comes_first(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    fixture = _conversations(3)
    at = "2026-01-01T09:00:00Z"
    extra = [
        ("x1", "pg-replica-03 is lagging behind the primary by 40 minutes"),
        ("x2", "replica lag on pg-replica-02 again, and pg is slow"),
        ("x3", "the replica 03 pg dashboards"),
        ("x4", "remaining connection slots are reserved for superuser"),
        ("x5", "connection slots remaining: few; some are reserved"),
    ]
    for key, body in extra:
        fixture["messages"].append(
            {"key": key, "scope": "room", "author": "ana", "at": at, "body": body}
        )
    await load(db, fixture)
    token = await _turn(client, db, issue_token)
    for query, exact in (
        ("pg-replica-03", "x1"),
        ("remaining connection slots are reserved", "x4"),
        ("PG-Replica-03 lag", "x1"),
    ):
        result = await search(client, token, query, first=5)
        nodes = [e["node"] for e in result["edges"]]
        assert nodes[0]["message"]["key"] == exact, query
        assert nodes[0]["match"] == "EXACT"
        assert all(n["match"] != "EXACT" for n in nodes[1:]), query


async def test_a_score_never_rests_on_a_source_the_turn_may_no_longer_see(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """A turn's later searches of one binding rank with the context sources its first search
    chose (the cursors stay positions in one order). A source deleted since is rechecked like
    any row: the messages around it lose what it gave them, so no score depends on it."""
    from app.data.tokens import issue_connector_token
    from tests.changes_support import Connector, delete

    fixture = _conversations(4)
    fixture["messages"] = []
    fixture["messages"].append(
        {"key": "r1", "scope": "room", "author": "ana", "at": "2026-05-01T09:00:00Z",
         "body": "quartz incident report"}
    )  # fmt: skip
    fixture["scopes"] = [s for s in fixture["scopes"] if s["kind"] != "thread"]
    fixture["scopes"].append({"key": "t1", "kind": "thread", "parent": "room", "root": "r1"})
    replies = ["sure thanks later", "done noted agreed", "ok nice", "later done"]
    for i, body in enumerate(replies, start=1):
        fixture["messages"].append(
            {"key": f"t1r{i}", "scope": "t1", "author": "ben",
             "at": f"2026-05-01T09:0{i}:00Z", "body": body}
        )  # fmt: skip
    await load(db, fixture)
    token = await _turn(client, db, issue_token)

    def context_of(page: dict[str, Any]) -> dict[str, float]:
        return {
            e["node"]["message"]["key"]: next(
                w["value"] for w in e["node"]["why"] if w["name"] == "context"
            )
            for e in page["edges"]
            if e["node"]["match"] == "CONTEXT"
        }

    first = await search(client, token, "quartz", first=10)
    assert first["edges"][0]["node"]["message"]["key"] == "r1"
    # r1 reads with its thread's first replies; the later ones are its context.
    assert [m["key"] for m in first["edges"][0]["node"]["after"]] == ["t1r1", "t1r2"]
    assert context_of(first) and set(context_of(first)) <= {"t1r3", "t1r4"}
    assert {"t1r1", "t1r2", "t1r3", "t1r4"} <= shown_keys(first)
    assert all(v > 0 for v in context_of(first).values())
    connector = Connector(client, await issue_connector_token(db, "vocab"))
    await connector.apply(delete("r1"))
    again = await search(client, token, "quartz", first=10)
    # r1 is gone, and with it the only reason its thread's replies were shown.
    assert again["edges"] == [], again["edges"]
