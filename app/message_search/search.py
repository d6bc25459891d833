"""One messageSearch: parsed, bound, then scanned, paged and hydrated in one statement, audited
in the next.

Order of work:
  1. the query is parsed and the filters (decoded ids, the time bounds in UTC) bound into the cursor's binding, so a
     cursor from any other search is INVALID_CURSOR before anything is read;
  2. the readiness gate (SEARCH_UNAVAILABLE until the workspace's index is complete);
  3. one statement (app.data.message_search.statement.search_page): the bounded, authorized
     candidate scan, the page (decided as app.message_search.paging.page_of decides it), and the page's
     messages, read from the very rows their verdicts admitted (one snapshot: no second
     authorization is needed), with their highlights; then the page's audit row; the caller's `remember` keeps
     what loaded for the rest of the request (the loaders' cache).
A failed audit write fails the search: nothing is shown that was not audited.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app import access
from app.data.audit import SearchAudit, query_digest
from app.data.message_search.inputs import (
    After,
    AuthorCondition,
    CandidateQuery,
    ScopeCondition,
)
from app.data.message_search.rows import PageHit
from app.data.message_search.statement import search_page
from app.data.readers import Reader
from app.data.rows import MessageRow
from app.data.session import Session
from app.errors import BadUserInput, Forbidden
from app.message_search.cursor import binding, decode_cursor, encode_cursor
from app.message_search.excerpts import Excerpt, excerpt_of
from app.message_search.highlights import Range, highlight_ranges
from app.message_search.keys import Keys
from app.message_search.operator_filters import (
    CompiledOperators,
    compile_operators,
    intersect,
    time_zone,
)
from app.message_search.operators import Operator, split_operators
from app.message_search.paging import budget_for, page_decided, position_of
from app.message_search.query import MAX_QUERY_CHARS, ParsedQuery, parse_query, utc_bound
from app.message_search.readiness import ensure_read_ready

MAX_FIRST = 100
DEFAULT_FIRST = 20

# The id type each author kind names: an id of another type is well-formed but matches nothing.
_AUTHOR_ID_TYPE = {"member": "Member", "agent": "Agent", "member_agents": "Member"}


@dataclass(frozen=True, slots=True)
class DecodedId:
    """A global id as the client sent it: its type name and primary key."""

    type_name: str
    pk: int


@dataclass(frozen=True, slots=True)
class AuthorRequest:
    kind: str  # member | agent | member_agents
    id: DecodedId


@dataclass(frozen=True, slots=True)
class MessageSearchRequest:
    query: str
    scope: DecodedId | None
    author: AuthorRequest | None
    first: int
    after: str | None
    # created_at >= since and created_at < until; a time without a zone is UTC.
    since: datetime | None = None
    until: datetime | None = None
    # The IANA zone the query's date-only operator values are days in.
    time_zone: str = "UTC"


class MessageHit:
    """A hit as a client sees it: its message, and its cursor, highlights and excerpt, each
    made the first time it is asked for. A client that selects none of them (a live
    subscription showing `node { key }`, a list without per-hit cursors) does not pay for them:
    a cursor is sealed with AES-GCM (~9 µs), highlights and an excerpt are cut from the body."""

    __slots__ = ("_bound", "_cursor", "_hit", "_in_window", "_keys", "_reader", "message")

    def __init__(
        self, h: PageHit, message: MessageRow, bound: BoundSearch, keys: Keys, reader: Reader
    ) -> None:
        self.message = message
        self._hit, self._bound, self._keys, self._reader = h, bound, keys, reader
        self._cursor: str | None = None
        self._in_window: list[Range] | None = None

    @property
    def cursor(self) -> str:
        """Sealed for this reader and search (app.message_search.cursor)."""
        if self._cursor is None:
            self._cursor = encode_cursor(
                position_of(self._hit.candidate),
                self._bound.bound_to,
                self._keys.cursors,
                self._reader.cursor_context,
            )
        return self._cursor

    @property
    def highlights(self) -> list[Range]:
        """Where the query's terms occur in the body (UTF-16; for a body longer than the
        window a search reads, those inside that window)."""
        start = self._hit.window_start
        return [(start + s, start + e) for s, e in self._window_highlights()]

    @property
    def excerpt(self) -> Excerpt:
        """The piece of the body a list shows."""
        h = self._hit
        return excerpt_of(
            h.window,
            h.window_start,
            self._window_highlights(),
            window_is_body=self.message.body_complete,
        )

    def _window_highlights(self) -> list[Range]:
        if self._in_window is None:
            h = self._hit
            self._in_window = highlight_ranges(h.window, h.marked, self._bound.parsed.include)
        return self._in_window


@dataclass(frozen=True, slots=True)
class MessageSearchResult:
    hits: list[MessageHit]
    has_next_page: bool
    end_cursor: str | None
    budget_exhausted: bool
    # How the query was read: its words (normalized) and its operators, resolved; the time
    # bounds in effect (arguments and operators intersected).
    text: str = ""
    operators: CompiledOperators = field(default_factory=CompiledOperators)
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class BoundSearch:
    """A messageSearch request checked and parsed, before anything is read: its words, its
    operators as typed, its filters and the binding its cursors are sealed to."""

    parsed: ParsedQuery
    operators: Sequence[Operator]
    normalized: str
    filters: dict[str, Any]
    bound_to: str
    scope: ScopeCondition | None
    author: AuthorCondition | None
    since: datetime | None
    until: datetime | None
    zone: Any


def bind_search(reader: Reader, request: MessageSearchRequest) -> BoundSearch:
    """The request's checks and parsing (BAD_USER_INPUT before anything is read); also what
    live push (app.live) subscribes with, so a subscription reads its query exactly as a
    search does."""
    access.MESSAGE_SEARCH.check(reader)
    if reader.destination is None:
        raise Forbidden("messageSearch needs a member token")
    since, until = utc_bound("since", request.since), utc_bound("until", request.until)
    if since is not None and until is not None and since >= until:
        raise BadUserInput("since must be earlier than until")
    if len(request.query) > MAX_QUERY_CHARS:
        raise BadUserInput(f"query is longer than {MAX_QUERY_CHARS} characters")
    zone = time_zone(request.time_zone)
    # NFKC first, so a full-width colon or at sign reads as the operator a person meant.
    parts = split_operators(unicodedata.normalize("NFKC", request.query))
    parsed = parse_query(parts.text, words_required=not parts.operators)
    normalized = _normalized(parsed, parts.operators)

    filters: dict[str, Any] = {"scope": None, "author": None}
    scope = None
    if request.scope is not None:
        type_name, pk = request.scope.type_name, request.scope.pk
        filters["scope"] = {"type": type_name, "id": pk}
        scope = ScopeCondition(pk if type_name == "Scope" else None)
    author = None
    if request.author is not None:
        kind, type_name, pk = request.author.kind, request.author.id.type_name, request.author.id.pk
        filters["author"] = {"kind": kind, "type": type_name, "id": pk}
        author = AuthorCondition(kind, pk if type_name == _AUTHOR_ID_TYPE[kind] else None)
    # The time bounds join the binding only when given, so a cursor minted before they existed
    # still continues its search.
    if since is not None:
        filters["since"] = since.isoformat()
    if until is not None:
        filters["until"] = until.isoformat()
    if request.time_zone != "UTC":
        filters["time_zone"] = request.time_zone
    return BoundSearch(
        parsed=parsed,
        operators=parts.operators,
        normalized=normalized,
        filters=filters,
        bound_to=binding(normalized, filters),
        scope=scope,
        author=author,
        since=since,
        until=until,
        zone=zone,
    )


async def candidate_query(
    db: Session, reader: Reader, bound: BoundSearch
) -> tuple[CandidateQuery, CompiledOperators]:
    """What the scan looks for: the operators resolved for this reader (names to ids, dates
    to bounds) and intersected with the arguments' bounds."""
    assert reader.destination is not None  # bind_search checked it
    compiled = await compile_operators(db, reader, bound.operators, bound.zone)
    since, until = intersect((bound.since, compiled.since), (bound.until, compiled.until))
    return (
        CandidateQuery(
            reader.destination.params(),
            bound.parsed.include,
            bound.parsed.exclude,
            scope=bound.scope,
            author=bound.author,
            authors=compiled.authors,
            scopes=compiled.scopes,
            since=since,
            until=until,
            lineage_complete=reader.lineage_complete,
            viewer=reader,
        ),
        compiled,
    )


