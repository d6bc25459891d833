"""Helpers shared by the messageSearch tests: the query, and calling it by persona."""

from __future__ import annotations

from typing import Any

import asyncpg

from app.request.ids import encode_id

SEARCH = """
query Search(
  $q: String!, $first: Int, $after: String, $scope: ID, $author: AuthorFilter,
  $since: DateTime, $until: DateTime
) {
  messageSearch(
    query: $q, first: $first, after: $after, scopeId: $scope, author: $author,
    since: $since, until: $until
  ) {
    edges {
      cursor
      node {
        id key seq body
        scope { key kind name parent { key } }
        author { __typename ... on Member { key } ... on Agent { key } }
      }
      highlights { start end }
    }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
  }
}
"""


async def search(client: Any, token: str, q: str, **variables: Any) -> Any:
    """The messageSearch connection; fails the test on any error."""
    data = await client.gql(SEARCH, {"q": q, **variables}, token=token)
    return data["messageSearch"]


async def keys(client: Any, token: str, q: str, **variables: Any) -> list[str]:
    """Keys of the first page (first defaults to 100 here, so small fixtures fit one page)."""
    variables.setdefault("first", 100)
    connection = await search(client, token, q, **variables)
    return [e["node"]["key"] for e in connection["edges"]]


async def global_id(db: asyncpg.Connection, type_name: str, key: str) -> str:
    table = {"Member": "actors", "Agent": "actors", "Scope": "scopes", "Message": "messages"}
    pk: int = await db.fetchval(f"select id from {table[type_name]} where key = $1", key)
    assert pk is not None, key
    return encode_id(type_name, pk)


def author(kind: str, id_: str) -> dict[str, str]:
    return {"kind": kind, "id": id_}


def workspace(
    messages: list[tuple[str, str, str, str]], *, key: str = "lab", minutes: int = 0
) -> dict[str, Any]:
    """A fixture with people ann and ben, ann's agent bot, public `room`, ben's DM `dm-ben`;
    messages are (key, scope, author, body), one minute apart in list order."""
    return {
        "workspace": {"key": key, "name": key.title()},
        "namespace": f"slack:{key}",
        "members": [{"key": "ann", "name": "Ann"}, {"key": "ben", "name": "Ben"}],
        "agents": [{"key": "bot", "name": "Bot", "owner": "ann"}],
        "scopes": [
            {
                "key": "room",
                "kind": "channel",
                "visibility": "public",
                "name": "room",
                "members": ["ann", "ben", "bot"],
            },
            {"key": "dm-ben", "kind": "dm", "members": ["ben", "bot"]},
        ],
        "memories": [],
        "messages": [
            {
                "key": k,
                "scope": s,
                "author": a,
                "body": b,
                "at": f"2026-01-{1 + (minutes + i) // 1440:02d}T"
                f"{(minutes + i) // 60 % 24:02d}:{(minutes + i) % 60:02d}:00Z",
            }
            for i, (k, s, a, b) in enumerate(messages)
        ],
    }


async def _sealer_for(db: asyncpg.Connection, workspace: str, member: str) -> Any:
    from app.message_search.opaque import Sealer

    key = await db.fetchval("select value from recall_secrets where name = 'cursors'")
    reader = await db.fetchval(
        "select a.workspace_id || ':member:' || a.id || ':0' from actors a"
        " join workspaces w on w.id = a.workspace_id where w.key = $1 and a.key = $2",
        workspace,
        member,
    )
    return Sealer(key), reader


async def open_cursor(db: asyncpg.Connection, cursor: str, workspace: str, member: str) -> Any:
    """A messageSearch cursor's sealed payload, opened with the installation's key as the
    server opens it (app.message_search.opaque): what it would say if it could be read."""
    sealer, reader = await _sealer_for(db, workspace, member)
    return sealer.open(cursor, reader)


async def forge_cursor(db: asyncpg.Connection, payload: Any, workspace: str, member: str) -> str:
    """A cursor sealed with the installation's own key: what only someone holding the server's
    secret could send (the positions it may hold are checked all the same)."""
    sealer, reader = await _sealer_for(db, workspace, member)
    forged: str = sealer.seal(payload, reader)
    return forged
