"""One historySearch: bound by the turn, authorized in SQL, ledgered and audited together.

Order of work, all inside one transaction that holds the turn's row lock:
  1. one statement: the examined window (the newest matches in the agent's perspective, at
     most ranking.WINDOW), its exclusion counts, and the ranked page of its eligible rows
     (eligibility and perspective in WHERE clauses, before ranking and LIMIT),
  2. the neighbors of its hits (one batched statement, same fragments),
  3. the shown messages join the turn's evidence, and
  4. the audit row is written, with the counts and how many matches were examined.
If any step fails, nothing of the search is kept: no evidence without its audit row, and no
result without its evidence, because a reply's provenance must include everything it saw.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from app.data import turns
from app.data.audit import query_digest, record_search
from app.data.history_neighbors import Neighbors
from app.data.history_search import (
    PageRequest,
    RankInputs,
    SearchFilters,
    SearchRows,
    search,
)
from app.data.session import Session
from app.errors import BadUserInput, Forbidden
from app.history import presentation, ranking
from app.history.cursor import Position, binding, decode_cursor, encode_cursor
from app.history.ledger import Ledger, Shown
from app.search.query import parse_query, utc_bound
from app.search.readiness import ensure_read_ready

MAX_FIRST = 20
SPEAKERS = ("ANYONE", "REQUESTER", "YOU")

NeighborLoader = Callable[[list[int]], Awaitable[Sequence[Neighbors]]]


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    query: str
    speaker: str
    since: datetime | None
    until: datetime | None
    first: int
    after: str | None


@dataclass(frozen=True, slots=True)
class HitView:
    shown: Shown
    cursor: str
    where: str
    channel: str | None
    this_conversation: bool
    ago: str
    speaker: str
    text: str


@dataclass(frozen=True, slots=True)
class HistoryResult:
    status: str  # OK | BUDGET_EXHAUSTED
    hits: list[HitView]
    message_ids: list[int]
    has_next_page: bool
    end_cursor: str | None


def _checked(name: str, value: datetime | None) -> datetime | None:
    """The bound as given (the cursor binding and the audit keep it so), once it is known to
    be an instant PostgreSQL can hold (utc_bound: BAD_USER_INPUT otherwise)."""
    utc = utc_bound(name, value)
    return value if value is None or value.tzinfo is not None else utc


async def history_search(
    db: Session,
    *,
    workspace_id: int,
    agent_id: int,
    ledger: Ledger,
    request: HistoryRequest,
    master_key: str | None,
    load_neighbors: NeighborLoader,
    search_ready: bool,
) -> HistoryResult:
    if not 1 <= request.first <= MAX_FIRST:
        raise BadUserInput(f"first must be between 1 and {MAX_FIRST}")
    if request.speaker not in SPEAKERS:
        raise BadUserInput("unknown speaker")
    since, until = _checked("since", request.since), _checked("until", request.until)
    if since is not None and until is not None and since >= until:
        raise BadUserInput("since must be earlier than until")
    parsed = parse_query(request.query)
    bound_to = binding(ledger.turn_id, parsed.normalized, request.speaker, since, until)
    after = decode_cursor(request.after, bound_to) if request.after else None
    ensure_read_ready(search_ready)

    async with ledger.lock, db.transaction():
        turn = await turns.lock_turn(db, workspace_id, ledger.turn_id, agent_id)
        if turn is None:
            raise Forbidden("this turn is gone")
        ledger.evidence = set(turn.evidence)
        author = {"REQUESTER": turn.requester_id, "YOU": turn.agent_id}.get(request.speaker)
        filters = SearchFilters(
            agent_id, turn.id, turn.trigger_message_id, turn.conversations, parsed.include,
            parsed.exclude, author, since, until,
        )  # fmt: skip
        size = ledger.page_size(request.first)
        rank = RankInputs(
            turn.created_at,
            turn.requester_id,
            turn.conversation_id,
            ranking.RECENCY_WEIGHT,
            ranking.RECENCY_DAYS,
            ranking.REQUESTER_SPOKE_WEIGHT,
            ranking.SAME_CONVERSATION_WEIGHT,
            ranking.K1,
            ranking.B,
            ranking.PROXIMITY_WEIGHT,
            ranking.CONTEXT_SHARE,
            ranking.CONTEXT_TOP,
            ranking.FOLLOW_UP_SHARE,
            ranking.SUPERSEDES_SHARE,
            ranking.ASKS_WEIGHT,
        )
        position = (after.score, after.message_id) if after else None
        # With the budget spent the page is empty, but the window is still counted and audited.
        page = PageRequest(position, size + 1 if size > 0 else 0, ranking.WINDOW, bound_to)
        found: SearchRows = await search(db, turn.destination, filters, rank, page)
        hits, counts = found.hits, found.counts
        more = len(hits) > size
        hits = hits[:size]
        around = await load_neighbors([h.message.id for h in hits]) if hits else []
        shown = ledger.fit(hits, around)
        more = more or len(shown) < len(hits)
        message_ids = ledger.record(shown)
        await turns.add_evidence(db, workspace_id, turn.id, message_ids)
        status = "OK" if size > 0 else "BUDGET_EXHAUSTED"
        await record_search(
            db,
            workspace_id=workspace_id,
            surface="history_search",
            actor_id=agent_id,
            turn_id=turn.id,
            query_digest=query_digest(master_key, parsed.normalized),
            filters={
                "speaker": request.speaker,
                "since": since.isoformat() if since else None,
                "until": until.isoformat() if until else None,
                "first": request.first,
                "page_size": size,
                "after": after is not None,
                "status": status,
            },
            destination=turn.destination.describe(),
            selected=[
                {
                    "message_id": s.hit.message.id,
                    "score": s.hit.score,
                    "why": dict(s.hit.components),
                }
                for s in shown
            ],
            exclusions={
                "already_in_context": counts["already_in_context"],
                "no_evidence": counts["no_evidence"],
                "audience": counts["audience"],
                "lineage": counts["lineage"],
                "below_cutoff": max(counts["eligible"] - len(shown), 0),
                # Not rules: how many matches the counts cover, and the ceiling on that number.
                "examined": found.examined,
                "window": ranking.WINDOW,
            },
        )

    views = [_view(s, bound_to, turn.created_at, parsed.include) for s in shown]
    return HistoryResult(status, views, message_ids, more, views[-1].cursor if views else None)


def _view(shown: Shown, bound_to: str, turn_started: datetime, terms: Sequence[str]) -> HitView:
    hit = shown.hit
    position = Position(hit.score, hit.message.id)
    return HitView(
        shown=shown,
        cursor=encode_cursor(position, bound_to),
        where=presentation.where_label(hit),
        channel=presentation.channel_name(hit),
        this_conversation=hit.same_conversation,
        ago=presentation.ago(hit.message.created_at, turn_started),
        speaker=presentation.speaker_label(hit),
        text=presentation.snippet(hit.message.body, terms),
    )
