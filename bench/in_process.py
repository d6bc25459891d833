"""GraphQL against the app in this process (its lifespan running), for the benchmark's and the
evaluation's own measurements: the real ASGI app and HTTP handling, no socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from app.server import create_app, in_process
from app.settings import Settings

# gql(query, variables, bearer token) -> the response's `data`; a GraphQL error raises.
Gql = Callable[[str, dict[str, Any], str], Awaitable[Any]]


@asynccontextmanager
async def graphql(dsn: str) -> AsyncIterator[Gql]:
    async with in_process(create_app(Settings(), dsn)) as asgi:
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://recall.local") as http:

            async def gql(query: str, variables: dict[str, Any], bearer: str) -> Any:
                r = await http.post(
                    "/graphql", json={"query": query, "variables": variables},
                    headers={"authorization": f"Bearer {bearer}"},
                )  # fmt: skip
                body = r.json()
                if body.get("errors"):
                    raise RuntimeError(json.dumps(body["errors"])[:500])
                return body["data"]

            yield gql
