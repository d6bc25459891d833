"""One historySearch: bound by the turn, authorized in SQL, ledgered and audited together.

The turn's details come with the token (app.data.readers.TurnContext). Then two statements:
  1. the examined window (the newest ranking.WINDOW matches in the agent's conversations beyond
     the turn's context, and every match of the rarest words, up to ranking.RARE_WINDOW), its
     exclusion counts, the ranked page of its eligible rows (eligibility
     and perspective in WHERE clauses, before ranking and LIMIT), the neighbors of the page's
     hits (same fragments), and the turn's ledger with the version of the turn's row;
  2. if the turn's row is still at that version (no other search of the turn recorded in
     between), the shown messages join the turn's evidence and the audit row is written, with
     the counts and how many matches were examined, atomically (app.data.turns.record_shown);
     if it is not, the search runs again on the grown ledger.
Nothing is shown unless step 2 succeeded: no evidence without its audit row, and no result
without its evidence, because a reply's provenance must include everything it saw. The
ledger's room is decided on the ledger step 2 checks, so its ceiling holds however many
searches of one turn run at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from app import access
from app.data import turns
from app.data.audit import SearchAudit, query_digest
from app.data.history_search import (
    Neighbors,
    PageRequest,
    RankInputs,
    SearchFilters,
    SearchRows,
    search,
)
from app.data.readers import Reader, cursor_context
from app.data.session import Session
from app.errors import BadUserInput, Forbidden, ServiceUnavailable
from app.history import presentation, ranking
from app.history.cursor import Position, binding, decode_cursor, encode_cursor
from app.history.exact import exact_tests
from app.history.ledger import Ledger, Shown, shown_ids
from app.search.keys import Keys
from app.search.query import parse_query, utc_bound
from app.search.readiness import ensure_read_ready

MAX_FIRST = 20
DEFAULT_FIRST = 8
SPEAKERS = ("ANYONE", "REQUESTER", "YOU")


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
    db: Session, reader: Reader, ledger: Ledger, request: HistoryRequest, *, keys: Keys
) -> HistoryResult:
    """One historySearch of the reader's turn (a turn token's: FORBIDDEN otherwise)."""
    access.HISTORY_SEARCH.check(reader)
    if reader.turn_id is None or reader.turn_id != ledger.turn_id:
        raise Forbidden("this turn is gone")
    workspace_id, agent_id = reader.workspace_id, reader.actor_id
    destination, turn = reader.destination, reader.turn
    search_ready, lineage_complete = reader.search_ready, reader.lineage_complete
    if not 1 <= request.first <= MAX_FIRST:
        raise BadUserInput(f"first must be between 1 and {MAX_FIRST}")
    if request.speaker not in SPEAKERS:
        raise BadUserInput("unknown speaker")
    since, until = _checked("since", request.since), _checked("until", request.until)
    if since is not None and until is not None and since >= until:
        raise BadUserInput("since must be earlier than until")
    parsed = parse_query(request.query)
    bound_to = binding(ledger.turn_id, parsed.normalized, request.speaker, since, until)
    # Sealed for the turn: only this turn's searches can continue from it.
    sealed_for = cursor_context(workspace_id, "turn", agent_id, ledger.turn_id)
    after = (
        decode_cursor(request.after, bound_to, keys.cursors, sealed_for) if request.after else None
    )
    ensure_read_ready(search_ready)
    if turn is None or destination is None:
        raise Forbidden("this turn is gone")

    author = {"REQUESTER": turn.requester_id, "YOU": agent_id}.get(request.speaker)
    exact = exact_tests(parsed)
    filters = SearchFilters(
        agent_id, ledger.turn_id, turn.trigger_message_id, turn.conversations, parsed.include,
        parsed.exclude, author, since, until, exact.whole, exact.verbatim,
        request.speaker == "REQUESTER",
    )  # fmt: skip
    weights = ranking.weights()
    rank = RankInputs(turn.created_at, turn.conversation_id, weights)
    position = (after.tier, after.score, after.message_id) if after else None
    # The largest page the request allows, and one more; the ledger's room cuts it below.
    page = PageRequest(position, request.first + 1, bound_to)
    digest = query_digest(keys.master_key, parsed.normalized)
    audit_destination = destination.describe()

    async def attempt() -> tuple[str, list[Shown], list[int], bool] | None:
        """Search, then record what is shown; None if another search of the turn recorded in
        between (nothing of this one was kept)."""
        found: SearchRows = await search(
            db, destination, filters, rank, page, lineage_complete=lineage_complete
        )
        if found.turn_version is None:
            raise Forbidden("this turn is gone")
        ledger.evidence = set(found.evidence)
        size = ledger.page_size(request.first)
        hits = found.hits[: size + 1] if size > 0 else []
        more = len(hits) > size
        hits = hits[:size]
        around = [found.neighbors.get(h.message.id, Neighbors((), ())) for h in hits]
        shown = ledger.fit(hits, around)
        more = more or len(shown) < len(hits)
        message_ids = shown_ids(shown)
        status = "OK" if size > 0 else "BUDGET_EXHAUSTED"
        counts = found.counts
        recorded = await turns.record_shown(
            db,
            workspace_id=workspace_id,
            turn_id=ledger.turn_id,
            agent_id=agent_id,
            version=found.turn_version,
            message_ids=message_ids,
            audit=SearchAudit(
                "history_search",
                agent_id,
                ledger.turn_id,
                digest,
                {
                    "speaker": request.speaker,
                    "since": since.isoformat() if since else None,
                    "until": until.isoformat() if until else None,
                    "first": request.first,
                    "page_size": size,
                    "after": after is not None,
                    "status": status,
                },
                audit_destination,
            ),
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
                "window": weights.window,
                "complete": found.complete,
            },
            weights=(bound_to, found.new_weights) if found.new_weights is not None else None,
        )
        if not recorded:
            return None
        ledger.record(shown)
        return status, shown, message_ids, more

    async with ledger.lock:
        outcome = await attempt()
        if outcome is None:
            # Another search of this turn recorded between this one's two statements. Again,
            # holding the turn's row lock, so that it cannot happen twice: the search then
            # reads the ledger as the last recording left it.
            async with db.transaction():
                if not await turns.lock_turn_row(db, workspace_id, ledger.turn_id, agent_id):
                    raise Forbidden("this turn is gone")
                outcome = await attempt()
        if outcome is None:
            raise ServiceUnavailable("the turn changed while it was searched; try again")
    status, shown, message_ids, more = outcome

    def cursor(position: Position) -> str:
        return encode_cursor(position, bound_to, keys.cursors, sealed_for)

    views = [_view(s, cursor, turn.created_at, parsed.include) for s in shown]
    return HistoryResult(status, views, message_ids, more, views[-1].cursor if views else None)


def _view(
    shown: Shown, cursor: Callable[[Position], str], turn_started: datetime, terms: Sequence[str]
) -> HitView:
    hit = shown.hit
    return HitView(
        shown=shown,
        cursor=cursor(Position(hit.tier, hit.score, hit.message.id)),
        where=presentation.where_label(hit),
        channel=presentation.channel_name(hit),
        this_conversation=hit.same_conversation,
        ago=presentation.ago(hit.message.created_at, turn_started),
        speaker=presentation.speaker_label(hit),
        text=presentation.snippet(hit.message.body, terms),
    )
