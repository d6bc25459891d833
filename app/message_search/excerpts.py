"""A hit's excerpt: a bounded piece of its body around the first highlight, for a result list.

A search result lists many messages; a message may be a pasted log of 100 KB. The excerpt is
what a list shows: the whole body when it is short (at most EXCERPT characters), otherwise
EXCERPT characters from a little before the first highlight (the start of the window the
search read, app.data.message_search.hydrate, when nothing is highlighted), cut at spaces where
one is near. Offsets are UTF-16 code units like every range in the API: `start`/`end` place the
excerpt in the body, and its highlights are relative to its own text.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from app.message_search.highlights import Range, utf16_offsets

# Characters an excerpt holds at most, and how many of them come before the first highlight.
EXCERPT = 500
_LEAD = 100
# How far an edge may move to land on a space instead of inside a word.
_SNAP = 20


@dataclass(frozen=True, slots=True)
class Excerpt:
    text: str
    start: int
    end: int
    highlights: list[Range]
    # Whether the body goes on before or after the excerpt (a list shows an ellipsis).
    more_before: bool
    more_after: bool


def excerpt_of(
    window: str, window_start: int, highlights: Sequence[Range], *, window_is_body: bool
) -> Excerpt:
    """The excerpt of a hit whose body's `window` (starting at UTF-16 offset `window_start` in
    the body; `window_is_body`: it is the whole body) carries `highlights` (UTF-16 offsets
    relative to the window)."""
    offsets = utf16_offsets(window)
    if len(window) <= EXCERPT:
        first, last = 0, len(window)
    else:
        # The code point where the first highlight starts (offsets is sorted).
        at = bisect_right(offsets, highlights[0][0]) - 1 if highlights else 0
        first = _snap_forward(window, max(0, at - _LEAD), limit=at)
        last = min(len(window), first + EXCERPT)
        if last < len(window):
            last = _snap_back(window, last, limit=first + EXCERPT - _SNAP)
    lo, hi = offsets[first], offsets[last]
    inside = [(max(s, lo) - lo, min(e, hi) - lo) for s, e in highlights if s < hi and e > lo]
    return Excerpt(
        window[first:last],
        window_start + lo,
        window_start + hi,
        inside,
        more_before=window_start + lo > 0,
        more_after=last < len(window) or not window_is_body,
    )


def _snap_forward(text: str, i: int, *, limit: int) -> int:
    """Just after a space at or after i (within _SNAP, and not past limit), else i."""
    if i == 0:
        return 0
    space = text.find(" ", i, min(i + _SNAP, limit))
    return space + 1 if space >= 0 else i


def _snap_back(text: str, i: int, *, limit: int) -> int:
    """At a space at or before i (within _SNAP, not before limit), else i."""
    space = text.rfind(" ", max(limit, i - _SNAP), i + 1)
    return space if space > 0 else i
