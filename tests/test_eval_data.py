"""The committed evaluation set (eval/data) is what eval/generate.py writes, and it holds what
docs/relevance.md says it holds."""

from __future__ import annotations

import json
from pathlib import Path

from app.workspace_import.model import parse_fixture
from eval import generate


def test_committed_files_are_the_generators_output(tmp_path: Path) -> None:
    generate.write(tmp_path)
    for name in ("fixture.json", "queries.json"):
        assert (tmp_path / name).read_text() == (generate.DATA / name).read_text(), name


def test_the_set_is_an_importable_fixture_with_graded_queries_on_both_sides() -> None:
    fixture = json.loads((generate.DATA / "fixture.json").read_text())
    parse_fixture(fixture)
    keys = {m["key"] for m in fixture["messages"]}
    assert len(keys) >= 1000
    queries = json.loads((generate.DATA / "queries.json").read_text())["queries"]
    assert len(queries) >= 100
    assert {q["split"] for q in queries} == {"tuning", "heldout"}
    for q in queries:
        assert set(q["grades"]) <= keys and set(q["grades"].values()) <= {1, 2}, q["id"]
    kinds = {q["kind"] for q in queries}
    for split in ("tuning", "heldout"):
        assert {q["kind"] for q in queries if q["split"] == split} == kinds
