"""Test harness: real PostgreSQL, one fresh database per test, GraphQL over HTTP (tests.client).

The server is the embedded PostgreSQL (under .recall/test-pg) unless TEST_DATABASE_URL names
one (any database on it; tests create and drop their own). Each test gets a database cloned
from a migrated template, so tests are isolated and a clone costs milliseconds.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

from app.db import connect
from app.migrate import migrate
from app.settings import Settings
from tests.client import GraphQLClient, graphql_client
from tests.history_support import load_history_personas, start_turn

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


@pytest.fixture
async def client(dsn: str, settings: Settings) -> AsyncIterator[GraphQLClient]:
    async with graphql_client(settings, dsn) as client:
        yield client


@pytest.fixture
def issue_token(db: asyncpg.Connection) -> Any:
    """`await issue_token("member", "acme", "alice")` → a bearer token."""
    from app.data.tokens import issue_actor_token

    async def issue(kind: str, workspace: str, actor: str) -> str:
        return await issue_actor_token(db, workspace, kind, actor)

    return issue


@pytest.fixture
async def history_personas(db: asyncpg.Connection) -> None:
    """The history personas (tests.history_support.history_acme, and globex) are loaded."""
    await load_history_personas(db)


@pytest.fixture
async def alice_turn(
    history_personas: None, client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> str:
    """The most common historySearch set-up: a turn token of helper's turn in its DM with
    alice, alice asking, on the history personas."""
    return await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
