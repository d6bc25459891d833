"""messageSearch audit rows: one per search, in the search's transaction, never the query."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app.data.audit import query_digest
from app.settings import Settings
from tests.client import GraphQLClient, graphql_client
from tests.message_search_support import SEARCH, author, global_id, keys
from tests.personas import load_personas


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load_personas(db)
    return {who: await issue_token("member", "acme", who) for who in ("alice", "bob")}


async def _rows(db: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await db.fetch(
        "select a.*, x.key as actor_key from search_audit a"
        " join actors x on x.workspace_id = a.workspace_id and x.id = a.actor_id order by a.id"
    )
    return [dict(r) for r in rows]


async def test_each_search_writes_one_row_without_the_query(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    assert await keys(client, tokens["bob"], "zebracorn") == []
    assert await keys(client, tokens["bob"], "acme -zebracorn") != []
    rows = await _rows(db)
    assert len(rows) == 2
    for row in rows:
        assert row["surface"] == "message_search"
        assert row["actor_key"] == "bob"
        assert row["turn_id"] is None
        assert row["query_digest"] == ""  # no master key in the test settings
        assert "zebracorn" not in json.dumps(row, default=str)
        assert "acme" not in json.dumps(row, default=str).lower().replace("slack:acme", "")


async def test_exclusions_count_each_hidden_match_under_its_first_rule(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    await keys(client, tokens["bob"], "acme")
    await keys(client, tokens["alice"], "acme")
    bob_row, alice_row = await _rows(db)
    # bob: g3/g4 (lineage: a public channel, built from alice's DM / memory); s1, p1, da1,
    # da2 (audience); g5 (no evidence, though also public).
    assert bob_row["exclusions"] == {"no_evidence": 1, "audience": 4, "lineage": 2}
    assert alice_row["exclusions"] == {"no_evidence": 1, "audience": 1, "lineage": 0}
    bob_pk = await db.fetchval("select id from actors where key = 'bob'")
    assert bob_row["destination"]["kind"] == "members"
    assert bob_row["destination"]["readers"] == [bob_pk]
    selected = await db.fetch(
        "select key from messages where id = any($1::bigint[]) order by global_seq desc",
        [s["message_id"] for s in bob_row["selected"]],
    )
    assert [r["key"] for r in selected] == ["g8", "g7", "g6", "db1", "t1", "g2", "g1"]


async def test_filters_are_recorded(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    helper = await global_id(db, "Agent", "helper")
    await keys(client, tokens["alice"], "acme", scope=general, author=author("AGENT", helper))
    (row,) = await _rows(db)
    general_pk = await db.fetchval("select id from scopes where key = 'general'")
    helper_pk = await db.fetchval("select id from actors where key = 'helper'")
    assert row["filters"]["scope"] == {"type": "Scope", "id": general_pk}
    assert row["filters"]["author"] == {"kind": "agent", "type": "Agent", "id": helper_pk}


@pytest.fixture
async def keyed_client(dsn: str) -> AsyncIterator[GraphQLClient]:
    settings = Settings(RECALL_MASTER_KEY="test-master-key")
    async with graphql_client(settings, dsn) as client:
        yield client


async def test_with_a_master_key_the_digest_is_an_hmac_of_the_normalized_query(
    keyed_client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    await keys(keyed_client, tokens["alice"], "  Friday   ACME ")
    await keys(keyed_client, tokens["alice"], "friday acme")
    first, second = await _rows(db)
    assert first["query_digest"] == query_digest("test-master-key", "friday acme")
    assert len(first["query_digest"]) == 64
    assert second["query_digest"] == first["query_digest"]


async def test_a_failed_audit_write_fails_the_search(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    # One statement each: Citus propagates DDL to the shards one command at a time.
    await db.execute(
        "create function reject_audit() returns trigger language plpgsql as"
        " $$ begin raise exception 'audit store unavailable'; end $$"
    )
    await db.execute(
        "create trigger reject_audit before insert on search_audit"
        " for each row execute function reject_audit()"
    )
    result = await client.post(SEARCH, {"q": "acme"}, token=tokens["alice"])
    assert result.codes == ["INTERNAL_SERVER_ERROR"]
    assert result.data is None or result.data.get("messageSearch") is None
    assert "audit store" not in json.dumps(result.body)
