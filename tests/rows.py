"""Rows a test reads back: asyncpg's `fetchrow` may find none, where the test knows its row is
there (it just wrote it, or the fixture did). `one` says so, and names the miss if it is not."""

from __future__ import annotations

import asyncpg


def one(record: asyncpg.Record | None) -> asyncpg.Record:
    assert record is not None, "expected a row, found none"
    return record
