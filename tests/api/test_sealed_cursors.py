"""Cursors are sealed and bound to their reader (issue 22, 6): another person's cursor, another
turn's, a cursor of this installation replayed by someone else — each is INVALID_CURSOR, and
none can be read (app.message_search.opaque)."""

from __future__ import annotations

from typing import Any

import asyncpg

from tests.client import GraphQLClient
from tests.history_support import SEARCH as HISTORY
from tests.history_support import start_turn
from tests.message_search_support import SEARCH

TRANSCRIPT = """
query($scope: ID!, $after: String) {
  node(id: $scope) { ... on Scope { messages(first: 1, after: $after) {
    edges { node { key } } pageInfo { endCursor } } } }
}"""


async def test_a_persons_cursor_works_for_nobody_else(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    from tests.history_support import gid

    alice = await issue_token("member", "acme", "alice")
    bob = await issue_token("member", "acme", "bob")
    alice_again = await issue_token("member", "acme", "alice")
    first = await client.gql(SEARCH, {"q": "acme", "first": 1}, token=alice)
    cursor = first["messageSearch"]["pageInfo"]["endCursor"]
    assert cursor.startswith("c1.")
    # The same search by bob, with alice's cursor.
    stolen = await client.post(SEARCH, {"q": "acme", "first": 1, "after": cursor}, token=bob)
    assert stolen.codes == ["INVALID_CURSOR"], stolen.body
    # Alice with another of her tokens continues.
    mine = await client.post(SEARCH, {"q": "acme", "first": 1, "after": cursor}, token=alice_again)
    assert not mine.errors, mine.body

    general = await gid(db, "Scope", "general")
    page = await client.gql(TRANSCRIPT, {"scope": general}, token=alice)
    transcript = page["node"]["messages"]["pageInfo"]["endCursor"]
    other = await client.post(TRANSCRIPT, {"scope": general, "after": transcript}, token=bob)
    assert other.codes == ["INVALID_CURSOR"], other.body


async def test_a_turns_cursor_works_in_no_other_turn(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any, history_personas: None
) -> None:
    one = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    two = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    found = await client.gql(HISTORY, {"q": "acme", "first": 1}, token=one)
    cursor = found["historySearch"]["pageInfo"]["endCursor"]
    assert cursor is not None
    elsewhere = await client.post(HISTORY, {"q": "acme", "first": 1, "after": cursor}, token=two)
    assert elsewhere.codes == ["INVALID_CURSOR"], elsewhere.body
    here = await client.post(HISTORY, {"q": "acme", "first": 1, "after": cursor}, token=one)
    assert not here.errors, here.body


def _hidden(count: int) -> dict[str, Any]:
    """`count` messages with `zephyrword` in a private channel bea is not in, nothing else."""
    return {
        "workspace": {"key": f"hid{count}", "name": "Hidden"},
        "namespace": f"test:hid{count}",
        "members": [{"key": "bea", "name": "Bea"}, {"key": "vic", "name": "Vic"}],
        "scopes": [
            {"key": "lobby", "kind": "channel", "visibility": "public", "members": ["bea", "vic"]},
            {"key": "vault", "kind": "channel", "visibility": "private", "members": ["vic"]},
        ],
        "messages": [
            {"key": f"v{n}", "scope": "vault", "author": "vic",
             "at": f"2026-02-{1 + n // 24:02d}T{n % 24:02d}:00:00Z", "body": f"zephyrword {n}"}
            for n in range(count)
        ],
    }  # fmt: skip


async def test_what_an_empty_page_with_continuation_reveals(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """docs/api.md, Cursors: one bit, and only past the candidate budget — at least 200
    (first <= 20) matches the reader may not see, newer than any they may. Below it, hidden
    matches and no matches at all answer alike; above it, nothing says where they are."""
    import io

    from app.message_search.paging import budget_for
    from app.workspace_import.importer import import_fixture

    budget = budget_for(1)
    answers = {}
    for count in (0, budget - 1, budget):
        await import_fixture(db, _hidden(count), io.StringIO())
        bea = await issue_token("member", f"hid{count}", "bea")
        page = (await client.gql(SEARCH, {"q": "zephyrword", "first": 1}, token=bea))[
            "messageSearch"
        ]
        assert page["edges"] == []
        answers[count] = (page["pageInfo"]["hasNextPage"], page["candidateBudgetExhausted"])
    assert answers[0] == answers[budget - 1] == (False, False)
    assert answers[budget] == (True, True)
