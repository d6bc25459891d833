"""Very long messages (a pasted log, a 100 KB report): indexed, found, listed by a bounded
excerpt, and whole one `node` away (issue 22, 2; docs/api.md, Long messages)."""

from __future__ import annotations

import io
import json
from typing import Any

import asyncpg

from app.workspace_import.importer import import_fixture
from tests.client import GraphQLClient
from tests.personas import acme

FILLER = "routine status line with nothing to see "  # 40 characters
SEARCH = """
query($q: String!, $first: Int) {
  messageSearch(query: $q, first: $first) {
    edges { node { key } highlights { start end }
            excerpt { text start end highlights { start end } } }
  }
}
"""
BODIES = """
query($q: String!) {
  messageSearch(query: $q, first: 5) { edges { node { key body } highlights { start end } } }
}
"""


def _long(prefix: str, needle_at: int, needle: str, size: int) -> str:
    """`size` characters of filler with `needle` at character `needle_at`."""
    filler = (FILLER * (size // len(FILLER) + 2))[:size]
    return prefix + filler[:needle_at] + needle + " " + filler[needle_at:]


async def _load(db: asyncpg.Connection, bodies: dict[str, str]) -> None:
    fixture = acme()
    fixture["messages"] += [
        {"key": key, "scope": "general", "author": "bob", "at": "2026-04-01T10:00:00Z",
         "body": body}
        for key, body in bodies.items()
    ]  # fmt: skip
    await import_fixture(db, fixture, io.StringIO())


def _utf16(text: str) -> str:
    return text.encode("utf-16-le").decode("latin-1")


def _slice16(text: str, start: int, end: int) -> str:
    """JavaScript's text.slice(start, end), in UTF-16 code units."""
    units = text.encode("utf-16-le")
    return units[2 * start : 2 * end].decode("utf-16-le")


async def test_a_long_hit_is_listed_by_a_bounded_excerpt_around_its_match(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    bodies = {f"big{i}": _long("", 60_000, "zeppelinquartz", 100_000) for i in range(20)}
    await _load(db, bodies)
    alice = await issue_token("member", "acme", "alice")
    result = await client.post(SEARCH, {"q": "zeppelinquartz", "first": 20}, token=alice)
    assert not result.errors, result.body
    edges = result.data["messageSearch"]["edges"]
    assert len(edges) == 20
    assert len(json.dumps(result.body)) < 40_000, "20 hits of 100 KB carry no 2 MB of body"
    for edge in edges:
        excerpt, body = edge["excerpt"], bodies[edge["node"]["key"]]
        assert len(excerpt["text"]) <= 500
        assert _slice16(body, excerpt["start"], excerpt["end"]) == excerpt["text"]
        marked = [_slice16(excerpt["text"], h["start"], h["end"]) for h in excerpt["highlights"]]
        assert marked == ["zeppelinquartz"]
        assert [_slice16(body, h["start"], h["end"]) for h in edge["highlights"]] == marked


async def test_the_whole_body_is_one_field_away_and_offsets_count_utf16(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    # An emoji (two UTF-16 units) before the window the search reads.
    body = _long("🚀 launch notes ", 30_000, "zeppelinquartz", 50_000)
    await _load(db, {"big": body, "short": "a short zeppelinquartz note"})
    alice = await issue_token("member", "acme", "alice")
    data = await client.gql(BODIES, {"q": "zeppelinquartz"}, token=alice)
    edges = {e["node"]["key"]: e for e in data["messageSearch"]["edges"]}
    assert edges["big"]["node"]["body"] == body
    assert edges["short"]["node"]["body"] == "a short zeppelinquartz note"
    for edge in edges.values():
        text = edge["node"]["body"]
        assert [_slice16(text, h["start"], h["end"]) for h in edge["highlights"]] == [
            "zeppelinquartz"
        ]


async def test_words_past_the_indexed_part_of_a_body_are_not_found(
    client: GraphQLClient, db: asyncpg.Connection, issue_token: Any
) -> None:
    """Recall indexes a body's first 100,000 characters (migrations/022)."""
    body = _long("", 99_000, "zeppelinearly", 120_000)
    body += " zeppelinlate"
    await _load(db, {"big": body})
    alice = await issue_token("member", "acme", "alice")
    early = await client.gql(SEARCH, {"q": "zeppelinearly"}, token=alice)
    late = await client.gql(SEARCH, {"q": "zeppelinlate"}, token=alice)
    assert [e["node"]["key"] for e in early["messageSearch"]["edges"]] == ["big"]
    assert late["messageSearch"]["edges"] == []
