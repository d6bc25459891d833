#!/usr/bin/env python3
"""Search Recall's messageSearch as a person, following the cursor across pages (gql + httpx).

    pip install 'gql[httpx]'            # or, in this repository: pip install -e '.[examples]'
    RECALL_TOKEN=rcm_... python examples/python_search.py "postgres migration" --first 5

Environment: RECALL_URL (default http://127.0.0.1:8000/graphql) and RECALL_TOKEN, a member
token (`recall serve --demo` prints one; `recall token member WORKSPACE KEY` mints one).
Exit status: 0 on success, 1 on a GraphQL error (its code is printed), 2 on bad usage.
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

SEARCH = """
query Search($query: String!, $first: Int, $after: String, $since: DateTime, $until: DateTime) {
  messageSearch(query: $query, first: $first, after: $after, since: $since, until: $until) {
    edges {
      node {
        key body createdAt
        scope { kind name parent { name } }
        author { __typename ... on Member { name } ... on Agent { name } ... on DeletedAgent { name } }
      }
      highlights { start end }
    }
    pageInfo { hasNextPage endCursor }
    candidateBudgetExhausted
  }
}
"""


def marked(body: str, highlights: list[dict[str, int]]) -> str:
    """The body with each highlight in «». Ranges are UTF-16 code units (JavaScript string
    indices), so slice the UTF-16 encoding, two bytes a unit."""
    units = body.encode("utf-16-le")
    out, at = [], 0
    for h in highlights:
        out.append(units[2 * at : 2 * h["start"]].decode("utf-16-le"))
        out.append("«" + units[2 * h["start"] : 2 * h["end"]].decode("utf-16-le") + "»")
        at = h["end"]
    out.append(units[2 * at :].decode("utf-16-le"))
    return "".join(out)


def where(scope: dict[str, Any]) -> str:
    if scope["kind"] == "thread":
        parent = scope["parent"]["name"] if scope["parent"] and scope["parent"]["name"] else "dm"
        return f"thread in #{parent}"
    return f"#{scope['name']}" if scope["name"] else "DM"


async def search(url: str, token: str, args: argparse.Namespace) -> int:
    transport = HTTPXAsyncTransport(url=url, headers={"Authorization": f"Bearer {token}"})
    variables: dict[str, Any] = {"query": args.query, "first": args.first}
    if args.since:
        variables["since"] = args.since
    if args.until:
        variables["until"] = args.until
    hits = pages = 0
    async with Client(transport=transport) as session:
        after: str | None = None
        while pages < args.max_pages:
            request = GraphQLRequest(SEARCH, variable_values={**variables, "after": after})
            result = (await session.execute(request))["messageSearch"]
            pages += 1
            edges = result["edges"]
            note = (
                " (candidate budget exhausted; continuing)"
                if result["candidateBudgetExhausted"]
                else ""
            )
            print(f"page {pages}: {len(edges)} hits{note}")
            for edge in edges:
                node = edge["node"]
                hits += 1
                print(
                    f"[{node['key']}] {node['createdAt']} {where(node['scope'])}"
                    f" {node['author']['name']}: {marked(node['body'], edge['highlights'])}"
                )
            # An empty page with hasNextPage is not the end: keep following endCursor.
            if not result["pageInfo"]["hasNextPage"]:
                break
            after = result["pageInfo"]["endCursor"]
    print(f"{hits} hits in {pages} pages")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", help='words to find, e.g. "postgres migration"')
    parser.add_argument("--first", type=int, default=10, help="hits per page (1-100)")
    parser.add_argument("--max-pages", type=int, default=10, help="stop after this many pages")
    parser.add_argument("--since", help="ISO 8601 time, inclusive (e.g. 2026-03-01T00:00:00Z)")
    parser.add_argument("--until", help="ISO 8601 time, exclusive")
    parser.add_argument("--token", default=os.environ.get("RECALL_TOKEN"), help="member token")
    parser.add_argument(
        "--url", default=os.environ.get("RECALL_URL", "http://127.0.0.1:8000/graphql")
    )
    args = parser.parse_args()
    if not args.token:
        parser.error("set RECALL_TOKEN (or --token) to a member token")
    try:
        return asyncio.run(search(args.url, args.token, args))
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
