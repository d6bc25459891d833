"""app.message_search.excerpts: what a result list shows of a hit."""

from __future__ import annotations

from app.message_search.excerpts import EXCERPT, excerpt_of


def test_a_short_body_is_its_own_excerpt() -> None:
    excerpt = excerpt_of("deploy the zeppelin", 0, [(11, 19)], window_is_body=True)
    assert (excerpt.text, excerpt.start, excerpt.end) == ("deploy the zeppelin", 0, 19)
    assert excerpt.highlights == [(11, 19)]
    assert not excerpt.more_before and not excerpt.more_after


def test_a_long_body_is_cut_around_its_first_highlight_at_spaces() -> None:
    window = "word " * 300 + "zeppelin " + "word " * 300
    at = window.index("zeppelin")
    excerpt = excerpt_of(window, 1000, [(at, at + 8), (at + 5000, at + 5008)], window_is_body=False)
    assert len(excerpt.text) <= EXCERPT
    assert excerpt.text.startswith("word ") and not excerpt.text.endswith("wor")
    assert window[excerpt.start - 1000 : excerpt.end - 1000] == excerpt.text
    s, e = excerpt.highlights[0]
    assert excerpt.text[s:e] == "zeppelin" and len(excerpt.highlights) == 1
    assert excerpt.more_before and excerpt.more_after


def test_without_a_highlight_the_excerpt_is_the_windows_start() -> None:
    window = "x" * 2000
    excerpt = excerpt_of(window, 0, [], window_is_body=True)
    assert (excerpt.start, excerpt.end, excerpt.highlights) == (0, EXCERPT, [])


def test_offsets_count_utf16_units() -> None:
    window = "🚀" * 600 + " zeppelin"
    at16 = 1200 + 1  # 600 emoji of two units each, then a space
    excerpt = excerpt_of(window, 0, [(at16, at16 + 8)], window_is_body=True)
    units = window.encode("utf-16-le")
    assert units[2 * excerpt.start : 2 * excerpt.end].decode("utf-16-le") == excerpt.text
    s, e = excerpt.highlights[0]
    assert excerpt.text.encode("utf-16-le")[2 * s : 2 * e].decode("utf-16-le") == "zeppelin"
