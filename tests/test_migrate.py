"""Migrations: shipped in the package, ordered, recorded with checksums, idempotent, safe to run
concurrently, and loud when there are none."""

from __future__ import annotations

import asyncio
import shutil
import tomllib
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from app.db import connect
from app.migrate import (
    MigrationError,
    load_migrations,
    migrate,
    packaged_migrations,
    pending,
)
from tests.conftest import on_citus
from tests.rows import one

_SOURCE_TREE_MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


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
    for path in _SOURCE_TREE_MIGRATIONS.glob("*.sql"):
        shutil.copy(path, tmp_path / path.name)
    first = sorted(tmp_path.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- edited\n")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        await migrate(db, tmp_path)


def test_migrations_are_found_through_the_package_resources() -> None:
    # What an installed wheel reads is the package `app.migrations`, not a folder next to the
    # working directory: its files are exactly the repository's migrations/*.sql.
    packaged = sorted(e.name for e in packaged_migrations().iterdir() if e.name.endswith(".sql"))
    assert packaged == sorted(p.name for p in _SOURCE_TREE_MIGRATIONS.glob("*.sql"))
    # schema.sql ships too (the current schema to read), but is never applied.
    assert "schema.sql" in packaged
    assert [m.name for m in load_migrations()] == [n for n in packaged if n != "schema.sql"]


def test_the_packaging_lists_every_package_of_app() -> None:
    # pyproject.toml lists packages explicitly (find cannot map app.migrations onto migrations/);
    # a new subpackage of app/ missing from that list would be absent from the wheel.
    pyproject = tomllib.loads((_SOURCE_TREE_MIGRATIONS.parent / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    app_dir = _SOURCE_TREE_MIGRATIONS.parent / "app"
    on_disk = {
        ".".join(init.parent.relative_to(app_dir.parent).parts)
        for init in app_dir.rglob("__init__.py")
    }
    assert listed == on_disk | {"app.migrations"}


async def test_migrating_from_an_empty_source_fails_loudly(empty_dsn: str, tmp_path: Path) -> None:
    # An installation without its migrations must not "apply nothing" and look ready.
    conn = await connect(empty_dsn)
    try:
        with pytest.raises(MigrationError, match="no migrations found"):
            await migrate(conn, tmp_path)
        with pytest.raises(MigrationError, match="no migrations found"):
            await pending(conn, tmp_path)
        assert await conn.fetchval("select to_regclass('schema_migrations')") is None
    finally:
        await conn.close()


def test_a_missing_source_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(MigrationError, match="cannot read migrations"):
        load_migrations(tmp_path / "absent")


async def test_a_database_in_use_upgrades_to_the_latest_migration(
    empty_dsn: str, tmp_path: Path
) -> None:
    # A deployment migrated to 016 (on Citus: distributed by that run) takes 017 later, which
    # replaces triggers on tables that are distributed by then.
    import io

    from app.workspace_import.importer import import_fixture
    from tests.personas import globex

    every = sorted(_SOURCE_TREE_MIGRATIONS.glob("[0-9]*.sql"))
    for path in every[:16]:
        shutil.copy(path, tmp_path / path.name)
    conn = await connect(empty_dsn)
    try:
        assert len(await migrate(conn, tmp_path)) == 16
        assert await migrate(conn) == [p.name for p in every[16:]]
        await import_fixture(conn, globex(), io.StringIO())
        await conn.execute("update messages set body = 'hello' where key = 'x1'")
        kept = await conn.fetch(
            "select lexeme, documents from search_term_stats where documents <> 0 order by 1"
        )
        assert [tuple(r) for r in kept] == [("hello", 1)]
        assert tuple(
            one(await conn.fetchrow("select documents, lexemes from search_corpus_stats"))
        ) == (
            1,
            1,
        )
    finally:
        await conn.close()


async def test_an_existing_database_is_distributed_by_migrate_once_workers_join(
    empty_dsn: str, settings: Any
) -> None:
    """docs/scale.md, An existing database: a Recall database in use on a single server (here a
    Citus database with no workers yet, so nothing is distributed) keeps its rows, searches
    and tokens when the workers are added and `recall migrate` runs again."""
    if not on_citus():
        pytest.skip("distribution is a Citus property")
    from app.data.tokens import issue_actor_token
    from tests.client import graphql_client
    from tests.message_search_support import keys
    from tests.personas import load_personas

    conn = await connect(empty_dsn)
    try:
        workers = await conn.fetch(
            "select nodename, nodeport from pg_dist_node where groupid > 0 order by nodeport"
        )
        for w in workers:
            await conn.execute("select citus_remove_node($1, $2)", w["nodename"], w["nodeport"])
        await migrate(conn)
        assert await conn.fetchval("select count(*) from pg_dist_partition") == 0
        await load_personas(conn)
        alice = await issue_actor_token(conn, "acme", "member", "alice")
        async with graphql_client(settings, empty_dsn) as client:
            before = await keys(client, alice, "Acme")
        assert before
        derived = (
            "select (select count(*) from search_documents), (select count(*) from"
            " search_readiness), (select sum(documents) from search_term_stats),"
            " (select documents from search_corpus_stats where workspace_id ="
            " (select workspace_id from workspace_keys where key = 'acme'))"
        )
        rows_before = tuple(one(await conn.fetchrow(derived)))

        for w in workers:
            await conn.execute("select citus_add_node($1, $2)", w["nodename"], w["nodeport"])
        await migrate(conn)
        distributed = await conn.fetchval(
            "select count(*) from pg_dist_partition where partmethod = 'h'"
        )
        assert distributed > 10
        # The rows moved to the workers' shards: none is left in the coordinator's tables.
        placements = await conn.fetchval(
            "select count(distinct nodeport) from pg_dist_shard_placement p"
            " join pg_dist_shard s using (shardid)"
            " where s.logicalrelid = 'messages'::regclass"
        )
        assert placements == len(workers)
        async with graphql_client(settings, empty_dsn) as client:
            assert await keys(client, alice, "Acme") == before
        # No trigger fired on the copy: no document indexed twice, no term counted twice.
        assert tuple(one(await conn.fetchrow(derived))) == rows_before
    finally:
        await conn.close()
