"""The `recall` command line: one clear stderr line and a non-zero exit on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import asyncpg

from app.data.readers import reader_for_token
from tests.personas import load_personas


def recall(*args: str, dsn: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": dsn}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


async def test_token_command_prints_a_working_token(dsn: str, db: asyncpg.Connection) -> None:
    await load_personas(db)
    done = recall("token", "member", "acme", "alice", dsn=dsn)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip()
    reader = await reader_for_token(db, token)
    alice = await db.fetchval("select id from actors where key = 'alice'")
    assert reader is not None and reader.actor_id == alice and reader.kind == "member"
    stored = await db.fetchval("select count(*) from tokens where token_hash = $1", token.encode())
    assert stored == 0, "the token itself is never stored, only its hash"


async def test_token_for_unknown_actor_fails_with_one_line(
    dsn: str, db: asyncpg.Connection
) -> None:
    await load_personas(db)
    before = await db.fetchval("select count(*) from tokens")
    for args in (
        ("member", "acme", "nobody"),
        ("agent", "acme", "alice"),
        ("member", "nope", "alice"),
    ):
        done = recall("token", *args, dsn=dsn)
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stdout == ""
    assert await db.fetchval("select count(*) from tokens") == before


async def test_bad_arguments_fail_with_one_line(dsn: str) -> None:
    for args in (("token", "robot", "acme", "x"), ("serve", "--port", "abc"), ("frobnicate",), ()):
        done = recall(*args, dsn=dsn)
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


async def test_migrate_prints_json_and_is_idempotent(dsn: str) -> None:
    done = recall("migrate", dsn=dsn)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"applied": []}


async def test_unreachable_database_is_one_line(dsn: str) -> None:
    done = recall("migrate", dsn="postgresql://postgres@127.0.0.1:1/nothing")
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
