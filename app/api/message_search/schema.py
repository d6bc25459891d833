"""messageSearch and searchStatus: the web Messages tab's search (docs/api.md). Root fields
only convert: GraphQL arguments in, types out; app.search.message_search does the work."""

from __future__ import annotations

import strawberry

from app.api.context import Info
from app.api.message_search.resolvers import (
    decoded,
    resolve_message_search,
    resolve_search_status,
)
from app.api.message_search.types import (
    AuthorFilter,
    AuthorKind,
    MessageSearchConnection,
    SearchStatus,
)
from app.search.message_search import DEFAULT_FIRST, AuthorRequest

# The domain's name of each kind.
_AUTHOR_KIND = {
    AuthorKind.MEMBER: "member",
    AuthorKind.AGENT: "agent",
    AuthorKind.MEMBER_AGENTS: "member_agents",
}


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
        return MessageSearchConnection.of(
            await resolve_message_search(
                info,
                query,
                scope_id,
                AuthorRequest(_AUTHOR_KIND[author.kind], decoded(author.id)) if author else None,
                DEFAULT_FIRST if first is None else first,
                after,
            )
        )

    @strawberry.field
    async def search_status(self, info: Info) -> SearchStatus:
        return SearchStatus.of(await resolve_search_status(info))
