"""The one data-access contract: what every statement function in app.data runs on.

The CLI works on a bare asyncpg connection, the API on a request's Session (counted, serialized,
pooled); both satisfy this protocol, so each statement is written once for both.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import asyncpg


class Executor(Protocol):
    async def fetch(self, query: str, /, *args: Any) -> list[asyncpg.Record]: ...

    async def fetchrow(self, query: str, /, *args: Any) -> asyncpg.Record | None: ...

    async def fetchval(self, query: str, /, *args: Any) -> Any: ...

    async def execute(self, query: str, /, *args: Any) -> str: ...


class Transactional(Executor, Protocol):
    """An executor that also opens transactions: an asyncpg connection or a request's Session
    (both take turns on one connection)."""

    def transaction(self) -> AbstractAsyncContextManager[Any]: ...
