"""Requests an attacker with any valid token could send: each is refused quickly and clearly,
changes nothing, and never reaches the database as something it cannot hold."""

from __future__ import annotations

import json
import time
from typing import Any

import asyncpg
import pytest

from app.request.ids import encode_id
from tests.history_support import REPLY
from tests.history_support import search as history_search
from tests.message_search_support import SEARCH
from tests.personas import load_personas


@pytest.fixture
async def alice(db: asyncpg.Connection, issue_token: Any) -> str:
    await load_personas(db)
    token: str = await issue_token("member", "acme", "alice")
    return token


def _fragment_bomb(levels: int) -> str:
    """`{...L0}`, each fragment spreading the next twice: 2^levels expansions in ~40 bytes a
    level."""
    spreads = "\n".join(
        f"fragment L{i} on Query {{ ...L{i + 1} ...L{i + 1} }}" for i in range(levels)
    )
    return (
        f"{{ ...L0 }}\n{spreads}\nfragment L{levels} on Query {{ viewer {{ member {{ key }} }} }}"
    )


async def test_a_fragment_bomb_is_refused_without_being_expanded(client: Any, alice: str) -> None:
    started = time.perf_counter()
    result = await client.post(_fragment_bomb(30), token=alice)
    elapsed = time.perf_counter() - started
    assert result.status == 400 and result.codes == ["QUERY_TOO_COMPLEX"], result.body
    assert result.errors[0]["extensions"]["cost"] > 2**30
    # Not a timing benchmark: expanding 2^30 spreads takes hours, walking 30 fragments once
    # takes microseconds. A second is a bound no exponential walk meets.
    assert elapsed < 1.0, elapsed
    small = await client.post(_fragment_bomb(3), token=alice)
    assert small.status == 200 and small.data == {"viewer": {"member": {"key": "alice"}}}


async def test_a_fan_out_is_refused_with_its_cost_before_anything_executes(
    client: Any, db: asyncpg.Connection, alice: str
) -> None:
    scope = encode_id("Scope", await db.fetchval("select id from scopes where key = 'general'"))
    aliases = " ".join(
        f"a{i}: nodes(ids: $ids) {{ ... on Scope {{ messages(first: 100) {{"
        " edges { node { key body } } } } }"
        for i in range(25)
    )
    result = await client.post(
        f"query($ids: [ID!]!) {{ {aliases} }}", {"ids": [scope] * 500}, token=alice
    )
    assert result.status == 400 and result.codes == ["QUERY_TOO_COMPLEX"], result.body
    extensions = result.errors[0]["extensions"]
    assert extensions["cost"] > extensions["limit"] == 50_000
    assert result.statements == 1  # the token lookup; nothing of the query ran


async def test_page_sizes_from_variables_count_toward_the_cost(client: Any, alice: str) -> None:
    page = (
        'messageSearch(query: "acme", first: $first) { edges { node { key scope {'
        " messages(first: 100) { edges { node { key body } } } } } } }"
    )
    query = f"query($first: Int) {{ a: {page} b: {page} }}"
    assert (await client.post(query, {"first": 5}, token=alice)).codes == []
    refused = await client.post(query, {"first": 100}, token=alice)
    assert refused.codes == ["QUERY_TOO_COMPLEX"], refused.body


async def test_several_operations_need_an_operation_name(client: Any, alice: str) -> None:
    two = "query A { viewer { member { key } } } query B { viewer { workspace { key } } }"
    refused = await client.post(two, token=alice)
    assert refused.status == 400 and refused.codes == ["BAD_USER_INPUT"], refused.body
    named = await client.http.post(
        "/graphql",
        json={"query": two, "operationName": "B"},
        headers={"authorization": f"Bearer {alice}"},
    )
    assert named.json() == {"data": {"viewer": {"workspace": {"key": "acme"}}}}


