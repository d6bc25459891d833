"""app.message_search.highlights: ts_headline marks and CJK runs as UTF-16 ranges of the body."""

from __future__ import annotations

from app.message_search.highlights import (
    cjk_ranges,
    highlight_ranges,
    marked_ranges,
    merge,
    utf16_offsets,
)

S, E = "\ue000", "\ue001"


def test_utf16_offsets_count_astral_characters_twice() -> None:
    assert utf16_offsets("a😀b") == [0, 1, 3, 4]


def test_marked_ranges_are_utf16_offsets_into_the_body() -> None:
    body = "😀 deploy now"
    assert marked_ranges(body, f"😀 {S}deploy{E} now") == [(3, 9)]
    assert marked_ranges(body, None) == []
    # A marked copy that is not the body plus marks is not trusted.
    assert marked_ranges(body, f"😀 {S}deploy{E} later") == []


def test_bodies_with_marker_characters_keep_their_offsets() -> None:
    body = f"a{S}b deploy"
    # The database copy replaced the body's own marker with U+FFFD before marking.
    assert marked_ranges(body, f"a\ufffdb {S}deploy{E}") == [(4, 10)]


def test_cjk_ranges_find_every_occurrence_of_every_run() -> None:
    body = "🎉東京都と東京"
    assert sorted(cjk_ranges(body, ["東京"])) == [(2, 4), (6, 8)]
    assert cjk_ranges(body, ["tokyo"]) == []


def test_merge_sorts_and_joins_overlapping_or_touching_ranges() -> None:
    assert merge([(5, 7), (0, 2), (1, 3), (7, 9), (11, 12)]) == [(0, 3), (5, 9), (11, 12)]


def test_highlight_ranges_combine_both_sources() -> None:
    body = "deploy 東京 today"
    assert highlight_ranges(body, f"{S}deploy{E} 東京 today", ["deploy", "東京"]) == [
        (0, 6),
        (7, 9),
    ]
