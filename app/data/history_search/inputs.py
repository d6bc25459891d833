"""What one historySearch statement is given, and its parameters bound once each, by name.

The destination is $1-$4 (app.data.eligibility); every other value has its own typed property
on `Bound`, which adds it to the statement's Params (app.data.params) the first time a fragment
reads it, cast to its type. No fragment numbers a parameter, so two weights can never be
swapped by miscounting, and a misspelt one is mypy's error, not the statement's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

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
    # Text a hit must contain, lower-cased, to be an exact match (app.history_search.exact): the whole
    # query as typed when it has several words, and its identifiers and phrases.
    whole: str | None = None
    verbatim: tuple[str, ...] = ()
    # speaker REQUESTER: the author is the requester together with their live linked
    # identities, resolved by the statement itself (docs/identity.md).
    author_linked: bool = False


@dataclass(frozen=True, slots=True)
class Weights:
    """The ranking's constants (app.history_search.ranking), as this search uses them."""

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
    # The cursor binding (app.history_search.cursor): the weights are frozen per turn and binding.
    binding: str
    # The window (app.data.history_search.window): the matches older than this recency
    # position (None: the first window, with the rarest words' matches), and how far back the
    # first window read the rarest words' matches (None: all of them).
    window: int | None = None
    rare_floor: int | None = None


