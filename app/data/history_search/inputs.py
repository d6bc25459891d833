"""What one historySearch statement is given, and its parameters bound once each, by name.

The destination is $1-$4 (app.data.eligibility); every other value is added to the statement's
Params here and referred to by the placeholder kept in `Bound`, cast to its type. No fragment
numbers a parameter, so two weights can never be swapped by miscounting.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.data.eligibility import Destination
from app.data.identity_links import linked_identities
from app.data.params import Params


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """One search, as bound by the turn and narrowed by the arguments."""

    agent_id: int
    turn_id: int
    trigger_id: int | None
    # The agent's conversations: narrows the sidecar scan (perspective is checked per row).
    conversations: tuple[int, ...]
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    author_id: int | None
    since: datetime | None
    until: datetime | None
    # Text a hit must contain, lower-cased, to be an exact match (app.history.exact): the whole
    # query as typed when it has several words, and its identifiers and phrases.
    whole: str | None = None
    verbatim: tuple[str, ...] = ()
    # speaker REQUESTER: the author is the requester together with their live linked
    # identities, resolved by the statement itself (docs/identity.md).
    author_linked: bool = False


@dataclass(frozen=True, slots=True)
class Weights:
    """The ranking's constants (app.history.ranking), as this search uses them."""

    window: int
    rare_window: int
    k1: float
    b: float
    best_read: int
    context_sources: int
    context_share: float
    follow_up_share: float
    context_fill: int
    supersedes_share: float
    asks: float
    recency: float
    recency_days: float
    same_conversation: float


@dataclass(frozen=True, slots=True)
class RankInputs:
    """What the ranking features are measured against: the turn, and the weights."""

    turn_created_at: datetime
    conversation_id: int
    weights: Weights


@dataclass(frozen=True, slots=True)
class PageRequest:
    # The last hit's (tier, score, id) of the previous page in this window, if any.
    after: tuple[int, float, int] | None
    limit: int
    # The cursor binding (app.history.cursor): the weights are frozen per turn and binding.
    binding: str
    # The window (app.data.history_search.window): the matches older than this recency
    # position (None: the first window, with the rarest words' matches), and how far back the
    # first window read the rarest words' matches (None: all of them).
    window: int | None = None
    rare_floor: int | None = None


class Bound:
    """The statement's parameters by name. A fragment that reads `b.name` gets its placeholder
    with its cast (`$7::text[]`); the value is added to the statement's Params the first time,
    so every parameter bound is one the text uses (PostgreSQL cannot type one it does not).
    `b.given(name)`: whether an optional value (author, since, until, trigger, whole,
    verbatim, after_*, window_before, rare_floor, known_allowed) was given; a fragment that would use it is left out otherwise."""

    def __init__(self, params: Params, values: dict[str, tuple[object, str]]) -> None:
        self._params = params
        self._values = values
        self._placed: dict[str, str] = {}

    def given(self, name: str) -> bool:
        return self._values[name][0] is not None

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        placed = self._placed.get(name)
        if placed is None:
            try:
                value, cast = self._values[name]
            except KeyError:
                raise AttributeError(name) from None
            if value is None:
                raise AttributeError(f"{name} was not given")
            placed = self._placed[name] = self._params.add(value) + cast
        return placed

    @property
    def values(self) -> list[object]:
        return self._params.values


def bind(
    destination: Destination,
    filters: SearchFilters,
    rank: RankInputs,
    page: PageRequest,
    known_allowed: list[int] | None,
) -> Bound:
    """The statement's parameters, named (the destination is $1-$4)."""
    w = rank.weights
    tier, score, message = page.after if page.after else (None, None, None)
    return Bound(
        Params(destination.params()),
        {
            "agent": (filters.agent_id, "::bigint"),
            "include": (list(filters.include), "::text[]"),
            "exclude": (list(filters.exclude), "::text[]"),
            "turn": (filters.turn_id, "::bigint"),
            "trigger": (filters.trigger_id, "::bigint"),
            "conversations": (list(filters.conversations), "::bigint[]"),
            "author": (filters.author_id, "::bigint"),
            "author_linked": (True if filters.author_linked else None, "::boolean"),
            "since": (filters.since, "::timestamptz"),
            "until": (filters.until, "::timestamptz"),
            "whole": (filters.whole, "::text"),
            "verbatim": (list(filters.verbatim) or None, "::text[]"),
            "binding": (page.binding, "::text"),
            "turn_created_at": (rank.turn_created_at, "::timestamptz"),
            "conversation": (rank.conversation_id, "::bigint"),
            "after_tier": (tier, "::int"),
            "after_score": (score, "::float8"),
            "after_id": (message, "::bigint"),
            "limit": (page.limit, "::int"),
            "window_before": (page.window, "::bigint"),
            "rare_floor": (page.rare_floor, "::bigint"),
            "known_allowed": (known_allowed, "::bigint[]"),
            "window": (w.window, "::int"),
            "rare_window": (w.rare_window, "::int"),
            "k1": (w.k1, "::float8"),
            "b": (w.b, "::float8"),
            "best_read": (w.best_read, "::int"),
            "context_sources": (w.context_sources, "::int"),
            "context_share": (w.context_share, "::float8"),
            "follow_up_share": (w.follow_up_share, "::float8"),
            "context_fill": (w.context_fill, "::int"),
            "supersedes_share": (w.supersedes_share, "::float8"),
            "asks": (w.asks, "::float8"),
            "recency": (w.recency, "::float8"),
            "recency_days": (w.recency_days, "::float8"),
            "same_conversation": (w.same_conversation, "::float8"),
        },
    )


def author_and_time(b: Bound, alias: str) -> list[str]:
    """The speaker and time bounds as conditions on `alias` (a message row, or a document: both
    carry author_id and created_at); only the bounds given."""
    conditions = []
    if b.given("author") and b.given("author_linked"):
        # The requester and whoever is linked to them now: their messages written before
        # the link included, author ids as written.
        conditions.append(f"{alias}.author_id = any({linked_identities(b.author)})")
    elif b.given("author"):
        conditions.append(f"{alias}.author_id = {b.author}")
    if b.given("since"):
        conditions.append(f"{alias}.created_at >= {b.since}")
    if b.given("until"):
        conditions.append(f"{alias}.created_at < {b.until}")
    return conditions
