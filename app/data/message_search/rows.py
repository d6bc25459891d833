"""The rows of a messageSearch statement, as typed values."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from app.data.rows import ActorRow, MessageRow, ScopeRow

# The rules a candidate is excluded by, in the order they are decided (its verdict's).
RULES = ("no_evidence", "audience", "lineage")


@dataclass(frozen=True, slots=True)
class Candidate:
    message_id: int
    global_seq: int
    scope_id: int
    seq: int
    # The first rule that removed the candidate (no_evidence, audience, lineage); None: eligible.
    excluded_by: str | None


@dataclass(frozen=True, slots=True)
class PageHit:
    candidate: Candidate
    # The message as the reader may read it (None only if its row vanished); its body only if
    # it fits the window (body_complete), otherwise left for Message.body to load.
    message: MessageRow | None
    # The window of the body that was highlighted (the whole body when it fits), where it
    # starts in the body in UTF-16 code units, and the window with the English part of the
    # query's terms marked by START_MARK/STOP_MARK (None where nothing English can match).
    window: str
    window_start: int
    marked: str | None


@dataclass(frozen=True, slots=True)
class PageRows:
    """One page, decided in SQL exactly as app.message_search.paging.page_of decides it."""

    hits: list[PageHit]
    # A further eligible candidate proved a next page (hits is full).
    cut: bool
    # Candidates read, and the last of them (the continuation when the budget ran out).
    examined: int
    last: Candidate | None
    # Candidates before the page's end by the first rule that removed them (the audit's).
    exclusions: dict[str, int]


def _candidate(r: asyncpg.Record, prefix: str) -> Candidate:
    return Candidate(
        int(r[prefix + "message_id"]),
        int(r[prefix + "global_seq"]),
        int(r[prefix + "scope_id"]),
        int(r[prefix + "seq"]),
        r[prefix + "excluded_by"],
    )


def exclusions_of(rows: list[asyncpg.Record]) -> dict[str, int]:
    return {rule: int(rows[0][rule]) for rule in RULES}


def selected_of(rows: list[asyncpg.Record]) -> list[dict[str, int]]:
    """The page's message ids, as the audit row records them."""
    return [{"message_id": r["c_message_id"]} for r in rows if r["c_message_id"] is not None]


def page_rows_of(rows: list[asyncpg.Record], exclusions: dict[str, int]) -> PageRows:
    """The page from its statement's rows: one per hit (an empty page: one without a hit),
    each carrying the page's counts and its last candidate."""
    head = rows[0]
    hits = [
        PageHit(
            _candidate(r, "c_"),
            MessageRow.of(
                r,
                body_complete=r["body_complete"],
                author=ActorRow.of(r, "a_"),
                scope=ScopeRow.of(r, "s_"),
            )
            if r["id"] is not None
            else None,
            r["window_text"] or "",
            r["window_start"] or 0,
            r["marked"],
        )
        for r in rows
        if r["c_message_id"] is not None
    ]
    return PageRows(
        hits,
        bool(head["cut"]),
        int(head["examined_count"]),
        _candidate(head, "l_") if head["l_message_id"] is not None else None,
        exclusions,
    )
