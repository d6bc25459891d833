"""Numbered plain-SQL migrations, applied in order under an advisory lock.

Each applied file is recorded with its SHA-256; a file that changed after it was applied is
refused, because the database would no longer match what the code expects.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import asyncpg


def _migrations_dir() -> Path:
    # A source checkout (editable install) keeps them beside the package; an installed wheel
    # (the Docker image) runs from a folder that holds `migrations/`.
    beside_package = Path(__file__).resolve().parent.parent / "migrations"
    return beside_package if beside_package.is_dir() else Path.cwd() / "migrations"


MIGRATIONS_DIR = _migrations_dir()
# Arbitrary constant: every Recall process migrating the same database takes this lock.
_LOCK_KEY = 0x5245_4341_4C4C
_NAME = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")


class MigrationError(Exception):
    """A migration could not be applied, or an applied one was edited."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file name not understood: {path.name}")
        found.append(Migration(int(match.group(1)), path.name, path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError("two migrations share a version number")
    return found


_BOOKKEEPING = """
create table if not exists schema_migrations (
    version integer primary key,
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now()
)
"""


async def migrate(conn: asyncpg.Connection, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations; return the names applied. Safe to run concurrently."""
    migrations = load_migrations(directory)
    applied_now: list[str] = []
    await conn.execute("select pg_advisory_lock($1)", _LOCK_KEY)
    try:
        await conn.execute(_BOOKKEEPING)
        rows = await conn.fetch("select version, name, checksum from schema_migrations")
        applied = {r["version"]: r for r in rows}
        for migration in migrations:
            record = applied.get(migration.version)
            if record is not None:
                if record["checksum"] != migration.checksum:
                    raise MigrationError(
                        f"migration {migration.name} was changed after it was applied; "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            async with conn.transaction():
                await conn.execute(migration.sql)
                await conn.execute(
                    "insert into schema_migrations (version, name, checksum) values ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            applied_now.append(migration.name)
    finally:
        await conn.execute("select pg_advisory_unlock($1)", _LOCK_KEY)
    return applied_now


async def pending(conn: asyncpg.Connection, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Names of migrations not yet applied (for /readyz)."""
    exists = await conn.fetchval("select to_regclass('schema_migrations') is not null")
    done: set[int] = set()
    if exists:
        done = {r["version"] for r in await conn.fetch("select version from schema_migrations")}
    return [m.name for m in load_migrations(directory) if m.version not in done]
