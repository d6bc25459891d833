"""The statements the app's own pool sends, recorded with asyncpg's query logger."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import pytest

import app.db
from app.settings import Settings
from tests.client import GraphQLClient, graphql_client

# Statements without a plan: transaction control, and the session settings of a connection.
_NO_PLAN = re.compile(r"^\s*(begin|commit|rollback|set|reset|show|select\s+pg_)", re.I)


class Recorder:
    """The statements of the app's pool, as (query, args), in the order they ran."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def __call__(self, record: Any) -> None:
        if record.exception is None and not _NO_PLAN.match(record.query):
            self.statements.append((record.query, tuple(record.args or ())))

    def take(self) -> list[tuple[str, tuple[Any, ...]]]:
        taken, self.statements = self.statements, []
        return taken


@asynccontextmanager
async def recording_client(
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    dsn: str,
    setup: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
    log_listener: Callable[[Any, asyncpg.PostgresLogMessage], None] | None = None,
) -> AsyncIterator[tuple[GraphQLClient, Recorder]]:
    """A client of the app whose every pooled connection reports its statements (after
    `setup`, if given, has run on it), and its notices and log messages to `log_listener`."""
    recorder = Recorder()
    original = app.db._init_connection
    original_reset = app.db._keep_session

    async def init(conn: asyncpg.Connection) -> None:
        await original(conn)
        if setup is not None:
            await setup(conn)
        conn.add_query_logger(recorder)
        if log_listener is not None:
            conn.add_log_listener(log_listener)

    async def reset(conn: asyncpg.Connection) -> None:
        # asyncpg drops a connection's log listeners when the pool takes it back.
        await original_reset(conn)
        if log_listener is not None:
            conn.add_log_listener(log_listener)

    monkeypatch.setattr(app.db, "_init_connection", init)
    monkeypatch.setattr(app.db, "_keep_session", reset)
    async with graphql_client(settings, dsn) as client:
        yield client, recorder
