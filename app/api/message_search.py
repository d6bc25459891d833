"""messageSearch and searchStatus: the web Messages tab's search (docs/api.md). The resolvers
only convert between GraphQL and app.search.message_search, which does the work."""

from __future__ import annotations

from enum import Enum

import strawberry

from app.api.context import Info
from app.api.ids import decode_id
from app.api.pagination import PageInfo
from app.api.types import Message
from app.data.readiness import readiness_of
from app.search.message_search import (
    DEFAULT_FIRST,
    AuthorRequest,
    DecodedId,
    MessageHit,
    MessageSearchRequest,
    message_search,
)


@strawberry.enum(description="Whose messages an author filter keeps.")
class AuthorKind(Enum):
    MEMBER = strawberry.enum_value("member", description="That person's own messages.")
    AGENT = strawberry.enum_value("agent", description="That agent's messages.")
    MEMBER_AGENTS = strawberry.enum_value(
        "member_agents",
        description="Messages by the agents that person owns; not the person's own.",
    )


# The domain's name of each kind.
_AUTHOR_KIND = {
    AuthorKind.MEMBER: "member",
    AuthorKind.AGENT: "agent",
    AuthorKind.MEMBER_AGENTS: "member_agents",
}


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


@strawberry.type
class MessageSearchConnection:
    edges: list[MessageSearchEdge]
    page_info: PageInfo
    candidate_budget_exhausted: bool = strawberry.field(
        description="The request examined its whole candidate budget (matches the viewer may "
        "not read count too) before filling the page. The page may be short or empty; "
        "continue from pageInfo.endCursor."
    )


@strawberry.type(description="Whether search is open for the viewer's workspace.")
class SearchStatus:
    ready: bool
    migrated: bool
    backfilled: bool
    finalized: bool


@strawberry.type
class MessageSearchQuery:
    @strawberry.field(
        description='Messages the viewer may read that contain every query word ("exact '
        'phrases" and -excluded words supported), newest first. Member tokens only.'
    )
    async def message_search(
        self,
        info: Info,
        query: str,
        scope_id: strawberry.ID | None = None,
        author: AuthorFilter | None = None,
        first: int | None = 20,
        after: str | None = None,
    ) -> MessageSearchConnection:
        ctx = info.context
        master = ctx.settings.master_key
        result = await message_search(
            ctx.db,
            ctx.reader,
            MessageSearchRequest(
                query,
                _decoded(scope_id) if scope_id is not None else None,
                AuthorRequest(_AUTHOR_KIND[author.kind], _decoded(author.id)) if author else None,
                DEFAULT_FIRST if first is None else first,
                after,
            ),
            master_key=master.get_secret_value() if master else None,
            load_messages=ctx.loaders.message_by_id.load_many,
        )
        return MessageSearchConnection(
            edges=[_edge(h) for h in result.hits],
            page_info=PageInfo(has_next_page=result.has_next_page, end_cursor=result.end_cursor),
            candidate_budget_exhausted=result.budget_exhausted,
        )

    @strawberry.field
    async def search_status(self, info: Info) -> SearchStatus:
        row = await readiness_of(info.context.db, info.context.reader.workspace_id)
        return SearchStatus(
            ready=row.ready,
            migrated=row.migrated,
            backfilled=row.backfilled,
            finalized=row.finalized,
        )


def _decoded(global_id: str) -> DecodedId:
    # Ids were parsed while the request was validated; decoding again cannot fail.
    type_name, pk = decode_id(global_id)
    return DecodedId(type_name, pk)


def _edge(hit: MessageHit) -> MessageSearchEdge:
    return MessageSearchEdge(
        cursor=hit.cursor,
        node=Message.of(hit.message),
        highlights=[TextRange(start=s, end=e) for s, e in hit.highlights],
    )
