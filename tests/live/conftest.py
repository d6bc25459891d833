"""Fixtures of the live push tests: the personas, their tokens, acme's connector token, and a
real server of the app (tests/live_support.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from tests.live_support import live_server
from tests.personas import load_personas


@dataclass(frozen=True)
class Acme:
    base: str
    tokens: dict[str, str]
    connector: str


@pytest.fixture
async def acme(dsn: str, db: asyncpg.Connection, issue_token: Any) -> AsyncIterator[Acme]:
    from app.data.tokens import issue_connector_token

    await load_personas(db)
    tokens = {m: await issue_token("member", "acme", m) for m in ("alice", "bob", "carol")}
    tokens["helper"] = await issue_token("agent", "acme", "helper")
    connector = await issue_connector_token(db, "acme")
    async with live_server(dsn, RECALL_LIVE_POLL_INTERVAL=0.5) as base:
        yield Acme(base, tokens, connector)
