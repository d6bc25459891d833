"""messageSearch and searchStatus: the web Messages tab's search (docs/api.md). Root fields
only convert: GraphQL arguments in, types out; app.message_search.search does the work."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from app import access
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
from app.api.policies import Page, guarded
from app.message_search.search import DEFAULT_FIRST, MAX_FIRST, AuthorRequest

# The domain's name of each kind.
AUTHOR_KIND = {
    AuthorKind.MEMBER: "member",
    AuthorKind.AGENT: "agent",
    AuthorKind.MEMBER_AGENTS: "member_agents",
}


@strawberry.type
class MessageSearchQuery:
    @guarded(
        'Messages the viewer may read that contain every query word ("exact phrases" and '
        "-excluded words supported) and match every operator typed in the query (from:, "
        "agents-of:, in:, since:, until:, on:; docs/api.md), newest first. Every filter and "
        "operator only narrows what the viewer may read. Errors: BAD_USER_INPUT (query empty "
        "or over 500 characters / 32 terms / 16 operators, an operator without a value or "
        "with an unreadable date, an unknown timeZone, "
        "first out of range, since not before until, a time outside the years 1-9999 in UTC), "
        "INVALID_CURSOR (`after` from another search or reader), SEARCH_UNAVAILABLE (the "
        "workspace's index is not ready).",
        access=access.MESSAGE_SEARCH,
        size=Page(DEFAULT_FIRST),
    )
    async def message_search(
        self,
        info: Info,
        query: Annotated[
            str,
            strawberry.argument(
                description='Words to find, all of them; `"an exact phrase"` and `-word` to '
                "exclude; operators such as `from:@bob in:#infra since:2026-03-01` (docs/api.md, "
                "Operators). At most 500 characters and 32 terms. Case and English word forms "
                "are matched loosely (stemming). A query of operators only lists their messages."
            ),
        ],
        scope_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="Only messages of this scope (a Scope id). An id the viewer may "
                "not read, or of something else, matches nothing."
            ),
        ] = None,
        author: Annotated[
            AuthorFilter | None,
            strawberry.argument(description="Only messages by this author (see AuthorKind)."),
        ] = None,
        since: Annotated[
            datetime | None,
            strawberry.argument(
                description="Only messages posted at or after this time (inclusive). A time "
                "without a zone is UTC."
            ),
        ] = None,
        until: Annotated[
            datetime | None,
            strawberry.argument(
                description="Only messages posted before this time (exclusive); must be later "
                "than `since`. A time without a zone is UTC."
            ),
        ] = None,
        time_zone: Annotated[
            str,
            strawberry.argument(
                description="The IANA time zone (such as Europe/Paris) in which the query's "
                "date operators (since:2026-03-01, on:2026-03-14) are whole days. An unknown "
                "zone is BAD_USER_INPUT."
            ),
        ] = "UTC",
        first: Annotated[
            int | None,
            strawberry.argument(
                description=f"Page size, 1-{MAX_FIRST}; null means the default, {DEFAULT_FIRST}."
            ),
        ] = DEFAULT_FIRST,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="pageInfo.endCursor of the previous page. Only valid with the same "
                "query and filters (query, scopeId, author, since, until, timeZone); `first` may change."
            ),
        ] = None,
    ) -> MessageSearchConnection:
        result, live_event = await resolve_message_search(
            info,
            query,
            scope_id,
            AuthorRequest(AUTHOR_KIND[author.kind], decoded(author.id)) if author else None,
            since,
            until,
            DEFAULT_FIRST if first is None else first,
            after,
            time_zone,
        )
        return MessageSearchConnection.of(result, live_event)

    @guarded(
        "Whether search is open for the viewer's workspace: messageSearch and historySearch "
        "answer SEARCH_UNAVAILABLE until `ready`.",
        access=access.SEARCH_STATUS,
    )
    async def search_status(self, info: Info) -> SearchStatus:
        return SearchStatus.of(await resolve_search_status(info))
