#!/usr/bin/env python3
"""An agent runtime's turn through MCP: start_turn → search_history → post_reply.

    pip install 'mcp>=2.3,<3'            # or, in this repository: pip install -e .
    RECALL_AGENT_TOKEN=rca_... python examples/mcp_turn.py \\
        --scope dm-alice-atlas --requester alice "postgres migration"

The same turn as examples/agent_turn.py, with the official MCP SDK's client instead of GraphQL
(docs/mcp.md). One agent token does everything: `start_turn` returns the turn's id, and
`search_history` and `post_reply` name it (`turn`); the turn, not an argument, decides whose
history is searched and where the reply goes. Everything `search_history` shows joins the
turn's evidence, which `post_reply` checks before delivering.

Environment: RECALL_MCP_URL (default http://127.0.0.1:8000/mcp) and RECALL_AGENT_TOKEN
(`recall serve --demo` prints one; `recall token agent WORKSPACE KEY` mints one).
Exit status: 0 when the reply was delivered, 3 when it was withheld, 1 on a tool error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent


class ToolFailed(Exception):
    pass


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result; ToolFailed with Recall's error code on a tool error."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        # A tool error's text is `CODE: message` (docs/mcp.md, Errors).
        texts = [b.text for b in result.content if isinstance(b, TextContent)]
        raise ToolFailed(f"{tool}: {' '.join(texts)}")
    return dict(result.structured_content or {})


async def turn(url: str, token: str, args: argparse.Namespace) -> int:
    headers = {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = [t.name for t in (await client.list_tools()).tools]
        print(f"tools: {', '.join(listed)}")
        started = await call(
            client,
            "start_turn",
            {"conversation": args.scope, "requester": args.requester, "window": args.window},
        )
        turn_id = started["turn"]
        print(f"turn {turn_id} in {args.scope} for {args.requester}")
        found = await call(
            client, "search_history", {"turn": turn_id, "query": args.query, "limit": args.limit}
        )
        print(f"search_history {args.query!r}: status {found['status']}, {found['count']} hits")
        for hit in found["hits"]:
            print(f"[{hit['message_id']}] {hit['where']} {hit['speaker']}, {hit['ago']}:")
            print(f"    {hit['text']}")
        if found["hits"]:
            body = f"Here is what I found about “{args.query}”: " + " / ".join(
                h["text"] for h in found["hits"][:3]
            )
        else:
            body = f"I found nothing about “{args.query}”."
        reply = await call(
            client,
            "post_reply",
            # The same client_id on a retry posts once.
            {"turn": turn_id, "body": body[:2000], "client_id": f"{turn_id}-reply"},
        )
    if reply["delivered"]:
        print(f"reply delivered as {reply['message_id']}")
        return 0
    print(f"reply withheld: {reply['withheld_reason']}")
    return 3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("query", help="what to search the agent's history for")
    p.add_argument("--scope", required=True, help="the conversation: a scope key or id")
    p.add_argument("--requester", required=True, help="who asked: a member key or id")
    p.add_argument("--window", type=int, default=0, help="messages already in context")
    p.add_argument("--limit", type=int, default=5, help="hits, 1-20 (default 5)")
    p.add_argument("--url", default=os.environ.get("RECALL_MCP_URL", "http://127.0.0.1:8000/mcp"))
    p.add_argument("--token", default=os.environ.get("RECALL_AGENT_TOKEN"))
    args = p.parse_args()
    if not args.token:
        p.error("set RECALL_AGENT_TOKEN (or --token) to an agent token (rca_…)")
    try:
        return asyncio.run(turn(args.url, args.token, args))
    except ToolFailed as e:
        print(e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
