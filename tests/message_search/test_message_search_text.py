"""messageSearch matching and highlights: AND of words, phrases, exclusions, stems, CJK runs,
UTF-16 highlight offsets; and the fixed statement count of a page."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.message_search_support import keys, search, workspace
from tests.personas import load

MESSAGES = [
    ("en1", "room", "ann", "We decided to move the database on Friday"),
    ("en2", "room", "ben", "Friday is too early to move"),
    (
        "en3",
        "room",
        "ann",
        "error: connection refused by db-primary.internal (see ann@example.com)",
    ),
    ("ja1", "room", "ann", "来週は東京都で会議があります"),
    ("zh1", "room", "ben", "我们明天讨论数据库迁移的计划"),
    ("ko1", "room", "ann", "데이터베이스 마이그레이션 일정"),
    ("emo", "room", "ben", "😀👍 deploy done, deployed twice"),
    ("cjk", "room", "ann", "🎉 会议在東京都举行"),
    ("pua", "room", "ben", "odd \ue000 markers \ue001 around deploy"),
]


@pytest.fixture
async def ann(db: asyncpg.Connection, issue_token: Any) -> str:
    await load(db, workspace(MESSAGES))
    token: str = await issue_token("member", "lab", "ann")
    return token


def _slice_utf16(body: str, start: int, end: int) -> str:
    units = body.encode("utf-16-le")
    return units[2 * start : 2 * end].decode("utf-16-le")


async def _highlighted(client: Any, token: str, q: str) -> dict[str, list[str]]:
    connection = await search(client, token, q, first=100)
    return {
        e["node"]["key"]: [
            _slice_utf16(e["node"]["body"], h["start"], h["end"]) for h in e["highlights"]
        ]
        for e in connection["edges"]
    }


async def test_every_word_must_match(client: Any, ann: str) -> None:
    assert await keys(client, ann, "friday move") == ["en2", "en1"]
    assert await keys(client, ann, "friday database") == ["en1"]
    assert await keys(client, ann, "friday nothinglikethis") == []


async def test_phrases_match_words_in_order(client: Any, ann: str) -> None:
    assert await keys(client, ann, '"move the database"') == ["en1"]
    assert await keys(client, ann, '"database move"') == []
    assert await keys(client, ann, '"connection refused"') == ["en3"]


async def test_excluded_words_remove_matches(client: Any, ann: str) -> None:
    assert await keys(client, ann, "friday -database") == ["en2"]
    assert await keys(client, ann, 'friday -"too early"') == ["en1"]


async def test_stems_identifiers_and_emails(client: Any, ann: str) -> None:
    assert await keys(client, ann, "deciding") == ["en1"]
    assert await keys(client, ann, "db-primary.internal") == ["en3"]
    assert await keys(client, ann, "ann@example.com") == ["en3"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("東京", ["cjk", "ja1"]),
        ("京都", ["cjk", "ja1"]),  # any contiguous run of the text, not a dictionary word
        ("東京都で会議", ["ja1"]),
        ("会議", ["ja1"]),  # the traditional form; "cjk" has the simplified 会议
        ("讨论", ["zh1"]),
        ("数据库迁移", ["zh1"]),
        ("迁数", []),  # not contiguous in the text
        ("데이터베이스", ["ko1"]),
        ("마이그레이션 일정", ["ko1"]),
    ],
)
async def test_contiguous_cjk_text_is_searchable(
    client: Any, ann: str, query: str, expected: list[str]
) -> None:
    assert await keys(client, ann, query) == expected


async def test_highlights_cover_stems_phrases_and_identifiers(client: Any, ann: str) -> None:
    assert await _highlighted(client, ann, "deciding friday") == {"en1": ["decided", "Friday"]}
    assert await _highlighted(client, ann, '"connection refused"') == {
        "en3": ["connection", "refused"]
    }


async def test_highlight_offsets_are_utf16_after_emoji(client: Any, ann: str) -> None:
    connection = await search(client, ann, "deploy")
    edge = next(e for e in connection["edges"] if e["node"]["key"] == "emo")
    # Two emoji (two UTF-16 units each) and a space come before "deploy".
    assert edge["highlights"] == [{"start": 5, "end": 11}, {"start": 18, "end": 26}]
    assert _slice_utf16(edge["node"]["body"], 18, 26) == "deployed"


async def test_cjk_highlights(client: Any, ann: str) -> None:
    assert await _highlighted(client, ann, "京都") == {"cjk": ["京都"], "ja1": ["京都"]}
    connection = await search(client, ann, "東京都 举行")
    assert [e["node"]["key"] for e in connection["edges"]] == ["cjk"]
    # "🎉 会议在東京都举行": the emoji counts two units; the two touching runs merge.
    assert connection["edges"][0]["highlights"] == [{"start": 6, "end": 11}]


async def test_bodies_holding_the_marker_characters_highlight_correctly(
    client: Any, ann: str
) -> None:
    connection = await search(client, ann, "deploy markers")
    edge = connection["edges"][0]
    assert edge["node"]["key"] == "pua"
    body = edge["node"]["body"]
    assert [_slice_utf16(body, h["start"], h["end"]) for h in edge["highlights"]] == [
        "markers",
        "deploy",
    ]


async def test_a_page_of_100_costs_the_statements_of_a_page_of_1(
    client: Any, db: asyncpg.Connection, issue_token: Any
) -> None:
    messages = [(f"m{i}", "room", ("ann", "ben", "bot")[i % 3], f"status {i}") for i in range(150)]
    await load(db, workspace(messages))
    token = await issue_token("member", "lab", "ann")
    counts = {}
    for first in (1, 10, 100):
        result = await client.post(
            # One word: a query of several first reads the newest documents (app.data.message_search.scan),
            # which can add one scan statement, independently of the page size.
            'query($first: Int) { messageSearch(query: "status", first: $first) {'
            " edges { node { key body scope { key parent { key } } author { ... on Member { key }"
            " ... on Agent { key } } } highlights { start end } } } }",
            {"first": first},
            token=token,
        )
        assert not result.errors, result.body
        assert len(result.data["messageSearch"]["edges"]) == first
        counts[first] = result.statements
    # The token with its reader and readiness; the scan, page and hydration in one; the audit.
    assert counts == {1: 3, 10: 3, 100: 3}, counts
