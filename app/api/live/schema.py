"""The Subscription root (docs/live.md): messageSearchUpdates and scopeMessages. Root fields
only convert: arguments in, types out; app.live does the work."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import strawberry

from app import access
from app.api.context import Info
from app.api.live.resolvers import scope_updates, search_updates
from app.api.live.types import MessageSearchUpdate, ScopeMessageUpdate
from app.api.message_search.resolvers import decoded
from app.api.message_search.schema import AUTHOR_KIND
from app.api.message_search.types import AuthorFilter
from app.api.policies import guarded
from app.message_search.search import AuthorRequest

_AFTER = strawberry.argument(
    description="The `event` of the last update received: resume right after it, without "
    "gaps or duplicates; INVALID_CURSOR when the live log no longer goes back that far "
    "(search again, then subscribe without it). Null: from now on."
)
_OVER = (
    " Over WebSocket only (graphql-transport-ws; the token in connection_init's payload as "
    '{"Authorization": "Bearer TOKEN"}). Errors: UNAUTHENTICATED when the token stops working, '
    "LIMIT_EXCEEDED past the open subscriptions a token or server may have."
)


@strawberry.type
class LiveSubscription:
    @guarded(
        "Updates of a messageSearch as messages are posted, edited and deleted and as access "
        "changes: the same arguments and operators, each event admitted by the same rules for "
        "the viewer at the moment it is sent (docs/live.md)." + _OVER,
        access=access.MESSAGE_SEARCH_UPDATES,
        is_subscription=True,
    )
    async def message_search_updates(
        self,
        info: Info,
        query: Annotated[
            str, strawberry.argument(description="As messageSearch's query, operators included.")
        ],
        scope_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(description="As messageSearch's scopeId."),
        ] = None,
        author: Annotated[
            AuthorFilter | None,
            strawberry.argument(description="As messageSearch's author."),
        ] = None,
        time_zone: Annotated[
            str | None,
            strawberry.argument(description="As messageSearch's timeZone (null: UTC)."),
        ] = None,
        after: Annotated[str | None, _AFTER] = None,
    ) -> AsyncIterator[MessageSearchUpdate]:
        request = AuthorRequest(AUTHOR_KIND[author.kind], decoded(author.id)) if author else None
        async for update, hit in search_updates(
            info.context, query, scope_id, request, time_zone or "UTC", after
        ):
            yield MessageSearchUpdate.of(update, hit)

    @guarded(
        "New, edited and removed messages of one conversation the viewer may read (a "
        "conversation they may not read is BAD_USER_INPUT, like an id of nothing)." + _OVER,
        access=access.SCOPE_MESSAGES,
        is_subscription=True,
    )
    async def scope_messages(
        self,
        info: Info,
        scope_id: Annotated[strawberry.ID, strawberry.argument(description="A Scope id.")],
        after: Annotated[str | None, _AFTER] = None,
    ) -> AsyncIterator[ScopeMessageUpdate]:
        async for update in scope_updates(info.context, scope_id, after):
            yield ScopeMessageUpdate.of(update)
