"""The candidate budget is no oracle for a conversation the viewer cannot read (issue 33, 9).

A filter that names a conversation (scopeId, `in:`, MCP's `channel`) or an author (`from:`, the
author argument, MCP's `author`) counts only candidates the viewer may read, and scopeId names
only conversations the viewer may list, as `in:` resolves: a private channel of others answers
exactly like a channel that does not exist, and an author's posts where the viewer cannot read
(or from before the viewer joined) answer exactly like no posts at all — with time bounds too,
so bisecting `since`/`until` finds nothing out. Each answer is compared whole:
the hits, hasNextPage, candidateBudgetExhausted and whether there is a cursor.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest

from app.message_search.paging import budget_for
from app.request.ids import encode_id
from app.settings import Settings
from app.workspace_import.importer import import_fixture
from tests.client import GraphQLClient
from tests.mcp_support import McpApp, mcp_app, ok
from tests.message_search_support import SEARCH

# More hidden posts than one request examines: before the fix they ran the budget out.
HIDDEN = budget_for(1) + 20

# Time windows a bisection would try: the whole month, halves, quarters, then narrower.
WINDOWS = [
    ("2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
    ("2026-02-01T00:00:00Z", "2026-02-15T00:00:00Z"),
    ("2026-02-05T00:00:00Z", "2026-02-12T00:00:00Z"),
    ("2026-02-09T00:00:00Z", "2026-02-10T00:00:00Z"),
    (None, "2026-02-10T12:00:00Z"),
]


def _workspace(name: str, hidden: int) -> dict[str, Any]:
    """bea reads the lobby; bob posts `hidden` messages in vic's and his private vault (hourly
    from 2026-02-01) and one in the lobby, in January."""
    return {
        "workspace": {"key": name, "name": name},
        "namespace": f"test:{name}",
        "members": [{"key": k, "name": k.title()} for k in ("bea", "bob", "vic")],
        "scopes": [
            {"key": "lobby", "kind": "channel", "visibility": "public",
             "members": ["bea", "bob", "vic"]},
            {"key": "vault", "kind": "channel", "visibility": "private",
             "members": ["bob", "vic"]},
        ],
        "messages": [
            {"key": "old", "scope": "lobby", "author": "bob", "at": "2026-01-10T09:00:00Z",
             "body": "zephyrword in the lobby"},
            *(
                {"key": f"v{n}", "scope": "vault", "author": "bob",
                 "at": f"2026-02-{1 + n // 24:02d}T{n % 24:02d}:00:00Z",
                 "body": f"zephyrword {n}"}
                for n in range(hidden)
            ),
        ],
    }  # fmt: skip


@pytest.fixture
async def hidden_and_empty(db: asyncpg.Connection, issue_token: Any) -> dict[str, Any]:
    """Two workspaces alike but for bob's hidden posts; bea's token in each, and ids."""
    out: dict[str, Any] = {}
    for name, count in (("hidden", HIDDEN), ("empty", 0)):
        await import_fixture(db, _workspace(name, count), io.StringIO())
        ws = await db.fetchval("select id from workspaces where key = $1", name)
        bob = await db.fetchval("select id from actors where workspace_id = $1 and key = 'bob'", ws)
        vault = await db.fetchval(
            "select id from scopes where workspace_id = $1 and key = 'vault'", ws
        )
        out[name] = {
            "token": await issue_token("member", name, "bea"),
            "bob": encode_id("Member", bob),
            "vault": encode_id("Scope", vault),
        }
    # A scope id no scope has: the vault of a workspace that does not exist.
    out["missing_scope"] = encode_id("Scope", 10**15)
    return out


def _answer(connection: dict[str, Any]) -> tuple[object, ...]:
    return (
        [e["node"]["key"] for e in connection["edges"]],
        connection["pageInfo"]["hasNextPage"],
        connection["candidateBudgetExhausted"],
        connection["pageInfo"]["endCursor"] is not None,
    )


async def _graphql(client: GraphQLClient, token: str, **variables: Any) -> tuple[object, ...]:
    data = await client.gql(SEARCH, {"first": 1, **variables}, token=token)
    return _answer(data["messageSearch"])


def _bounded(query: str, since: str | None, until: str) -> str:
    return " ".join([query, *([f"since:{since}"] if since else []), f"until:{until}"])


async def test_a_hidden_scope_filter_answers_like_a_missing_one_over_graphql(
    client: GraphQLClient, hidden_and_empty: dict[str, Any]
) -> None:
    h = hidden_and_empty["hidden"]
    missing = hidden_and_empty["missing_scope"]
    for q in ("zephyrword", "from:@bob", "zephyrword since:2026-02-03"):
        hidden = await _graphql(client, h["token"], q=q, scope=h["vault"])
        absent = await _graphql(client, h["token"], q=q, scope=missing)
        assert hidden == absent == ([], False, False, False), q
    for since, until in WINDOWS:
        bounds = {"since": since, "until": until}
        hidden = await _graphql(client, h["token"], q="zephyrword", scope=h["vault"], **bounds)
        absent = await _graphql(client, h["token"], q="zephyrword", scope=missing, **bounds)
        assert hidden == absent == ([], False, False, False), (since, until)


async def test_an_authors_hidden_posts_answer_like_none_over_graphql(
    client: GraphQLClient, hidden_and_empty: dict[str, Any]
) -> None:
    h, e = hidden_and_empty["hidden"], hidden_and_empty["empty"]
    # Unbounded: the lobby's January post is found past the hidden ones, as if they were not.
    for q in ("from:@bob", "zephyrword from:@bob", "zephyrword -from:@vic from:bob"):
        hidden = await _graphql(client, h["token"], q=q)
        none = await _graphql(client, e["token"], q=q)
        assert hidden == none == (["old"], False, False, True), q
    hidden = await _graphql(client, h["token"], q="zephyrword", author=_member(h["bob"]))
    none = await _graphql(client, e["token"], q="zephyrword", author=_member(e["bob"]))
    assert hidden == none == (["old"], False, False, True)
    # Bisecting time: every window answers the same, with operators and with arguments.
    for since, until in WINDOWS:
        # Open at the start, a window holds the January post.
        expected = ([], False, False, False) if since else (["old"], False, False, True)
        for q in ("from:@bob", "zephyrword from:@bob"):
            hidden = await _graphql(client, h["token"], q=_bounded(q, since, until))
            none = await _graphql(client, e["token"], q=_bounded(q, since, until))
            assert hidden == none == expected, (q, since, until)
        bounds = {"since": since, "until": until}
        hidden = await _graphql(
            client, h["token"], q="zephyrword", author=_member(h["bob"]), **bounds
        )
        none = await _graphql(
            client, e["token"], q="zephyrword", author=_member(e["bob"]), **bounds
        )
        assert hidden == none == expected, (since, until)


async def test_history_from_before_joining_is_not_counted_either_over_graphql(
    client: GraphQLClient, db: asyncpg.Connection, hidden_and_empty: dict[str, Any]
) -> None:
    """bea joins the vault: she may list it now, but what was posted before is not hers to
    read, so naming the vault or bob still answers as if those posts did not exist."""
    from app.data.tokens import issue_connector_token
    from tests.changes_support import Connector, add_members

    for name in ("hidden", "empty"):
        connector = Connector(client, await issue_connector_token(db, name))
        await connector.apply(add_members("vault", "bea"))
    h, e = hidden_and_empty["hidden"], hidden_and_empty["empty"]
    for q in ("zephyrword in:#vault", "in:#vault", "zephyrword from:@bob", "from:@bob"):
        for since, until in [(None, None), *WINDOWS]:
            typed = _bounded(q, since, until) if until else q
            hidden = await _graphql(client, h["token"], q=typed)
            none = await _graphql(client, e["token"], q=typed)
            assert hidden == none, (typed, hidden, none)
            assert hidden[1:3] == (False, False), typed
    for since, until in [(None, None), *WINDOWS]:
        bounds = {"since": since, "until": until}
        hidden = await _graphql(client, h["token"], q="zephyrword", scope=h["vault"], **bounds)
        none = await _graphql(client, e["token"], q="zephyrword", scope=e["vault"], **bounds)
        assert hidden == none == ([], False, False, False), (since, until)


async def test_a_left_channel_is_no_filter_but_its_readable_posts_are_found(
    client: GraphQLClient, db: asyncpg.Connection, hidden_and_empty: dict[str, Any]
) -> None:
    """bea was in the vault while bob posted one message, then left: she still reads it (the
    audience it was written for), from: finds it, and the vault itself (scopeId, in:) is a
    conversation she may not list, the same empty filter as a missing one."""
    from app.data.tokens import issue_connector_token
    from tests.changes_support import Connector, add_members, post, remove_members

    e = hidden_and_empty["empty"]
    connector = Connector(client, await issue_connector_token(db, "empty"))
    await connector.apply(add_members("vault", "bea"))
    await connector.apply(post("kept", "vault", "bob", "zephyrword kept", "2026-03-02T10:00:00Z"))
    await connector.apply(remove_members("vault", "bea"))
    assert await _graphql(client, e["token"], q="zephyrword from:@bob") == (
        ["kept"],
        True,
        False,
        True,
    )
    missing = hidden_and_empty["missing_scope"]
    left = await _graphql(client, e["token"], q="zephyrword", scope=e["vault"])
    assert left == await _graphql(client, e["token"], q="zephyrword", scope=missing)
    assert left == ([], False, False, False)
    assert await _graphql(client, e["token"], q="zephyrword in:#vault") == left


def _member(member_id: str) -> dict[str, str]:
    return {"kind": "MEMBER", "id": member_id}


@pytest.fixture
async def mcp(dsn: str, settings: Settings) -> AsyncIterator[McpApp]:
    async with mcp_app(settings, dsn) as app:
        yield app


def _found(result: dict[str, Any]) -> tuple[object, ...]:
    return (
        [m["text"] for m in result["messages"]],
        result["budget_exhausted"],
        result["next_cursor"] is not None,
    )


async def test_hidden_channels_and_authors_answer_like_missing_ones_over_mcp(
    mcp: McpApp, hidden_and_empty: dict[str, Any]
) -> None:
    h, e = hidden_and_empty["hidden"], hidden_and_empty["empty"]
    async with mcp.client(h["token"]) as hidden, mcp.client(e["token"]) as empty:

        async def both(**arguments: Any) -> tuple[tuple[object, ...], tuple[object, ...]]:
            arguments.setdefault("limit", 1)
            one = ok(await hidden.call_tool("search_messages", arguments))
            other = ok(await empty.call_tool("search_messages", arguments))
            return _found(one), _found(other)

        # channel: the private vault by key and by id, and a key nothing has.
        in_vault = ok(
            await hidden.call_tool(
                "search_messages", {"query": "zephyrword", "channel": "vault", "limit": 1}
            )
        )
        by_id = ok(
            await hidden.call_tool(
                "search_messages", {"query": "zephyrword", "channel": h["vault"], "limit": 1}
            )
        )
        nowhere = ok(
            await hidden.call_tool(
                "search_messages", {"query": "zephyrword", "channel": "no-such", "limit": 1}
            )
        )
        assert _found(in_vault) == _found(by_id) == _found(nowhere) == ([], False, False)
        # author, and from: with time bounds: bob's hidden posts answer like none at all.
        one, other = await both(query="zephyrword", author="bob")
        assert one == other and one[1:] == (False, False)
        for since, until in WINDOWS:
            bounds = {"since": since, "until": until} if since else {"until": until}
            expected = ([], False, False) if since else (["zephyrword in the lobby"], False, False)
            one, other = await both(query="zephyrword", author="bob", **bounds)
            assert one == other == expected, (since, until)
            one, other = await both(query=_bounded("from:@bob", since, until))
            assert one == other == expected, (since, until)
