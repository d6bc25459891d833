"""Migrations: ordered, recorded with checksums, idempotent, safe to run concurrently."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import asyncpg
import pytest

from app.db import connect
from app.migrate import MIGRATIONS_DIR, MigrationError, load_migrations, migrate, pending


async def test_all_migrations_are_applied_and_recorded(db: asyncpg.Connection) -> None:
    rows = await db.fetch("select version, name, checksum from schema_migrations order by version")
    files = load_migrations()
    assert [(r["version"], r["name"], r["checksum"]) for r in rows] == [
        (m.version, m.name, m.checksum) for m in files
    ]
    assert await pending(db) == []


async def test_migrating_again_applies_nothing(db: asyncpg.Connection) -> None:
    assert await migrate(db) == []


async def test_concurrent_migrations_apply_each_file_once(empty_dsn: str) -> None:
    conns = [await connect(empty_dsn) for _ in range(3)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
    finally:
        for c in conns:
            await c.close()
    applied = [name for result in results for name in result]
    assert sorted(applied) == sorted(m.name for m in load_migrations())


async def test_an_edited_applied_migration_is_refused(
    db: asyncpg.Connection, tmp_path: Path
) -> None:
    for path in MIGRATIONS_DIR.glob("*.sql"):
        shutil.copy(path, tmp_path / path.name)
    first = sorted(tmp_path.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        await migrate(db, tmp_path)