@pytest.mark.parametrize(
    "body",
    [b'"hello"', b"5", b"\xff\xfe{}", b"[" * 10_000, b"{", b"null"],
    ids=["string", "number", "not-utf8", "nested", "truncated", "null"],
)
async def test_a_body_that_is_not_a_json_object_is_a_400_json_error(
    client: Any, alice: str, body: bytes
) -> None:
    response = await client.http.post(
        "/graphql",
        content=body,
        headers={"authorization": f"Bearer {alice}", "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "literal" not in error["message"] and "recursion" not in error["message"]


@pytest.mark.parametrize(
    ("variables", "where"),
    [
        ({"q": "acme\x00budget"}, "NUL"),
        ({"q": "a\ud800b"}, "surrogate"),
    ],
    ids=["nul", "lone-surrogate"],
)
async def test_text_postgres_cannot_hold_is_a_request_error(
    client: Any, alice: str, variables: dict[str, str], where: str
) -> None:
    # Sent as JSON escapes ("\\ud800"), as a JavaScript client would.
    response = await client.http.post(
        "/graphql",
        content=json.dumps({"query": SEARCH, "variables": variables}).encode(),
        headers={
            "authorization": f"Bearer {alice}",
            "content-type": "application/json",
            "accept": "application/graphql-response+json",
        },
    )
    assert response.status_code == 400, response.text
    (error,) = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT" and where in error["message"]


async def test_a_nul_in_a_literal_or_a_reply_body_is_a_request_error(
    client: Any, alice_turn: str
) -> None:
    literal = await client.post(
        '{ historySearch(query: "acme\\u0000x") { count } }', token=alice_turn
    )
    assert literal.status == 400 and literal.codes == ["BAD_USER_INPUT"], literal.body
    reply = await client.post(REPLY, {"body": "done\x00"}, token=alice_turn)
    assert reply.status == 400 and reply.codes == ["BAD_USER_INPUT"], reply.body


@pytest.mark.parametrize(
    "bound",
    [{"since": "0001-01-01T00:00:00+14:00"}, {"until": "9999-12-31T23:59:59-14:00"}],
    ids=["before-year-1", "after-year-9999"],
)
async def test_an_instant_postgres_cannot_hold_is_bad_user_input(
    client: Any, alice_turn: str, bound: dict[str, str]
) -> None:
    from tests.history_support import SEARCH as HISTORY

    result = await client.post(HISTORY, {"q": "acme", **bound}, token=alice_turn)
    assert result.codes == ["BAD_USER_INPUT"], result.body


async def test_a_cursor_beyond_any_seq_is_invalid(
    client: Any, alice: str, db: asyncpg.Connection
) -> None:
    first = await client.gql(SEARCH, {"q": "acme", "first": 1}, token=alice)
    end = first["messageSearch"]["pageInfo"]["endCursor"]
    # Forged with the installation's own key (cursors are sealed: app.message_search.opaque), so the
    # position itself is what is checked.
    from app.message_search.opaque import Sealer

    sealer = Sealer(await db.fetchval("select value from recall_secrets where name = 'cursors'"))
    reader = await db.fetchval(
        "select a.workspace_id || ':member:' || a.id || ':0' from actors a where a.key = 'alice'"
        " and a.workspace_id = (select id from workspaces where key = 'acme')"
    )
    payload = sealer.open(end, reader)
    payload["p"] = [payload["p"][0], payload["p"][1] or 1, 2**31, payload["p"][3] or 1]
    forged = sealer.seal(payload, reader)
    result = await client.post(SEARCH, {"q": "acme", "after": forged}, token=alice)
    assert result.codes == ["INVALID_CURSOR"], result.body


async def test_an_id_with_other_scripts_digits_is_malformed(client: Any, alice: str) -> None:
    import base64

    arabic = base64.urlsafe_b64encode("Message:٨١".encode()).decode().rstrip("=")
    result = await client.post(
        "query($id: ID!) { node(id: $id) { id } }", {"id": arabic}, token=alice
    )
    assert result.status == 400 and result.codes == ["BAD_USER_INPUT"], result.body
    assert "int()" not in result.errors[0]["message"]


async def test_a_retried_reply_with_the_same_client_id_is_posted_once(
    client: Any, db: asyncpg.Connection, alice_turn: str
) -> None:
    await history_search(client, alice_turn, "acme")
    mutation = """
    mutation($body: String!, $id: String) {
      postReply(body: $body, clientMutationId: $id) { delivered replayed message { id body } }
    }"""
    first = await client.gql(mutation, {"body": "Noted: Friday", "id": "r-1"}, token=alice_turn)
    again = await client.gql(mutation, {"body": "Noted: Friday", "id": "r-1"}, token=alice_turn)
    assert first["postReply"]["replayed"] is False and again["postReply"]["replayed"] is True
    assert again["postReply"]["message"] == first["postReply"]["message"]
    assert await db.fetchval("select count(*) from messages where body = 'Noted: Friday'") == 1
    other = await client.gql(mutation, {"body": "Noted: Friday", "id": "r-2"}, token=alice_turn)
    assert other["postReply"]["message"]["id"] != first["postReply"]["message"]["id"]


async def test_introspection_is_not_limited_by_request_cost(client: Any, alice: str) -> None:
    from graphql import get_introspection_query

    result = await client.post(get_introspection_query(descriptions=True), token=alice)
    assert result.status == 200 and not result.errors, result.errors[:1]
    assert result.data["__schema"]["queryType"]["name"] == "Query"


async def test_nested_introspection_is_refused_for_its_size(client: Any, alice: str) -> None:
    # graphql-core's own introspection depth rule refuses deep nesting; the size estimate
    # refuses what stays under that depth but still multiplies out.
    for levels in (3, 6):
        nested = (
            "{ __schema { types { "
            + "fields { type { " * levels
            + "name"
            + " } }" * levels
            + " } } }"
        )
        result = await client.post(nested, token=alice)
        assert result.status == 400, result.body
        assert result.codes[0] in ("QUERY_TOO_COMPLEX", "BAD_USER_INPUT"), result.body
