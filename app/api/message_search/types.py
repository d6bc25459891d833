"""The object types of messageSearch and searchStatus (docs/api.md), built from the results
of app.search.message_search."""

from __future__ import annotations

from enum import Enum

import strawberry

from app.api.directory.types import Message
from app.api.pagination import PageInfo
from app.data.readiness import ReadinessRow
from app.search.message_search import MessageHit, MessageSearchResult


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
    kind: AuthorKind
    id: strawberry.ID


@strawberry.type(
    description="A span of a message body, in UTF-16 code units (JavaScript string indices): "
    "`body.slice(start, end)` is the highlighted text. `end` is exclusive."
)
class TextRange:
    start: int
    end: int


@strawberry.type
class MessageSearchEdge:
    cursor: str
    node: Message
    highlights: list[TextRange] = strawberry.field(
        description="Where the query's terms occur in node.body, sorted and non-overlapping."
    )

    @classmethod
    def of(cls, hit: MessageHit) -> MessageSearchEdge:
        return cls(
            cursor=hit.cursor,
            node=Message.of(hit.message),
            highlights=[TextRange(start=s, end=e) for s, e in hit.highlights],
        )


@strawberry.type
class MessageSearchConnection:
    edges: list[MessageSearchEdge]
    page_info: PageInfo
    candidate_budget_exhausted: bool = strawberry.field(
        description="The request examined its whole candidate budget (matches the viewer may "
        "not read count too) before filling the page. The page may be short or empty; "
        "continue from pageInfo.endCursor."
    )

    @classmethod
    def of(cls, result: MessageSearchResult) -> MessageSearchConnection:
        return cls(
            edges=[MessageSearchEdge.of(h) for h in result.hits],
            page_info=PageInfo(has_next_page=result.has_next_page, end_cursor=result.end_cursor),
            candidate_budget_exhausted=result.budget_exhausted,
        )


@strawberry.type(description="Whether search is open for the viewer's workspace.")
class SearchStatus:
    ready: bool
    migrated: bool
    backfilled: bool
    finalized: bool

    @classmethod
    def of(cls, row: ReadinessRow) -> SearchStatus:
        return cls(
            ready=row.ready,
            migrated=row.migrated,
            backfilled=row.backfilled,
            finalized=row.finalized,
        )
