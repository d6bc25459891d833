"""How a hit reads to the model: where it was said, by whom, how long ago, and a snippet.

Labels are built from stable keys, never from display names alone: two people called "Sam"
become "Sam (sam1)" and "Sam (sam2)", so the model cannot merge what two people said.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from app.data.history_search import HitRow, Person

# Bodies up to this many characters are shown whole; longer ones as a window around the match.
SNIPPET_CHARS = 280
_LEAD = 80


def actor_label(name: str, key: str, kind: str, name_shared: bool) -> str:
    if kind == "agent" and not name:
        return "a deleted agent"  # deleteAgent empties the name (docs/changes.md)
    if kind == "agent":
        return f"{name} (agent {key})" if name_shared else f"{name} (agent)"
    return f"{name} ({key})" if name_shared else name


def _person(p: Person) -> str:
    return actor_label(p.name, p.key, "member", p.name_shared)


def where_label(hit: HitRow) -> str:
    """`#general`, `#secret (private)`, `#partners (shared)`, `DM with Alice`,
    `thread in #general`."""
    if hit.scope_kind == "dm":
        people = ", ".join(_person(p) for p in hit.people)
        return f"DM with {people}" if people else "DM"
    if hit.scope_kind == "thread":
        return f"thread in #{hit.parent_name}" if hit.parent_name else "thread"
    suffix = {"private": " (private)", "shared": " (shared)", "open": " (public)"}
    return f"#{hit.scope_name}{suffix.get(hit.scope_visibility or '', '')}"


def channel_name(hit: HitRow) -> str | None:
    if hit.scope_kind == "channel":
        return hit.scope_name
    if hit.scope_kind == "thread":
        return hit.parent_name
    return None


def speaker_label(hit: HitRow) -> str:
    return actor_label(hit.author_name, hit.author_key, hit.author_kind, hit.author_name_shared)


_UNITS = (
    (365 * 86400, "year"),
    (30 * 86400, "month"),
    (7 * 86400, "week"),
    (86400, "day"),
    (3600, "hour"),
    (60, "minute"),
)


def ago(when: datetime, now: datetime) -> str:
    """Relative to the turn's start, so a turn's results read the same however late it runs."""
    seconds = (now - when).total_seconds()
    if seconds < 60:
        return "just now"
    for size, unit in _UNITS:
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def snippet(body: str, terms: Sequence[str]) -> str:
    """The whole body when short; else about SNIPPET_CHARS around the first matched term.

    The index matches stems ("migration" finds "migrate"), so a term is looked for as typed
    and then by its first letters; a body where neither is found shows its beginning.
    """
    if len(body) <= SNIPPET_CHARS:
        return body
    position = _first_match(body.lower(), terms)
    start = max(0, position - _LEAD)
    if start > 0:
        space = body.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and start - space < 20 else start
    end = min(len(body), start + SNIPPET_CHARS)
    if end < len(body):
        space = body.rfind(" ", start, end)
        end = space if space > start + SNIPPET_CHARS // 2 else end
    text = body[start:end].strip()
    return ("…" if start > 0 else "") + text + ("…" if end < len(body) else "")


def _first_match(lowered: str, terms: Sequence[str]) -> int:
    best = -1
    for term in terms:
        for probe in (term, term[: max(4, len(term) * 2 // 3)]):
            match = re.search(r"(?<!\w)" + re.escape(probe), lowered) if probe else None
            if match and (best < 0 or match.start() < best):
                best = match.start()
                break
    if best < 0:
        # Scripts without spaces (CJK) have no word boundary to anchor on.
        found = [i for i in (lowered.find(t) for t in terms if t) if i >= 0]
        best = min(found, default=0)
    return best
