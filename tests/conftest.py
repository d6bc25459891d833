"""Test harness: real PostgreSQL, one fresh database per test, GraphQL over HTTP.

The server is the embedded PostgreSQL (under .recall/test-pg) unless TEST_DATABASE_URL names
one (any database on it; tests create and drop their own). Each test gets a database cloned
from a migrated template, so tests are isolated and a clone costs milliseconds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest

from app.db import connect
from app.migrate import migrate
from app.server import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def _with_database(dsn: str, name: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit(parts._replace(path="/" + name))


@pytest.fixture(scope="session")
def server_dsn() -> str:
    """A DSN of a database on the test server, used to create and drop test databases."""
    configured = os.environ.get("TEST_DATABASE_URL")
    if configured:
        return configured
    from app.embedded_db import embedded_database_url

    return embedded_database_url(ROOT / ".recall" / "test-pg")


@pytest.fixture(scope="session")
async def template_name(server_dsn: str) -> AsyncIterator[str]:
    name = f"recall_tpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = await asyncpg.connect(server_dsn)
    await admin.execute(f'create database "{name}"')
    conn = await connect(_with_database(server_dsn, name))
    await migrate(conn)
    await conn.close()
    try:
        yield name
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@pytest.fixture
async def dsn(server_dsn: str, template_name: str) -> AsyncIterator[str]:
    """A fresh, migrated, empty database for this test."""
    name = f"recall_t_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'create database "{name}" template "{template_name}"')
        yield _with_database(server_dsn, name)
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@pytest.fixture
async def empty_dsn(server_dsn: str) -> AsyncIterator[str]:
    """A fresh database with no migrations applied."""
    name = f"recall_e_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(server_dsn)
    try:
        await admin.execute(f'create database "{name}"')
        yield _with_database(server_dsn, name)
    finally:
        await admin.execute(f'drop database if exists "{name}" with (force)')
        await admin.close()


@pytest.fixture
async def db(dsn: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await connect(dsn)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
def settings() -> Settings:
    return Settings(RECALL_EXPOSE_STATEMENT_COUNT=True)  # type: ignore[call-arg]


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


@pytest.fixture
async def client(dsn: str, settings: Settings) -> AsyncIterator[GraphQLClient]:
    app = create_app(settings, dsn)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://recall.test") as http:
            yield GraphQLClient(http)


@pytest.fixture
def issue_token(db: asyncpg.Connection) -> Any:
    """`await issue_token("member", "acme", "alice")` → a bearer token."""
    from app.data.tokens import issue_actor_token

    async def issue(kind: str, workspace: str, actor: str) -> str:
        return await issue_actor_token(db, workspace, kind, actor)

    return issue
