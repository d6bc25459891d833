"""Helpers for the historySearch tests: fixtures on top of the personas, turns, searches."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from app.data.history_search import HitRow
from app.data.rows import MessageRow
from app.request.ids import decode_id, encode_id
from tests.client import GraphQLClient
from tests.personas import acme, globex, load

START = """
mutation($scope: ID!, $requester: ID!, $trigger: ID, $window: Int) {
  startTurn(scopeId: $scope, requesterId: $requester, triggerMessageId: $trigger, window: $window) {
    token turn { id scope { key } requester { key } }
  }
}
"""

SEARCH = """
query($q: String!, $first: Int, $after: String, $speaker: Speaker, $since: DateTime,
      $until: DateTime) {
  historySearch(query: $q, first: $first, after: $after, speaker: $speaker, since: $since,
                until: $until) {
    status messageIds count
    edges { cursor node {
      message { id key } where channel thisConversation when ago speaker text
      before { key } after { key } match score why { name value } } }
    pageInfo { hasNextPage endCursor }
  }
}
"""

REPLY = """
mutation($body: String!) {
  postReply(body: $body) { delivered withheldReason message { id key body } }
}
"""


def history_acme() -> dict[str, Any]:
    """The personas plus carol's DM with helper and a public channel scout is not in."""
    fixture = acme()
    fixture["scopes"] += [
        {"key": "dm-carol", "kind": "dm", "members": ["carol", "helper"]},
        {"key": "random", "kind": "channel", "visibility": "public", "name": "random",
         "members": ["alice", "helper"]},
    ]  # fmt: skip
    fixture["messages"] += [
        {"key": "r1", "scope": "random", "author": "alice", "at": "2026-03-03T09:00:00Z",
         "body": "random public note about the Acme launch"},
    ]  # fmt: skip
    return fixture


def bulk_channel(fixture: dict[str, Any], count: int) -> dict[str, Any]:
    """A public channel `bulk` (alice, bob, helper) with `count` matching messages, in batches
    of 50 (`batch0`, `batch1`, ...: words rare enough that every match of each is examined)."""
    fixture["scopes"].append(
        {"key": "bulk", "kind": "channel", "visibility": "public", "name": "bulk",
         "members": ["alice", "bob", "helper"]}
    )  # fmt: skip
    start = datetime(2026, 4, 1, tzinfo=UTC)
    for i in range(count):
        fixture["messages"].append(
            {
                "key": f"b{i}",
                "scope": "bulk",
                "author": "alice" if i % 2 else "bob",
                "at": (start + timedelta(minutes=i)).isoformat().replace("+00:00", "Z"),
                "body": f"Acme bulk update number {i} in batch{i // 50}",
            }
        )
    return fixture


async def load_history_personas(db: asyncpg.Connection, bulk: int = 0) -> None:
    fixture = history_acme()
    if bulk:
        bulk_channel(fixture, bulk)
    await load(db, fixture)
    await load(db, globex())


async def gid(db: asyncpg.Connection, type_name: str, key: str) -> str:
    table = {"Scope": "scopes", "Member": "actors", "Agent": "actors", "Message": "messages"}
    pk = await db.fetchval(f"select id from {table[type_name]} where key = $1", key)
    assert pk is not None, key
    return str(encode_id(type_name, pk))


async def start_turn(
    client: GraphQLClient,
    db: asyncpg.Connection,
    issue_token: Any,
    *,
    agent: str = "helper",
    scope: str,
    requester: str,
    trigger: str | None = None,
    window: int = 0,
    workspace: str = "acme",
) -> str:
    """A turn token, through the startTurn mutation. Window 0 unless a test needs one."""
    token = await issue_token("agent", workspace, agent)
    variables = {
        "scope": await gid(db, "Scope", scope),
        "requester": await gid(db, "Member", requester),
        "trigger": await gid(db, "Message", trigger) if trigger else None,
        "window": window,
    }
    data = await client.gql(START, variables, token=token)
    turn_token: str = data["startTurn"]["token"]
    return turn_token


async def search(client: GraphQLClient, token: str, q: str, **variables: Any) -> dict[str, Any]:
    data = await client.gql(SEARCH, {"q": q, **variables}, token=token)
    result: dict[str, Any] = data["historySearch"]
    return result


def hit_keys(result: dict[str, Any]) -> list[str]:
    return [e["node"]["message"]["key"] for e in result["edges"]]


def shown_keys(result: dict[str, Any]) -> set[str]:
    """Every message key the result shows: hits and their neighbors."""
    out: set[str] = set()
    for e in result["edges"]:
        node = e["node"]
        out.add(node["message"]["key"])
        out.update(m["key"] for m in node["before"] + node["after"])
    return out


async def keys_of(db: asyncpg.Connection, global_ids: list[str]) -> list[str]:
    pks = [decode_id(g)[1] for g in global_ids]
    rows = await db.fetch("select id, key from messages where id = any($1)", pks)
    by_id = {r["id"]: r["key"] for r in rows}
    return [by_id[p] for p in pks]


async def audits(db: asyncpg.Connection) -> list[asyncpg.Record]:
    return list(
        await db.fetch("select * from search_audit where surface = 'history_search' order by id")
    )


RULES = ("already_in_context", "no_evidence", "audience", "lineage", "below_cutoff")


def excluded(audit_row: Any) -> int:
    """Matches an audited search counted under some exclusion rule."""
    return sum(audit_row["exclusions"][rule] for rule in RULES)


# Rows for the pure parts (presentation, the ledger), without a database.
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def message_row(pk: int, body: str = "hello") -> MessageRow:
    return MessageRow(pk, f"m{pk}", 1, pk, pk, 1, body, NOW)


def hit_row(pk: int, **labels: object) -> HitRow:
    fields: dict[str, Any] = {
        "author_name": "Sam",
        "author_key": "sam1",
        "author_kind": "member",
        "author_name_shared": False,
        "scope_kind": "channel",
        "scope_visibility": "public",
        "scope_name": "general",
        "parent_name": None,
        "people": (),
    }
    fields.update(labels)
    return HitRow(message_row(pk), "WORDS", 1, (("lexical", 0.1),), 0.1, False, **fields)
