"""The benchmark's generator: same seed, same bytes; and what it writes imports."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

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


def test_side_by_side_tables_both_servers_runs() -> None:
    """bench.side_by_side's table, from two committed bench.run results: one row per query
    kind with both sides and their ratio, and the import rates."""
    from bench.side_by_side import table

    results = Path(__file__).resolve().parent.parent / "docs" / "results"
    text = table(
        {
            side: json.loads((results / f"bench-100k-postgres-vs-citus-{side}.json").read_text())
            for side in ("postgres", "citus")
        }
    )
    assert "| messageSearch rare | 11.5 | 23.79 | 3 | 18.12 | 21.71 | 3 | 1.6× |" in text
    assert "| `recall import` (msg/s) | 18,706 | 11,648 |" in text


def test_scale_throughput_takes_the_best_level_within_the_p99() -> None:
    """bench.scale_throughput's answer: the most requests per second of a level whose p99 is
    within the bound, not the most of any level, and none when no level fits."""
    from bench.scale_throughput import best_within, table

    def level(clients: int, rate: float, p99: float) -> dict[str, object]:
        return {
            "clients": clients, "ok_per_second": rate, "p50_ms": p99 / 3, "p99_ms": p99,
            "p99_ms_by_kind": {"messageSearch": p99}, "failures": 0,
        }  # fmt: skip

    levels = [level(1, 40, 40), level(4, 75, 120), level(16, 90, 400)]
    assert best_within(levels, 250) == levels[1]
    assert best_within(levels, 30) is None
    text = table({"args": {"p99": 250}, "levels_2_workers": levels, "best_2_workers": levels[1]})
    assert "| 2 | 16 | 90 | " in text
    assert "2 workers, throughput at p99 <= 250 ms: 75 req/s (4 clients)" in text


async def test_interleaved_asks_both_trees_in_turn(
    db: asyncpg.Connection, dsn: str, tmp_path: Path, monkeypatch: Any
) -> None:
    """bench.interleaved against a generated workspace, with this checkout as both trees: every
    case answered by both servers, with a ratio to the rare term for each messageSearch case."""
    from urllib.parse import urlsplit, urlunsplit

    from bench import interleaved

    path = tmp_path / "bench.json"
    generate_file(2_000, 1, path)
    await import_fixture_file(db, path, io.StringIO())
    parts = urlsplit(dsn)
    monkeypatch.setenv("DATABASE_URL", urlunsplit(parts._replace(path="/postgres")))
    args = argparse.Namespace(
        reuse=parts.path.lstrip("/"),
        before=Path(__file__).resolve().parents[1],
        messages=2_000,
        seed=1,
        requests=3,
    )
    results = await interleaved.run(args)
    assert "messageSearch two words" in results and "historySearch common" in results
    for name, row in results.items():
        assert set(row) == set(interleaved.TREES), name
        for tree in interleaved.TREES:
            assert row[tree]["p50"] > 0, (name, tree)
            if name.startswith("messageSearch"):
                assert row[tree]["to_rare"] > 0, (name, tree)
