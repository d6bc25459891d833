"""`recall apply` and `recall token connector`: change files in batches, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncpg

from app.data.readers import reader_for_token
from tests.changes_support import delete, edit, post
from tests.personas import load_personas
from tests.test_cli import recall


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


async def _count(db: asyncpg.Connection, prefix: str) -> int:
    n: int = await db.fetchval("select count(*) from messages where key like $1", prefix + "%")
    return n


async def test_connector_token_is_a_connector_reader(dsn: str, db: asyncpg.Connection) -> None:
    await load_personas(db)
    done = recall("token", "connector", "acme", dsn=dsn)
    assert done.returncode == 0, done.stderr
    reader = await reader_for_token(db, done.stdout.strip())
    acme = await db.fetchval("select id from workspaces where key = 'acme'")
    assert reader is not None and reader.kind == "connector" and reader.workspace_id == acme
    assert reader.destination is None  # it reads no message
    for args in (("connector", "acme", "alice"), ("member", "acme"), ("connector", "nope")):
        refused = recall("token", *args, dsn=dsn)
        assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1


async def test_apply_streams_a_file_in_batches_and_a_rerun_changes_nothing(
    dsn: str, db: asyncpg.Connection, tmp_path: Path
) -> None:
    await load_personas(db)
    lines: list[Any] = [post(f"n{i}", "general", "bob", f"zeppelin note {i}") for i in range(25)]
    lines += ["", edit("n3", "zeppelin note three, edited"), delete("n4")]
    path = _write(tmp_path / "changes.ndjson", lines)
    done = recall("apply", "acme", str(path), "--batch", "10", dsn=dsn)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["changes"] == 27 and summary["batches"] == 3
    assert (summary["applied"], summary["unchanged"]) == (27, 0)
    assert "applied 27 changes" in done.stderr
    assert await _count(db, "n") == 25
    assert await db.fetchval("select body from messages where key = 'n3'") == (
        "zeppelin note three, edited"
    )
    again = json.loads(recall("apply", "acme", str(path), dsn=dsn).stdout)
    assert (again["applied"], again["unchanged"]) == (0, 27)


async def test_a_bad_line_names_itself_and_leaves_earlier_batches(
    dsn: str, db: asyncpg.Connection, tmp_path: Path
) -> None:
    await load_personas(db)
    lines: list[Any] = [post(f"n{i}", "general", "bob", "zeppelin") for i in range(4)]
    lines.insert(2, post("bad", "nowhere", "bob", "unknown scope"))  # line 3, second batch
    path = _write(tmp_path / "changes.ndjson", lines)
    done = recall("apply", "acme", str(path), "--batch", "2", dsn=dsn)
    assert done.returncode != 0 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert f"{path}:3:" in line and "nowhere" in line
    # The first batch (lines 1-2) stays; the batch of line 3 (lines 3-4) was not applied.
    assert sorted(
        tuple(r) for r in await db.fetch("select key from messages where key like 'n%'")
    ) == [
        ("n0",),
        ("n1",),
    ]


async def test_malformed_lines_and_arguments_are_one_line_and_change_nothing(
    dsn: str, db: asyncpg.Connection, tmp_path: Path
) -> None:
    await load_personas(db)
    cases: dict[str, list[Any]] = {
        "json": ['{"postMessage": {"key": "bad-x"'],
        "two": [{"deleteMessage": {"key": "g1"}, "editMessage": {"key": "g1", "body": "x"}}],
        "unknown": [{"frobnicate": {"key": "g1"}}],
        "field": [
            {
                "postMessage": {
                    "key": "bad-x",
                    "scope": "general",
                    "author": "bob",
                    "at": "yesterday",
                    "body": "x",
                }
            }
        ],
        "nul": [post("bad-x", "general", "bob", "a\x00b")],
    }
    for name, lines in cases.items():
        path = _write(tmp_path / f"{name}.ndjson", lines)
        done = recall("apply", "acme", str(path), dsn=dsn)
        assert done.returncode != 0, name
        assert len(done.stderr.strip().splitlines()) == 1, (name, done.stderr)
        assert f"{path}:1:" in done.stderr, (name, done.stderr)
    for args in (
        ("apply", "nope", str(path)),
        ("apply", "acme", str(tmp_path / "missing.ndjson")),
        ("apply", "acme", str(tmp_path)),
        ("apply", "acme", str(path), "--batch", "0"),
    ):
        done = recall(*args, dsn=dsn)
        assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, args
    assert await _count(db, "bad-") == 0
    assert await db.fetchval("select body from messages where key = 'g1'") != "x"
