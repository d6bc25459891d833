"""One historySearch: bound by the turn, authorized in SQL, ledgered and audited together.

The turn's details come with the token (app.data.readers.TurnContext). Then two statements:
  1. the examined window (the newest ranking.WINDOW matches in the agent's conversations beyond
     the turn's context, and every match of the rarest words, up to ranking.RARE_WINDOW), its
     exclusion counts, the ranked page of its eligible rows (eligibility
     and perspective in WHERE clauses, before ranking and LIMIT), the neighbors of the page's
     hits (same fragments), and the turn's ledger with the version of the turn's row;
     (a page the window cannot fill reads the next older windows, one statement each, at most
     MAX_WINDOWS: the window bounds the work, not the results);
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app import access
from app.data import turns
from app.data.audit import SearchAudit, query_digest
from app.data.eligibility import Destination
from app.data.history_search import (
    RULES,
    HitRow,
    Neighbors,
    PageRequest,
    RankInputs,
    SearchFilters,
    SearchRows,
    search,
)
from app.data.readers import Reader, cursor_context
from app.data.retry import in_transaction
from app.data.session import Session
from app.errors import BadUserInput, Forbidden, ServiceUnavailable
from app.history_search import presentation, ranking
from app.history_search.cursor import Position, binding, decode_cursor, encode_cursor
from app.history_search.exact import exact_tests
from app.history_search.ledger import Ledger, Shown, shown_ids
from app.message_search.keys import Keys
from app.message_search.query import parse_query, utc_bound
from app.message_search.readiness import ensure_read_ready

MAX_FIRST = 20
DEFAULT_FIRST = 8
# Windows one request reads at most while its page is not full (app.history_search.ranking.WINDOW
# matches each): the work of a request stays bounded however many matches the turn may not see.
MAX_WINDOWS = 3
# Hits read beyond the page: context hits already shown beside a match are passed over, and a
# page should not end short for it (a hit's exchange holds up to four).
SPARE = 4
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
    digest = query_digest(keys.master_key, parsed.normalized)
    audit_destination = destination.describe()

    async def attempt() -> _Outcome | None:
        """Search, then record what is shown; None if another search of the turn recorded in
        between (nothing of this one was kept)."""
        read = await _read_windows(
            db, destination, filters, rank, bound_to, after, ledger, request.first,
            lineage_complete=lineage_complete,
        )  # fmt: skip
        if read is None:
            return None
        size = ledger.page_size(request.first)
        found = read.found if size > 0 else []
        shown, used = ledger.fit([f.hit for f in found], [f.around for f in found], size)
        if used < len(found):
            # The page ends at the last hit it used up: the next one starts after it.
            end, more = (found[used - 1].after if used else after), True
        elif read.resume is not None and size > 0:
            end, more = read.resume, True
        else:
            end, more = None, False
        message_ids = shown_ids(shown)
        status = "OK" if size > 0 else "BUDGET_EXHAUSTED"
        counts = read.counts
        recorded = await turns.record_shown(
            db,
            workspace_id=workspace_id,
            turn_id=ledger.turn_id,
            agent_id=agent_id,
            version=read.turn_version,
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
                # Not rules: how many matches the counts cover, the ceiling on that number per
                # window, how many windows were read, and whether they were the last.
                "examined": read.examined,
                "window": weights.window,
                "windows": read.windows,
                "complete": read.complete,
            },
            weights=(bound_to, read.new_weights) if read.new_weights is not None else None,
        )
        if not recorded:
            return None
        ledger.record(shown)
        positions = {f.hit.message.id: f.after for f in found[:used]}
        return _Outcome(status, shown, message_ids, more, end, positions)

    async with ledger.lock:
        outcome = await attempt()
        if outcome is None:
            # Another search of this turn recorded between this one's two statements. Again,
            # holding the turn's row lock, so that it cannot happen twice: the search then
            # reads the ledger as the last recording left it.

            async def locked() -> _Outcome | None:
                if not await turns.lock_turn_row(db, workspace_id, ledger.turn_id, agent_id):
                    raise Forbidden("this turn is gone")
                return await attempt()

            outcome = await in_transaction(db, locked)
        if outcome is None:
            raise ServiceUnavailable("the turn changed while it was searched; try again")

    sealed: dict[Position, str] = {}

    def cursor(position: Position) -> str:
        """Sealed once per position: the page's end is its last hit's cursor, as written."""
        if position not in sealed:
            sealed[position] = encode_cursor(position, bound_to, keys.cursors, sealed_for)
        return sealed[position]

    views = [
        _view(s, cursor(outcome.positions[s.hit.message.id]), turn.created_at, parsed.include)
        for s in outcome.shown
    ]
    end_cursor = cursor(outcome.end) if outcome.more and outcome.end is not None else None
    if end_cursor is None and views:
        end_cursor = views[-1].cursor
    return HistoryResult(outcome.status, views, outcome.message_ids, outcome.more, end_cursor)


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: str
    shown: list[Shown]
    message_ids: list[int]
    more: bool
    # Where the next page starts (None: nowhere), and where a page starting after each hit
    # shown would start.
    end: Position | None
    positions: dict[int, Position]


@dataclass(frozen=True, slots=True)
class _Found:
    """A hit of one window, with its neighbors and where a page after it starts."""

    hit: HitRow
    around: Neighbors
    after: Position


@dataclass(frozen=True, slots=True)
class _Read:
    found: list[_Found]
    # Where the page after every one of `found` starts (None: there is nothing after them).
    resume: Position | None
    counts: dict[str, int]
    examined: int
    windows: int
    complete: bool
    turn_version: str
    new_weights: Mapping[str, Any] | None


async def _read_windows(
    db: Session,
    destination: Destination,
    filters: SearchFilters,
    rank: RankInputs,
    bound_to: str,
    start: Position | None,
    ledger: Ledger,
    first: int,
    *,
    lineage_complete: bool,
) -> _Read | None:
    """The page's hits, window after window (app.data.history_search.window), one statement
    each: the window the cursor is in, and while the page is not full, the next older ones —
    at most MAX_WINDOWS, so a page whose later windows hold nothing the turn may see ends short,
    with a cursor past what it examined (an empty page with a next page is not the end). None
    if another search of the turn recorded in between. The first statement reads the turn's
    ledger, which decides how many hits the page may have."""
    position = start
    found: list[_Found] = []
    counts = dict.fromkeys(RULES, 0)
    examined = windows = 0
    version: str | None = None
    new_weights: Mapping[str, Any] | None = None
    # The largest page the request allows, one more to know whether there is more, and a few
    # for the context hits a page passes over (app.history_search.ledger).
    want = first + 1 + SPARE
    while True:
        window = position.window if position else None
        floor = position.rare_floor if position else None
        ranked = position.ranked if position else None
        page = PageRequest(ranked, want - len(found), bound_to, window, floor)
        rows: SearchRows = await search(
            db, destination, filters, rank, page, lineage_complete=lineage_complete
        )
        if rows.turn_version is None:
            raise Forbidden("this turn is gone")
        if version is None:
            version, new_weights = rows.turn_version, rows.new_weights
            ledger.evidence = set(rows.evidence)
            size = ledger.page_size(first)
            want = min(want, size + 1 + SPARE) if size > 0 else 0
        elif rows.turn_version != version:
            return None
        windows += 1
        examined += rows.examined
        for rule, n in rows.counts.items():
            counts[rule] = counts.get(rule, 0) + n
        floor = rows.rare_floor
        following = Position(rows.next_window, floor) if rows.next_window is not None else None
        full = len(rows.hits) >= page.limit
        for i, hit in enumerate(rows.hits):
            last = i == len(rows.hits) - 1 and not full
            here = Position(window, floor, hit.tier, hit.score, hit.message.id)
            after = following if last and following is not None else here
            around = rows.neighbors.get(hit.message.id, Neighbors((), ()))
            found.append(_Found(hit, around, after))
        if full or len(found) >= want:
            resume = found[-1].after if found else following
            return _Read(
                found, resume, counts, examined, windows, rows.complete, version, new_weights
            )
        if following is None or windows >= MAX_WINDOWS:
            return _Read(
                found, following, counts, examined, windows, rows.complete, version, new_weights
            )
        position = following


def _view(shown: Shown, cursor: str, turn_started: datetime, terms: Sequence[str]) -> HitView:
    hit = shown.hit
    return HitView(
        shown=shown,
        cursor=cursor,
        where=presentation.where_label(hit),
        channel=presentation.channel_name(hit),
        this_conversation=hit.same_conversation,
        ago=presentation.ago(hit.message.created_at, turn_started),
        speaker=presentation.speaker_label(hit),
        text=presentation.snippet(hit.message.body, terms),
    )
