"""GraphQL over HTTP: authentication, request errors, node lookups, batching, health."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.request.ids import encode_id
from tests.client import GraphQLClient
from tests.personas import load_personas

GRAPHQL_JSON = "application/graphql-response+json"


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load_personas(db)
    issue = issue_token
    return {
        "alice": await issue("member", "acme", "alice"),
        "bob": await issue("member", "acme", "bob"),
        "carol": await issue("member", "acme", "carol"),
        "mallory": await issue("member", "globex", "mallory"),
        "helper": await issue("agent", "acme", "helper"),
    }


async def _pk(db: asyncpg.Connection, table: str, key: str) -> int:
    pk: int = await db.fetchval(f"select id from {table} where key = $1", key)
    return pk


async def test_missing_or_unknown_token_is_401(
    client: GraphQLClient, tokens: dict[str, str]
) -> None:
    for token in (None, "rcm_not-a-real-token"):
        result = await client.post("{ viewer { workspace { key } } }", token=token)
        assert result.status == 401
        assert result.codes == ["UNAUTHENTICATED"]


async def test_viewer_answers_for_a_member(client: GraphQLClient, tokens: dict[str, str]) -> None:
    data = await client.gql(
        "{ viewer { workspace { key name } member { key name } agent { key } } }",
        token=tokens["alice"],
    )
    assert data["viewer"] == {
        "workspace": {"key": "acme", "name": "Acme"},
        "member": {"key": "alice", "name": "Alice"},
        "agent": None,
    }


async def test_agent_token_sees_its_owner(client: GraphQLClient, tokens: dict[str, str]) -> None:
    data = await client.gql(
        "{ viewer { member { key } agent { key owner { key } } } }", token=tokens["helper"]
    )
    assert data["viewer"] == {"member": None, "agent": {"key": "helper", "owner": {"key": "alice"}}}


async def test_malformed_id_is_a_request_error(
    client: GraphQLClient, tokens: dict[str, str]
) -> None:
    for variables in ({"id": "not-an-id"}, {"id": encode_id("Message", 1) + "!"}):
        result = await client.post(
            "query($id: ID!) { node(id: $id) { id } }", variables, token=tokens["alice"]
        )
        assert result.status == 400 and result.codes == ["BAD_USER_INPUT"], result.body
        assert "data" not in result.body
    literal = await client.post('{ node(id: "@@@") { id } }', token=tokens["alice"])
    assert literal.status == 400
    assert literal.codes == ["BAD_USER_INPUT"]
    legacy = await client.post(
        '{ node(id: "@@@") { id } }', token=tokens["alice"], accept="application/json"
    )
    assert legacy.status == 200
    assert legacy.codes == ["BAD_USER_INPUT"]


async def test_syntax_and_validation_errors_are_400(
    client: GraphQLClient, tokens: dict[str, str]
) -> None:
    for query in ("{ viewer { ", "{ viewer { nope } }"):
        result = await client.post(query, token=tokens["alice"])
        assert result.status == 400, result.body
        assert result.codes == ["BAD_USER_INPUT"]


async def test_depth_and_alias_limits_hold_on_every_request(
    client: GraphQLClient, tokens: dict[str, str]
) -> None:
    # The limits are validation rules; validation results are cached per document, so the
    # second identical request must be refused just like the first.
    deep = "{ viewer { workspace { scopes { " + "parent { " * 12 + "key" + " }" * 12 + " } } } }"
    aliased = "{ " + " ".join(f"a{i}: viewer {{ member {{ key }} }}" for i in range(51)) + " }"
    for query, measure in ((deep, "depth"), (aliased, "aliases")):
        for _ in range(2):
            result = await client.post(query, token=tokens["alice"])
            assert result.status == 400 and result.codes == ["QUERY_TOO_COMPLEX"], result.body
            assert measure in result.errors[0]["extensions"], result.body
    fine = await client.post("{ viewer { member { key } } }", token=tokens["alice"])
    assert fine.status == 200 and not fine.errors


async def test_oversized_request_is_rejected(client: GraphQLClient, tokens: dict[str, str]) -> None:
    result = await client.post(
        "{ viewer { member { key } } }" + " " * 300_000, token=tokens["alice"]
    )
    assert result.status == 413


async def test_node_never_returns_what_the_viewer_may_not_read(
    client: GraphQLClient, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    dm_message = encode_id("Message", await _pk(db, "messages", "da1"))
    dm_scope = encode_id("Scope", await _pk(db, "scopes", "dm-alice"))
    secret = encode_id("Scope", await _pk(db, "scopes", "secret"))
    public = encode_id("Message", await _pk(db, "messages", "g1"))
    no_evidence = encode_id("Message", await _pk(db, "messages", "g5"))
    query = "query($ids: [ID!]!) { nodes(ids: $ids) { id ... on Message { key } ... on Scope { key } } }"
    ids = [dm_message, dm_scope, secret, public, no_evidence]
    alice = (await client.gql(query, {"ids": ids}, token=tokens["alice"]))["nodes"]
    assert [n and (n.get("key")) for n in alice] == ["da1", "dm-alice", "secret", "g1", None]
    bob = (await client.gql(query, {"ids": ids}, token=tokens["bob"]))["nodes"]
    assert [n and n.get("key") for n in bob] == [None, None, None, "g1", None]
    mallory = (await client.gql(query, {"ids": ids}, token=tokens["mallory"]))["nodes"]
    assert mallory == [None] * 5


async def test_lineage_hides_a_reply_built_from_a_dm(
    client: GraphQLClient, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    built_from_dm = encode_id("Message", await _pk(db, "messages", "g3"))
    query = "query($id: ID!) { node(id: $id) { ... on Message { key } } }"
    assert (await client.gql(query, {"id": built_from_dm}, token=tokens["alice"]))["node"] == {
        "key": "g3"
    }
    assert (await client.gql(query, {"id": built_from_dm}, token=tokens["bob"]))["node"] is None


async def test_workspace_scopes_lists_only_readable_scopes(
    client: GraphQLClient, tokens: dict[str, str]
) -> None:
    query = "{ viewer { workspace { scopes { key } } } }"
    keys = {
        who: {
            s["key"]
            for s in (await client.gql(query, token=tokens[who]))["viewer"]["workspace"]["scopes"]
        }
        for who in ("alice", "bob", "carol", "helper")
    }
    assert keys["alice"] == {"general", "secret", "partners", "dm-alice", "t-general"}
    assert keys["bob"] == {"general", "dm-bob", "t-general"}
    assert keys["carol"] == {"general", "partners", "t-general"}
    assert keys["helper"] == {"general", "secret", "partners", "dm-alice", "dm-bob", "t-general"}


async def test_nodes_of_many_messages_cost_constant_statements(
    client: GraphQLClient, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await _pk(db, "scopes", "general")
    alice = await _pk(db, "actors", "alice")
    audience = await db.fetchval("select origin_audience_id from scopes where id = $1", general)
    ws = await db.fetchval("select id from workspaces where key = 'acme'")
    await db.execute(
        """
        insert into messages (workspace_id, key, scope_id, seq, global_seq, author_id, body, created_at, audience_id)
        select $1, 'bulk-' || i, $2, 1000 + i, 1000 + i, $3, 'bulk message ' || i, now(), $4
        from generate_series(1, 100) i
        """,
        ws,
        general,
        alice,
        audience,
    )
    ids = [
        encode_id("Message", r["id"])
        for r in await db.fetch("select id from messages where key like 'bulk-%'")
    ]
    query = """query($ids: [ID!]!) { nodes(ids: $ids) { ... on Message { key author { ... on Member { key } }
               scope { key parent { key } } } } }"""
    one = await client.post(query, {"ids": ids[:1]}, token=tokens["alice"])
    many = await client.post(query, {"ids": ids}, token=tokens["alice"])
    assert not one.errors
    assert not many.errors
    assert len([n for n in many.data["nodes"] if n]) == 100
    assert one.statements == many.statements


async def test_health_and_readiness(client: GraphQLClient) -> None:
    assert (await client.http.get("/healthz")).json() == {"status": "ok"}
    ready = await client.http.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}


async def test_graphiql_is_served_to_browsers(client: GraphQLClient) -> None:
    page = await client.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()
    assert "Authorization" in page.text


async def test_agent_token_without_a_turn_reads_no_message(
    client: GraphQLClient, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    # Disclosure needs a destination and only a turn binds one, so a bare agent token reads no
    # message text, even in a public channel the agent is a member of.
    public = encode_id("Message", await _pk(db, "messages", "g1"))
    data = await client.gql(
        "query($id: ID!) { node(id: $id) { ... on Message { key } } }",
        {"id": public},
        token=tokens["helper"],
    )
    assert data["node"] is None
