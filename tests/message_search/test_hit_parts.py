"""A hit's cursor, highlights and excerpt are made only when a client selects them
(app.message_search.search.MessageHit): a page or a live update that shows none of them does
not seal a cursor (AES-GCM) or cut an excerpt per hit. Selected, they are what they always
were."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from app.message_search import excerpts
from app.message_search import search as message_search
from app.message_search.opaque import Sealer
from tests.message_search_support import workspace
from tests.personas import load

MESSAGES = [(f"m{i}", "room", "ann", f"deploy number {i} went out") for i in range(6)]

_PAGE = """query($q: String!, $first: Int) {
  messageSearch(query: $q, first: $first) { edges { %s } } }"""


@pytest.fixture
async def ann(db: asyncpg.Connection, issue_token: Any) -> str:
    await load(db, workspace(MESSAGES))
    token: str = await issue_token("member", "lab", "ann")
    return token


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many cursors were sealed and excerpts cut."""
    counts = {"cursors": 0, "excerpts": 0}
    seal, excerpt_of = Sealer.seal, excerpts.excerpt_of

    def counting_seal(self: Sealer, payload: Any, context: str) -> str:
        counts["cursors"] += 1
        return seal(self, payload, context)

    def counting_excerpt(*args: Any, **kwargs: Any) -> Any:
        counts["excerpts"] += 1
        return excerpt_of(*args, **kwargs)

    monkeypatch.setattr(Sealer, "seal", counting_seal)
    monkeypatch.setattr(message_search, "excerpt_of", counting_excerpt)
    return counts


async def test_a_page_without_cursors_or_excerpts_makes_none(
    client: Any, ann: str, made: dict[str, int]
) -> None:
    data = await client.gql(_PAGE % "node { key }", {"q": "deploy", "first": 5}, token=ann)
    assert len(data["messageSearch"]["edges"]) == 5
    # The page's own end cursor is the only one (pageInfo is not selected, but the page
    # decides it as it reads).
    assert made["cursors"] <= 1
    assert made["excerpts"] == 0


async def test_selected_parts_are_made_once_per_hit_and_are_what_they_were(
    client: Any, ann: str, made: dict[str, int]
) -> None:
    fields = "cursor highlights { start end } excerpt { text start end } node { key body }"
    data = await client.gql(_PAGE % fields, {"q": "deploy", "first": 5}, token=ann)
    edges = data["messageSearch"]["edges"]
    assert len(edges) == 5
    assert made["excerpts"] == 5
    assert 5 <= made["cursors"] <= 6
    for edge in edges:
        body = edge["node"]["body"]
        assert [body[h["start"] : h["end"]] for h in edge["highlights"]] == ["deploy"]
        assert edge["excerpt"] == {"text": body, "start": 0, "end": len(body)}
        assert edge["cursor"].startswith("c1.")
    # Each edge's cursor continues right after it.
    after = edges[1]["cursor"]
    rest = await client.gql(
        "query($q: String!, $after: String) { messageSearch(query: $q, first: 2, after: $after)"
        " { edges { node { key } } } }",
        {"q": "deploy", "after": after},
        token=ann,
    )
    assert [e["node"]["key"] for e in rest["messageSearch"]["edges"]] == [
        e["node"]["key"] for e in edges[2:4]
    ]
