"""The test client: GraphQL over HTTP to an in-process app, with its lifespan running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from app.server import create_app, in_process
from app.settings import Settings


@dataclass
class GraphQLResult:
    status: int
    body: dict[str, Any]
    statements: int | None

    @property
    def data(self) -> Any:
        return self.body.get("data")

    @property
    def errors(self) -> list[dict[str, Any]]:
        return list(self.body.get("errors") or [])

    @property
    def codes(self) -> list[str]:
        return [e.get("extensions", {}).get("code") for e in self.errors]


class GraphQLClient:
    """Speaks GraphQL over HTTP to the app. `gql()` fails the test on unexpected errors."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def post(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        token: str | None,
        accept: str = "application/graphql-response+json, application/json",
    ) -> GraphQLResult:
        headers = {"accept": accept}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        response = await self.http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        statements = response.headers.get("x-recall-statements")
        try:
            body = response.json()
        except ValueError:
            body = {"raw": response.text}
        return GraphQLResult(response.status_code, body, int(statements) if statements else None)

    async def gql(self, query: str, variables: dict[str, Any] | None = None, *, token: str) -> Any:
        result = await self.post(query, variables, token=token)
        assert result.status == 200 and not result.errors, result.body
        return result.data


@asynccontextmanager
async def graphql_client(settings: Settings, dsn: str) -> AsyncIterator[GraphQLClient]:
    """A client of a fresh app on `dsn`; the app's pool lives as long as the client."""
    app = create_app(settings, dsn)
    async with in_process(app) as asgi:
        transport = httpx.ASGITransport(app=asgi)
        async with httpx.AsyncClient(transport=transport, base_url="http://recall.test") as http:
            yield GraphQLClient(http)
