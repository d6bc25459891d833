"""Highlight ranges of a hit: where the query's included terms occur in the body.

Offsets are UTF-16 code units (what JavaScript string indices count), end exclusive, so a
client can slice the body it received without converting: an emoji before a match counts 2.

English terms (stems, phrases, identifiers) are matched by PostgreSQL's ts_headline, the same
parser and dictionary as the search itself, which marks them with private-use characters that
are parsed into ranges here. Chinese, Japanese and Korean runs have no words for ts_headline to
find (the index holds their bigrams), so each CJK run of a term is located in the body by
substring search instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.data.message_search.hydrate import START_MARK, STOP_MARK

# The same blocks as recall_cjk_runs() in migrations/003_search_documents.sql.
_CJK_RUN = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+"
)

Range = tuple[int, int]


_MARK_SPLIT = re.compile(f"([{re.escape(START_MARK)}{re.escape(STOP_MARK)}])")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: code points beyond the BMP (emoji) count 2."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def utf16_offsets(text: str) -> list[int]:
    """offsets[i] = UTF-16 offset of code point i; offsets[len(text)] = UTF-16 length."""
    if utf16_len(text) == len(text):  # no surrogate pairs: offsets are indices
        return list(range(len(text) + 1))
    out = [0] * (len(text) + 1)
    pos = 0
    for i, ch in enumerate(text):
        out[i] = pos
        pos += 2 if ord(ch) > 0xFFFF else 1
    out[len(text)] = pos
    return out


def marked_ranges(body: str, marked: str | None) -> list[Range]:
    """Ranges of the START_MARK…STOP_MARK spans of ts_headline's copy of `body`."""
    if marked is None:
        return []
    # Whole segments between marks, not characters: a body is mostly unmarked text.
    # [segment, mark, segment, mark, …, segment]
    pieces = _MARK_SPLIT.split(marked)
    segments = pieces[0::2]
    # The marked copy is the body with marks inserted (and the body's own marks replaced by
    # one-unit U+FFFD). If it is anything else, its offsets would be wrong: show none.
    expected = body.replace(START_MARK, "\ufffd").replace(STOP_MARK, "\ufffd")
    if "".join(segments) != expected:
        return []
    # A body without code points beyond the BMP (nearly all) counts UTF-16 units as len().
    length = len if utf16_len(body) == len(body) else utf16_len
    ranges: list[Range] = []
    pos = 0
    start: int | None = None
    for segment, mark in zip(segments, pieces[1::2], strict=False):
        pos += length(segment)
        if mark == START_MARK:
            start = pos
        else:
            if start is not None and pos > start:
                ranges.append((start, pos))
            start = None
    return ranges


def cjk_ranges(body: str, include: Sequence[str]) -> list[Range]:
    runs = {run for term in include for run in _CJK_RUN.findall(term)}
    if not runs:
        return []
    offsets = utf16_offsets(body)
    ranges: list[Range] = []
    for run in runs:
        i = body.find(run)
        while i >= 0:
            ranges.append((offsets[i], offsets[i + len(run)]))
            i = body.find(run, i + 1)
    return ranges


def merge(ranges: Sequence[Range]) -> list[Range]:
    """Sorted, with overlapping or touching ranges joined."""
    out: list[Range] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def highlight_ranges(body: str, marked: str | None, include: Sequence[str]) -> list[Range]:
    return merge(marked_ranges(body, marked) + cjk_ranges(body, include))
