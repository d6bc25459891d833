"""The benchmark's generator: same seed, same bytes; and what it writes imports."""

from __future__ import annotations

import io
import json
from pathlib import Path

import asyncpg

from app.workspace_import.importer import import_fixture_file
from bench.generate import RARE_COUNT, generate, generate_file


def _text(messages: int, seed: int) -> str:
    out = io.StringIO()
    generate(messages, seed, out)
    return out.getvalue()


def test_same_seed_same_bytes() -> None:
    first = _text(500, 7)
    assert first == _text(500, 7)
    assert first != _text(500, 8)
    fixture = json.loads(first)
    assert len(fixture["messages"]) == 500
    assert sum("quokkaflux" in m["body"] for m in fixture["messages"]) == RARE_COUNT


async def test_generated_fixture_imports(db: asyncpg.Connection, tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    summary = generate_file(500, 7, path)
    result = await import_fixture_file(db, path, io.StringIO())
    assert result["messages"] == 500
    assert result["members"] == summary.members
    assert result["threads"] == summary.threads
    indexed = await db.fetchval("select count(*) from search_documents")
    assert indexed == 500
