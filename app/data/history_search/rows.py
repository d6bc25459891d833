"""The rows a historySearch statement returns, as typed values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from app.data.history_search.neighbors import Neighbors
from app.data.rows import MessageRow

# A hit's tier (app.data.history_search.page): what it matched.
TIERS = {2: "EXACT", 1: "WORDS", 0: "CONTEXT"}


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    key: str
    name_shared: bool


@dataclass(frozen=True, slots=True)
class HitRow:
    message: MessageRow
    # EXACT (holds the query verbatim), WORDS (some of its words) or CONTEXT (none of them:
    # the conversation around a match); hits are ordered by tier, then score.
    match: str
    tier: int
    components: tuple[tuple[str, float], ...]
    score: float
    same_conversation: bool
    author_name: str
    author_key: str
    author_kind: str
    author_name_shared: bool
    scope_kind: str
    scope_visibility: str | None
    scope_name: str | None
    parent_name: str | None
    people: tuple[Person, ...]


@dataclass(frozen=True, slots=True)
class SearchRows:
    hits: list[HitRow]
    # Examined matches by the first rule that removed them, plus `eligible` (passed them all).
    counts: Mapping[str, int]
    # How many matches were examined, and whether that was all of them (with the windows
    # before this one).
    examined: int
    complete: bool
    # The neighbors of each hit, by the hit's message id.
    neighbors: Mapping[int, Neighbors]
    # The turn's ledger as the statement saw it, and the version of the turn's row then (None:
    # the turn is gone).
    evidence: frozenset[int]
    turn_version: str | None
    # The weights this search ranked with, if its turn had none frozen for its binding: to be
    # saved with what it shows (app.data.turns.record_shown).
    new_weights: Mapping[str, Any] | None = None
    # Where the next window starts (None: this was the last), and how far back the first window
    # read the rarest words' matches (app.data.history_search.window).
    next_window: int | None = None
    rare_floor: int | None = None


def hit_of(r: asyncpg.Record) -> HitRow:
    components = (
        ("lexical", r["lexical"]),
        ("context", r["context"]),
        ("supersedes", r["supersedes"]),
        ("asks", r["asks"]),
        ("recency", r["recency"]),
        ("same_conversation", r["same_boost"]),
    )
    people = tuple(Person(p[0], p[1], p[2] == "true") for p in r["people"])
    return HitRow(
        MessageRow.of(r),
        TIERS[r["tier"]],
        r["tier"],
        components,
        r["score"],
        r["same_conversation"],
        r["author_name"],
        r["author_key"],
        r["author_kind"],
        r["author_name_shared"],
        r["scope_kind"],
        r["scope_visibility"],
        r["scope_name"],
        r["parent_name"],
        people,
    )
