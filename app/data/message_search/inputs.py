"""What one messageSearch statement is given: the reader's destination, the query's terms, its
filters, and the position a page continues after."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.data.readers import Reader


@dataclass(frozen=True, slots=True)
class ScopeCondition:
    """messageSearch(scopeId:): only that scope. scope_id None is an id of no scope."""

    scope_id: int | None


@dataclass(frozen=True, slots=True)
class AuthorCondition:
    """messageSearch(author:). kind is member | agent | member_agents; actor_id None is an id
    of nothing of that kind."""

    kind: str
    actor_id: int | None


@dataclass(frozen=True, slots=True)
class AuthorSet:
    """The from: (or agents-of:) operators of a query, resolved: messages by one of actor_ids
    (agents_of: by an agent one of actor_ids owns, as AuthorCondition's member_agents);
    negated: by none of them. An empty positive set matches nothing."""

    actor_ids: tuple[int, ...]
    agents_of: bool = False
    negated: bool = False


@dataclass(frozen=True, slots=True)
class ScopeSet:
    """The in: operators of a query, resolved: messages of one of the conversations root_ids
    or of their threads (a document's root_scope_id), or of one of the threads thread_ids;
    negated: of none of them. An empty positive set matches nothing."""

    root_ids: tuple[int, ...]
    thread_ids: tuple[int, ...] = ()
    negated: bool = False


@dataclass(frozen=True, slots=True)
class After:
    """Continue strictly after this position; scope_id None means after all of global_seq."""

    global_seq: int
    scope_id: int | None
    seq: int | None
    message_id: int | None


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What a scan looks for: a reader's destination ($1-$4), the query's terms, the filters.

    since (inclusive) and until (exclusive) bound the message's created_at; both are aware
    datetimes (app.message_search.search normalizes them to UTC)."""

    destination: tuple[int, str, int, list[int]]
    # No words (include empty): a query of operators only, every document is a match (minus
    # the excluded words).
    include: Sequence[str]
    exclude: Sequence[str]
    scope: ScopeCondition | None = None
    author: AuthorCondition | None = None
    # The query's operators (app.message_search.operator_filters), each a further conjunct.
    authors: Sequence[AuthorSet] = ()
    scopes: Sequence[ScopeSet] = ()
    since: datetime | None = None
    until: datetime | None = None
    # The reader's Reader.lineage_complete: a missing lineage summary is denied, not walked.
    lineage_complete: bool = False
    # Who searches: a filter naming a conversation or an author then counts only candidates
    # this reader may read (app.data.message_search.conditions). None: every match is a
    # candidate.
    viewer: Reader | None = None
