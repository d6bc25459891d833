#!/usr/bin/env python3
"""An agent runtime's turn against Recall: start a turn, search history, post a reply.

    pip install 'gql[httpx]'            # or, in this repository: pip install -e '.[examples]'
    RECALL_AGENT_TOKEN=rca_... python examples/agent_turn.py \\
        --scope dm-alice-atlas --requester alice "postgres migration"

1. With the agent token (`rca_`), read the agent's scopes and the workspace's members, to turn
   the scope and requester keys into ids (a runtime usually has these ids already).
2. `startTurn(scopeId, requesterId, window)` → a turn token (`rct_`) for this turn only.
3. With the turn token, `historySearch(query)`: the agent's own transcripts, as the requester may
   see them in that conversation. Everything it shows joins the turn's evidence.
4. With the turn token, `postReply(body)`: the reply's provenance is that evidence; if it may
   not be shown in the conversation it is not kept (`delivered: false`, `withheldReason`).

Environment: RECALL_URL (default http://127.0.0.1:8000/graphql) and RECALL_AGENT_TOKEN
(`recall serve --demo` prints one; `recall token agent WORKSPACE KEY` mints one).
Exit status: 0 when the reply was delivered, 3 when it was withheld, 1 on a GraphQL error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from gql import Client, GraphQLRequest
from gql.transport.exceptions import (
    TransportConnectionFailed,
    TransportQueryError,
    TransportServerError,
)
from gql.transport.httpx import HTTPXAsyncTransport

DIRECTORY = """
{ viewer { agent { key name }
           workspace { scopes { id key kind name } members { id key name } } } }
"""
START_TURN = """
mutation Start($scope: ID!, $requester: ID!, $window: Int) {
  startTurn(scopeId: $scope, requesterId: $requester, window: $window) {
    turn { id createdAt }
    token
  }
}
"""
HISTORY_SEARCH = """
query History($query: String!, $first: Int) {
  historySearch(query: $query, first: $first) {
    status count
    edges { node { where speaker ago text score message { id key } } }
  }
}
"""
POST_REPLY = """
mutation Reply($body: String!) {
  postReply(body: $body) { delivered withheldReason message { id key createdAt } }
}
"""


async def call(url: str, token: str, document: str, **variables: Any) -> dict[str, Any]:
    """One GraphQL request with this token (each step of a turn uses its own token)."""
    transport = HTTPXAsyncTransport(url=url, headers={"Authorization": f"Bearer {token}"})
    async with Client(transport=transport) as session:
        result: dict[str, Any] = await session.execute(
            GraphQLRequest(document, variable_values=variables)
        )
        return result


def by_key(items: list[dict[str, Any]], key: str, what: str) -> str:
    for item in items:
        if item["key"] == key:
            return str(item["id"])
    raise SystemExit(f"error: no {what} with key {key!r} (known: {[i['key'] for i in items]})")


def compose_reply(query: str, hits: list[dict[str, Any]]) -> str:
    if not hits:
        return f"I found nothing earlier about “{query}”."
    lines = [f"Here is what I found about “{query}”:"]
    lines += [f"- {h['where']}, {h['ago']}, {h['speaker']}: {h['text']}" for h in hits[:3]]
    return "\n".join(lines)


async def turn(url: str, agent_token: str, args: argparse.Namespace) -> int:
    viewer = (await call(url, agent_token, DIRECTORY))["viewer"]
    workspace = viewer["workspace"]
    scope_id = by_key(workspace["scopes"], args.scope, "scope of this agent")
    requester_id = by_key(workspace["members"], args.requester, "member")
    print(f"agent {viewer['agent']['name']}: turn in {args.scope} for {args.requester}")

    started = (
        await call(
            url, agent_token, START_TURN, scope=scope_id, requester=requester_id, window=args.window
        )
    )["startTurn"]
    turn_token = started["token"]
    print(f"started turn {started['turn']['id']} at {started['turn']['createdAt']}")

    found = (await call(url, turn_token, HISTORY_SEARCH, query=args.query, first=args.first))[
        "historySearch"
    ]
    hits = [e["node"] for e in found["edges"]]
    print(f"historySearch {args.query!r}: status {found['status']}, {found['count']} hits")
    for hit in hits:
        print(
            f"[{hit['message']['key']}] {hit['score']:.3f} {hit['where']} {hit['ago']}"
            f" {hit['speaker']}: {hit['text']}"
        )

    reply = (await call(url, turn_token, POST_REPLY, body=compose_reply(args.query, hits)))[
        "postReply"
    ]
    if reply["delivered"]:
        print(f"reply delivered as {reply['message']['key']}")
        return 0
    print(f"reply withheld: {reply['withheldReason']}")
    return 3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", help="what to look for in the agent's history")
    parser.add_argument("--scope", required=True, help="key of the conversation to answer in")
    parser.add_argument("--requester", required=True, help="key of the member being answered")
    parser.add_argument("--window", type=int, default=30, help="messages already in context")
    parser.add_argument("--first", type=int, default=5, help="hits to fetch (1-20)")
    parser.add_argument("--token", default=os.environ.get("RECALL_AGENT_TOKEN"), help="agent token")
    parser.add_argument(
        "--url", default=os.environ.get("RECALL_URL", "http://127.0.0.1:8000/graphql")
    )
    args = parser.parse_args()
    if not args.token:
        parser.error("set RECALL_AGENT_TOKEN (or --token) to an agent token")
    try:
        return asyncio.run(turn(args.url, args.token, args))
    except TransportQueryError as e:
        for error in e.errors or []:
            code = (error.get("extensions") or {}).get("code")
            print(f"error {code}: {error.get('message')}", file=sys.stderr)
        return 1
    except TransportServerError as e:  # 401 (bad token), 413, ...
        print(f"error: HTTP {e.code} from {args.url}: {e}", file=sys.stderr)
        return 1
    except TransportConnectionFailed as e:
        print(f"error: request to {args.url} failed: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