def hit_of(
    h: PageHit, message: MessageRow, bound: BoundSearch, keys: Keys, reader: Reader
) -> MessageHit:
    """A hit as a client sees it: its cursor, its highlights and its excerpt (each made when
    first asked for)."""
    return MessageHit(h, message, bound, keys, reader)


async def message_search(
    db: Session,
    reader: Reader,
    request: MessageSearchRequest,
    *,
    keys: Keys,
    remember: Callable[[MessageRow], None] | None = None,
) -> MessageSearchResult:
    access.MESSAGE_SEARCH.check(reader)
    first = request.first
    if reader.destination is not None and not 1 <= first <= MAX_FIRST:
        raise BadUserInput(f"first must be between 1 and {MAX_FIRST}")
    bound = bind_search(reader, request)
    bound_to = bound.bound_to
    sealer, sealed_for = keys.cursors, reader.cursor_context
    start = (
        decode_cursor(request.after, bound_to, sealer, sealed_for)
        if request.after is not None
        else None
    )

    ensure_read_ready(reader.search_ready)
    query, compiled = await candidate_query(db, reader, bound)
    since, until = query.since, query.until
    budget = budget_for(first)
    # One statement: the scan, the page, and the page's messages and highlights; then the
    # page's audit row. A failed audit write fails the search (nothing is shown).
    found = await search_page(
        db,
        query,
        after=After(start.global_seq, start.scope_id, start.seq, start.message_id)
        if start
        else None,
        first=first,
        budget=budget,
        audit=SearchAudit(
            surface="message_search",
            actor_id=reader.actor_id,
            turn_id=None,
            query_digest=query_digest(keys.master_key, bound.normalized),
            filters={
                **bound.filters,
                **_audited_bounds(since, until, compiled),
                "first": first,
                "continued": start is not None,
            },
            destination=reader.destination.describe() if reader.destination else {},
        ),
    )
    page = page_decided(found, budget)
    # The page's messages were read from the rows their verdicts admitted, in the same
    # statement; a hit whose row no longer loads is left out rather than shown from the index.
    hits = []
    for h in found.hits:
        if h.message is None:
            continue
        if remember is not None and h.message.body_complete:
            remember(h.message)
        hits.append(hit_of(h, h.message, bound, keys, reader))
    return MessageSearchResult(
        hits=hits,
        has_next_page=page.has_next_page,
        end_cursor=encode_cursor(page.end, bound_to, sealer, sealed_for)
        if page.end is not None
        else None,
        budget_exhausted=page.budget_exhausted,
        text=bound.parsed.normalized,
        operators=compiled,
        since=since,
        until=until,
    )


def _normalized(parsed: ParsedQuery, operators: Sequence[Operator]) -> str:
    """The query as one canonical text: its words, then its operators as typed in order
    (cursors are bound to it, the audit keeps its digest)."""
    return " ".join([parsed.normalized, *(o.normalized for o in operators)]).strip()


def _audited_bounds(
    since: datetime | None, until: datetime | None, compiled: CompiledOperators
) -> dict[str, object]:
    """The operators as the audit keeps them: what they compiled to (ids, the time bounds in
    effect), never the names typed."""
    if not compiled.readings:
        return {}
    return {
        "operators": compiled.audited(),
        "effective_since": since.isoformat() if since else None,
        "effective_until": until.isoformat() if until else None,
    }
