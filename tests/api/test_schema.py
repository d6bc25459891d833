"""The committed schema.graphql is what the code serves (CI fails on drift)."""

from __future__ import annotations

from pathlib import Path

from app.api.schema import schema_sdl

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema.graphql"


def test_committed_schema_matches_the_code() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_sdl(), (
        "schema.graphql is stale: run `recall schema > schema.graphql` and commit it"
    )
