"""The MCP tests' client: the SDK's own Client over Streamable HTTP to the in-process app (the
same app and pools the GraphQL test client uses), or over stdio to `recall mcp`."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from app.server import create_app, in_process
from app.settings import Settings

RECALL = Path(sys.executable).with_name("recall")
# A loopback Host: /mcp's DNS-rebinding protection accepts only those (app.mcp.server).
BASE = "http://127.0.0.1"


class McpApp:
    """An app with its lifespan running; `client(token)` opens an MCP client on it and
    `http` speaks plain HTTP to it (status codes, headers)."""

    def __init__(self, asgi: Any) -> None:
        self.asgi = asgi

    def http(self, token: str | None = None) -> httpx2.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token is not None else {}
        return httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.asgi), base_url=BASE, headers=headers
        )

    @asynccontextmanager
    async def client(self, token: str) -> AsyncIterator[Client]:
        async with (
            self.http(token) as http,
            Client(streamable_http_client(f"{BASE}/mcp", http_client=http)) as client,
        ):
            yield client


@asynccontextmanager
async def mcp_app(settings: Settings, dsn: str) -> AsyncIterator[McpApp]:
    async with in_process(create_app(settings, dsn)) as asgi:
        yield McpApp(asgi)


@asynccontextmanager
async def stdio_client(dsn: str, token: str | None) -> AsyncIterator[Client]:
    """`recall mcp` as a subprocess, RECALL_TOKEN set (unless None)."""
    env = {**os.environ, "DATABASE_URL": dsn, "RECALL_LOG_LEVEL": "warning"}
    env.pop("RECALL_TOKEN", None)
    if token is not None:
        env["RECALL_TOKEN"] = token
    params = StdioServerParameters(command=str(RECALL), args=["mcp"], env=env)
    async with Client(params) as client:
        yield client


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a call that must succeed."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


def text(result: CallToolResult) -> str:
    """The text of a result's first content block."""
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def error_code(result: CallToolResult) -> str:
    """The Recall error code of a tool error: its text is `CODE: message`, and it carries no
    structured content (which would have to match the tool's outputSchema)."""
    assert result.is_error, result.structured_content
    assert result.structured_content is None, result.structured_content
    code, _, _ = text(result).partition(": ")
    return code
