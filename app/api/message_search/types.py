"""The object types of messageSearch and searchStatus (docs/api.md), built from the results
of app.message_search.search."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from app.api.directory.types import Agent, Message, Scope
from app.api.engine.completion import without_info
from app.api.identity.types import Member
from app.api.node import Node
from app.api.pagination import PageInfo
from app.api.policies import PARENT, PER_ITEM, guarded, sized
from app.data.readiness import ReadinessRow
from app.data.rows import ActorRow, ScopeRow
from app.message_search.operator_filters import Reading
from app.message_search.search import MessageHit, MessageSearchResult


@strawberry.enum(description="Whose messages an author filter keeps.")
class AuthorKind(Enum):
    MEMBER = strawberry.enum_value("member", description="That person's own messages.")
    AGENT = strawberry.enum_value("agent", description="That agent's messages.")
    MEMBER_AGENTS = strawberry.enum_value(
        "member_agents",
        description="Messages by the agents that person owns; not the person's own.",
    )


@strawberry.input(description="Narrow a search to one author (both fields are required).")
class AuthorFilter:
    kind: AuthorKind = strawberry.field(description="Whose messages to keep (see AuthorKind).")
    id: strawberry.ID = strawberry.field(
        description="A Member id (MEMBER, MEMBER_AGENTS) or an Agent id (AGENT). An id of "
        "another type or of nothing matches no message."
    )


@strawberry.type(
    description="A span of a message body, in UTF-16 code units (JavaScript string indices): "
    "`body.slice(start, end)` is the highlighted text. `end` is exclusive."
)
class TextRange:
    start: int = strawberry.field(description="First highlighted UTF-16 code unit (from 0).")
    end: int = strawberry.field(description="Just past the last highlighted code unit.")


@strawberry.type(
    description="A bounded piece of a hit's body for a result list: the whole body when it is "
    "at most 500 characters, otherwise 500 characters from a little before the first "
    "highlight, cut at spaces. The whole body is `node.body`."
)
class Excerpt:
    text: str = strawberry.field(description="The piece of the body.")
    start: int = strawberry.field(
        description="Where it starts in node.body (UTF-16 code units): body.slice(start, end)."
    )
    end: int = strawberry.field(description="Where it ends in node.body (exclusive).")
    highlights: list[TextRange] = sized(
        "Where the query's terms occur in `text` (offsets into the excerpt).", PER_ITEM
    )
    more_before: bool = strawberry.field(description="The body goes on before the excerpt.")
    more_after: bool = strawberry.field(description="The body goes on after the excerpt.")


@strawberry.type(description="One messageSearch hit.")
class MessageSearchEdge:
    hit: strawberry.Private[MessageHit]

    # The hit's parts are made only when selected (app.message_search.search.MessageHit), and
    # read by the executor's fast path without building a resolver's info (without_info).
    def _cursor(self) -> str:
        return self.hit.cursor

    def _node(self) -> Message:
        return Message.of(self.hit.message)

    def _highlights(self) -> list[TextRange]:
        return [TextRange(start=s, end=e) for s, e in self.hit.highlights]

    def _excerpt(self) -> Excerpt:
        excerpt = self.hit.excerpt
        return Excerpt(
            text=excerpt.text,
            start=excerpt.start,
            end=excerpt.end,
            highlights=[TextRange(start=s, end=e) for s, e in excerpt.highlights],
            more_before=excerpt.more_before,
            more_after=excerpt.more_after,
        )

    @guarded(
        "Opaque position of this hit; as `after`, continues right after it (same query and "
        "filters only).",
        access=PARENT,
    )
    @without_info(_cursor)
    def cursor(self) -> str:
        return self._cursor()

    @guarded(
        "The message, as the viewer may read it now (open it in place with "
        "node.scope.messages(around: node.id)).",
        access=PARENT,
    )
    @without_info(_node)
    def node(self) -> Message:
        return self._node()

    @guarded(
        "Where the query's terms occur in node.body, sorted and non-overlapping. In a body "
        "longer than 2,048 characters, those in the part the search read: from a little "
        "before the first occurrence of a term.",
        access=PARENT,
        size=PER_ITEM,
    )
    @without_info(_highlights)
    def highlights(self) -> list[TextRange]:
        return self._highlights()

    @guarded(
        "What a result list shows of the hit: bounded, whatever the body's length.",
        access=PARENT,
    )
    @without_info(_excerpt)
    def excerpt(self) -> Excerpt:
        return self._excerpt()

    @classmethod
    def of(cls, hit: MessageHit) -> MessageSearchEdge:
        return cls(hit=hit)


def _match(row: ActorRow | ScopeRow) -> Member | Agent | Scope:
    if isinstance(row, ScopeRow):
        return Scope.of(row)
    return Member.of(row) if row.kind == "member" else Agent.of(row)


@strawberry.type(
    description="One operator of the query (from:, agents-of:, in:, since:, "
    "until:, on:), as it was read."
)
class QueryOperator:
    name: str = strawberry.field(
        description="The operator in lower case, without the colon: from, agents-of, in, "
        "since, until or on."
    )
    value: str = strawberry.field(description="The value as typed, quotes removed.")
    negated: bool = strawberry.field(description="Typed with a leading `-`: excludes.")
    known: bool = strawberry.field(
        description="The value named something the viewer may see (always true for dates). "
        "False: a positive operator matches nothing, a negated one excludes nothing; a name "
        "that does not exist and one the viewer may not see are both false."
    )
    matches: list[Node] = sized(
        "What the value resolved to (Member, Agent or Scope nodes): members or agents (from:), the member (agents-of:), "
        "conversations (in:; the DM for in:@person). Empty for dates and unknown values.",
        PER_ITEM,
    )

    @classmethod
    def of(cls, r: Reading) -> QueryOperator:
        return cls(
            name=r.operator.name,
            value=r.operator.value,
            negated=r.operator.negated,
            known=r.known,
            matches=[_match(m) for m in r.matches],
        )


@strawberry.type(
    description="How messageSearch read its query, so a client can show it back "
    "(chips for operators, a warning for one that matched nothing)."
)
class QueryInterpretation:
    text: str = strawberry.field(
        description="The words searched for, normalized (lower case, phrases quoted, "
        "excluded words with `-`); empty for a query of operators only."
    )
    operators: list[QueryOperator] = sized("The operators, in the order typed.", PER_ITEM)
    since: datetime | None = strawberry.field(
        description="The start of the time range in effect (arguments and operators "
        "intersected), in UTC; null: none."
    )
    until: datetime | None = strawberry.field(
        description="The (exclusive) end of the time range in effect, in UTC; null: none."
    )


@strawberry.type(description="A page of messageSearch hits, newest first.")
class MessageSearchConnection:
    edges: list[MessageSearchEdge] = sized(
        "At most `first` hits, newest first; may be fewer (even none) when the candidate "
        "budget ran out.",
        PER_ITEM,
    )
    page_info: PageInfo = strawberry.field(
        description="Pass endCursor as `after` while hasNextPage is true."
    )
    candidate_budget_exhausted: bool = strawberry.field(
        description="The request examined its whole candidate budget (matches the viewer may "
        "not read count too) before filling the page. The page may be short or empty; "
        "continue from pageInfo.endCursor."
    )
    interpretation: QueryInterpretation = strawberry.field(
        description="How the query was read: its words and its operators (docs/api.md, Operators)."
    )
    live_event: str | None = strawberry.field(
        description="The position of the workspace's live log read just before this page "
        "(docs/live.md): pass it as messageSearchUpdates' `after` (same query and filters) and "
        "nothing committed after the page was read is missed; an update may repeat a hit the "
        "page shows (replace it by node id). Only a position: it names no message."
    )

    @classmethod
    def of(cls, result: MessageSearchResult, live_event: str | None) -> MessageSearchConnection:
        return cls(
            edges=[MessageSearchEdge.of(h) for h in result.hits],
            page_info=PageInfo(has_next_page=result.has_next_page, end_cursor=result.end_cursor),
            candidate_budget_exhausted=result.budget_exhausted,
            interpretation=QueryInterpretation(
                text=result.text,
                operators=[QueryOperator.of(r) for r in result.operators.readings],
                since=result.since,
                until=result.until,
            ),
            live_event=live_event,
        )


@strawberry.type(description="Whether search is open for the viewer's workspace.")
class SearchStatus:
    ready: bool = strawberry.field(
        description="Search is open: messageSearch and historySearch answer (otherwise "
        "SEARCH_UNAVAILABLE). True only when the three steps below are done."
    )
    migrated: bool = strawberry.field(description="The search index exists for the workspace.")
    backfilled: bool = strawberry.field(
        description="Every message written before the index existed is indexed."
    )
    finalized: bool = strawberry.field(
        description="The operator checked the index is complete and kept current."
    )

    @classmethod
    def of(cls, row: ReadinessRow) -> SearchStatus:
        return cls(
            ready=row.ready,
            migrated=row.migrated,
            backfilled=row.backfilled,
            finalized=row.finalized,
        )