class Bound:
    """The statement's parameters, one typed property each. Reading `b.agent` binds the value
    the first time and gives its placeholder with its cast (`$7::bigint`); a later read gives
    the same one. So every parameter bound is one the text uses (PostgreSQL cannot type one it
    does not), numbered in the order the text first reads them.

    An optional value has a `has_*` check beside it, which binds nothing: a fragment that would
    read it is left out when it was not given (reading it then is a bug, and raises)."""

    def __init__(
        self,
        destination: Destination,
        filters: SearchFilters,
        rank: RankInputs,
        page: PageRequest,
        known_allowed: list[int] | None,
    ) -> None:
        self._params = Params(destination.params())  # $1-$4 (app.data.eligibility)
        self._filters = filters
        self._rank = rank
        self._weights = rank.weights
        self._page = page
        self._after = page.after or (None, None, None)
        self._known_allowed = known_allowed

    @property
    def values(self) -> list[object]:
        """The values bound so far, in placeholder order: read them after the text."""
        return self._params.values

    def _add(self, value: object, cast: str) -> str:
        if value is None:
            raise ValueError("an optional parameter was read without its has_* check")
        return self._params.add(value, cast)

    # The search: the turn, the agent, the query's words and the filters.

    @cached_property
    def agent(self) -> str:
        return self._add(self._filters.agent_id, "bigint")

    @cached_property
    def turn(self) -> str:
        return self._add(self._filters.turn_id, "bigint")

    @property
    def has_trigger(self) -> bool:
        return self._filters.trigger_id is not None

    @cached_property
    def trigger(self) -> str:
        return self._add(self._filters.trigger_id, "bigint")

    @cached_property
    def conversations(self) -> str:
        return self._add(list(self._filters.conversations), "bigint[]")

    @cached_property
    def include(self) -> str:
        return self._add(list(self._filters.include), "text[]")

    @cached_property
    def exclude(self) -> str:
        return self._add(list(self._filters.exclude), "text[]")

    @property
    def has_author(self) -> bool:
        return self._filters.author_id is not None

    @cached_property
    def author(self) -> str:
        return self._add(self._filters.author_id, "bigint")

    @property
    def author_linked(self) -> bool:
        """The author stands for the requester and their live linked identities (a flag of the
        text, not a parameter)."""
        return self._filters.author_linked

    @property
    def has_since(self) -> bool:
        return self._filters.since is not None

    @cached_property
    def since(self) -> str:
        return self._add(self._filters.since, "timestamptz")

    @property
    def has_until(self) -> bool:
        return self._filters.until is not None

    @cached_property
    def until(self) -> str:
        return self._add(self._filters.until, "timestamptz")

    @property
    def has_whole(self) -> bool:
        return self._filters.whole is not None

    @cached_property
    def whole(self) -> str:
        return self._add(self._filters.whole, "text")

    @property
    def has_verbatim(self) -> bool:
        return bool(self._filters.verbatim)

    @cached_property
    def verbatim(self) -> str:
        return self._add(list(self._filters.verbatim) or None, "text[]")

    # The page: its window, the cursor's position, its size and binding.

    @property
    def has_window_before(self) -> bool:
        """A later window: only matches older than where the one before it ended."""
        return self._page.window is not None

    @cached_property
    def window_before(self) -> str:
        return self._add(self._page.window, "bigint")

    @property
    def has_rare_floor(self) -> bool:
        return self._page.rare_floor is not None

    @cached_property
    def rare_floor(self) -> str:
        return self._add(self._page.rare_floor, "bigint")

    @property
    def has_after(self) -> bool:
        """A cursor position: the page starts after the previous page's last hit."""
        return self._page.after is not None

    @cached_property
    def after_tier(self) -> str:
        return self._add(self._after[0], "int")

    @cached_property
    def after_score(self) -> str:
        return self._add(self._after[1], "float8")

    @cached_property
    def after_id(self) -> str:
        return self._add(self._after[2], "bigint")

    @cached_property
    def limit(self) -> str:
        return self._add(self._page.limit, "int")

    @cached_property
    def binding(self) -> str:
        return self._add(self._page.binding, "text")

    @property
    def has_known_allowed(self) -> bool:
        """The request already computed the destination's allowed audiences."""
        return self._known_allowed is not None

    @cached_property
    def known_allowed(self) -> str:
        return self._add(self._known_allowed, "bigint[]")

    # The ranking: what its features are measured against, and its weights.

    @cached_property
    def turn_created_at(self) -> str:
        return self._add(self._rank.turn_created_at, "timestamptz")

    @cached_property
    def conversation(self) -> str:
        return self._add(self._rank.conversation_id, "bigint")

    @cached_property
    def window(self) -> str:
        return self._add(self._weights.window, "int")

    @cached_property
    def rare_window(self) -> str:
        return self._add(self._weights.rare_window, "int")

    @cached_property
    def k1(self) -> str:
        return self._add(self._weights.k1, "float8")

    @cached_property
    def b(self) -> str:
        return self._add(self._weights.b, "float8")

    @cached_property
    def best_read(self) -> str:
        return self._add(self._weights.best_read, "int")

    @cached_property
    def context_sources(self) -> str:
        return self._add(self._weights.context_sources, "int")

    @cached_property
    def context_share(self) -> str:
        return self._add(self._weights.context_share, "float8")

    @cached_property
    def follow_up_share(self) -> str:
        return self._add(self._weights.follow_up_share, "float8")

    @cached_property
    def context_fill(self) -> str:
        return self._add(self._weights.context_fill, "int")

    @cached_property
    def supersedes_share(self) -> str:
        return self._add(self._weights.supersedes_share, "float8")

    @cached_property
    def asks(self) -> str:
        return self._add(self._weights.asks, "float8")

    @cached_property
    def recency(self) -> str:
        return self._add(self._weights.recency, "float8")

    @cached_property
    def recency_days(self) -> str:
        return self._add(self._weights.recency_days, "float8")

    @cached_property
    def same_conversation(self) -> str:
        return self._add(self._weights.same_conversation, "float8")


def author_and_time(b: Bound, alias: str) -> list[str]:
    """The speaker and time bounds as conditions on `alias` (a message row, or a document: both
    carry author_id and created_at); only the bounds given."""
    conditions = []
    if b.has_author and b.author_linked:
        # The requester and whoever is linked to them now: their messages written before
        # the link included, author ids as written.
        conditions.append(f"{alias}.author_id = any({linked_identities(b.author)})")
    elif b.has_author:
        conditions.append(f"{alias}.author_id = {b.author}")
    if b.has_since:
        conditions.append(f"{alias}.created_at >= {b.since}")
    if b.has_until:
        conditions.append(f"{alias}.created_at < {b.until}")
    return conditions
