"""messageSearch and searchStatus as data: app.message_search.search's result, the readiness
row. The schema module turns GraphQL arguments into these calls and their results into types."""

from __future__ import annotations

from datetime import datetime

from app.api.context import Info, selects
from app.data.readiness import ReadinessRow, readiness_of
from app.live.updates import live_position
from app.message_search.search import (
    AuthorRequest,
    DecodedId,
    MessageSearchRequest,
    MessageSearchResult,
    message_search,
)
from app.request.ids import decode_id


def decoded(global_id: str) -> DecodedId:
    # Ids were parsed while the request was validated; decoding again cannot fail.
    type_name, pk = decode_id(global_id)
    return DecodedId(type_name, pk)


async def resolve_message_search(
    info: Info,
    query: str,
    scope_id: str | None,
    author: AuthorRequest | None,
    since: datetime | None,
    until: datetime | None,
    first: int,
    after: str | None,
    time_zone: str = "UTC",
) -> tuple[MessageSearchResult, str | None]:
    """The search, and (when asked for) the live log's position read just before it: a
    subscription from there misses nothing committed after the page was read."""
    ctx = info.context
    live_event = (
        await live_position(ctx.db, ctx.reader.workspace_id) if selects(info, "liveEvent") else None
    )
    result = await message_search(
        ctx.db,
        ctx.reader,
        MessageSearchRequest(
            query,
            decoded(scope_id) if scope_id is not None else None,
            author,
            first,
            after,
            since=since,
            until=until,
            time_zone=time_zone,
        ),
        keys=ctx.keys,
        remember=ctx.loaders.remember_message,
    )
    return result, live_event


async def resolve_search_status(info: Info) -> ReadinessRow:
    return await readiness_of(info.context.db, info.context.reader.workspace_id)
