"""Scope.messages: opening a hit's scope with the hit centered, through the same eligibility."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.message_search_support import global_id
from tests.personas import load_personas

TRANSCRIPT = """
query($scope: ID!, $around: ID, $first: Int, $last: Int, $after: String, $before: String) {
  node(id: $scope) {
    ... on Scope {
      messages(around: $around, first: $first, last: $last, after: $after, before: $before) {
        edges { cursor node { key seq } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      }
    }
  }
}
"""


@pytest.fixture
async def tokens(db: asyncpg.Connection, issue_token: Any) -> dict[str, str]:
    await load_personas(db)
    return {who: await issue_token("member", "acme", who) for who in ("alice", "bob", "carol")}


async def _open(client: Any, token: str, scope: str, **variables: Any) -> Any:
    result = await client.post(TRANSCRIPT, {"scope": scope, **variables}, token=token)
    assert not result.errors, result.body
    node = result.data["node"]
    return node["messages"] if node else None


def _keys(connection: Any) -> list[str]:
    return [e["node"]["key"] for e in connection["edges"]]


def _more(connection: Any) -> tuple[bool, bool]:
    info = connection["pageInfo"]
    return info["hasPreviousPage"], info["hasNextPage"]


async def test_around_a_hit_centers_it_and_skips_what_the_reader_may_not_read(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    g4, g6 = await global_id(db, "Message", "g4"), await global_id(db, "Message", "g6")
    alice = await _open(client, tokens["alice"], general, around=g4, first=2, last=2)
    # g5 has no evidence: skipped, the window extends to g7.
    assert _keys(alice) == ["g2", "g3", "g4", "g6", "g7"]
    assert _more(alice) == (True, True)
    bob = await _open(client, tokens["bob"], general, around=g6, first=5, last=3)
    # g3 and g4 fail lineage for bob, g5 has no evidence.
    assert _keys(bob) == ["g1", "g2", "g6", "g7", "g8"]
    assert _more(bob) == (False, False)


async def test_around_a_message_the_reader_may_not_read_shows_nothing(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    g3 = await global_id(db, "Message", "g3")
    bob = await _open(client, tokens["bob"], general, around=g3)
    assert _keys(bob) == []
    # A message of another scope, or an id of something else, centers nothing either.
    for other in ("t1", "s1"):
        elsewhere = await global_id(db, "Message", other)
        assert _keys(await _open(client, tokens["alice"], general, around=elsewhere)) == []
    assert _keys(await _open(client, tokens["alice"], general, around=general)) == []


async def test_forward_and_backward_pages(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    first = await _open(client, tokens["carol"], general, first=2)
    assert _keys(first) == ["g1", "g2"] and _more(first) == (False, True)
    rest = await _open(
        client, tokens["carol"], general, first=10, after=first["pageInfo"]["endCursor"]
    )
    assert _keys(rest) == ["g6", "g7", "g8"] and _more(rest) == (True, False)
    tail = await _open(client, tokens["carol"], general, last=2)
    assert _keys(tail) == ["g7", "g8"] and _more(tail) == (True, False)
    head = await _open(
        client, tokens["carol"], general, last=10, before=tail["pageInfo"]["startCursor"]
    )
    assert _keys(head) == ["g1", "g2", "g6"] and _more(head) == (False, True)


async def test_a_scope_the_reader_can_no_longer_read_shows_no_transcript(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    secret = await global_id(db, "Scope", "secret")
    assert _keys(await _open(client, tokens["alice"], secret)) == ["s1"]
    assert await _open(client, tokens["bob"], secret) is None  # not even the scope
    # alice leaves the channel: what was written while she was a member stays findable, but
    # the channel itself (reached through the hit) no longer opens for her.
    await db.execute(
        "delete from scope_members where scope_id = (select id from scopes where key = 'secret')"
        " and actor_id = (select id from actors where key = 'alice')"
    )
    data = await client.gql(
        '{ messageSearch(query: "budget") { edges { node { key scope { key'
        " messages { edges { node { key } } } } } } } }",
        token=tokens["alice"],
    )
    (edge,) = data["messageSearch"]["edges"]
    assert edge["node"]["key"] == "s1"
    assert edge["node"]["scope"]["messages"]["edges"] == []


async def test_a_thread_transcript_follows_its_parent(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    thread = await global_id(db, "Scope", "t-general")
    assert _keys(await _open(client, tokens["carol"], thread)) == ["t1"]


async def test_transcript_cursors_are_bound_to_their_scope(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    thread = await global_id(db, "Scope", "t-general")
    cursor = (await _open(client, tokens["alice"], general, first=1))["pageInfo"]["endCursor"]
    result = await client.post(
        TRANSCRIPT, {"scope": thread, "after": cursor, "first": 1}, token=tokens["alice"]
    )
    assert result.codes == ["INVALID_CURSOR"]
    for bad in ({"after": "junk"}, {"before": "junk"}):
        result = await client.post(TRANSCRIPT, {"scope": general, **bad}, token=tokens["alice"])
        assert result.codes == ["INVALID_CURSOR"], bad


@pytest.mark.parametrize(
    "variables",
    [
        {"after": "x", "before": "y"},
        {"first": 101},
        {"last": -1},
        {"first": 2, "last": 2},
        {"after": "x", "last": 2},
    ],
)
async def test_conflicting_or_out_of_range_arguments(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str], variables: dict[str, Any]
) -> None:
    general = await global_id(db, "Scope", "general")
    result = await client.post(TRANSCRIPT, {"scope": general, **variables}, token=tokens["alice"])
    assert result.codes == ["BAD_USER_INPUT"], result.body


async def test_around_cannot_be_combined_with_a_cursor(
    client: Any, db: asyncpg.Connection, tokens: dict[str, str]
) -> None:
    general = await global_id(db, "Scope", "general")
    g1 = await global_id(db, "Message", "g1")
    result = await client.post(
        TRANSCRIPT, {"scope": general, "around": g1, "after": "x"}, token=tokens["alice"]
    )
    assert result.codes == ["BAD_USER_INPUT"]
