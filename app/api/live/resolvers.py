"""Live push as data: each subscription's updates from app.live.updates, with what a hit needs
to be shown as messageSearch shows it. The schema module turns arguments into these calls and
updates into types."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from app.api.live.transport import LiveContext
from app.errors import BadUserInput
from app.live.updates import ScopeTarget, SearchTarget, TooSlow, Update, check_scope, updates
from app.message_search.readiness import ensure_read_ready
from app.message_search.search import (
    AuthorRequest,
    DecodedId,
    MessageHit,
    MessageSearchRequest,
    bind_search,
    candidate_query,
    hit_of,
)
from app.request.ids import decode_id, expect_id

_OVER_WEBSOCKET = (
    "subscriptions run over WebSocket at /graphql (the graphql-transport-ws subprotocol)"
)


def live_context(context: Any) -> LiveContext:
    if not isinstance(context, LiveContext):
        raise BadUserInput(_OVER_WEBSOCKET)
    return context


async def search_updates(
    context: Any,
    query: str,
    scope_id: str | None,
    author: AuthorRequest | None,
    time_zone: str,
    after: str | None,
) -> AsyncIterator[tuple[Update, MessageHit | None]]:
    ctx = live_context(context)
    reader = ctx.reader
    scope = None
    if scope_id is not None:
        type_name, pk = decode_id(scope_id)
        scope = DecodedId(type_name, pk)
    bound = bind_search(
        reader, MessageSearchRequest(query, scope, author, 1, None, time_zone=time_zone)
    )
    ensure_read_ready(reader.search_ready)
    # The operators read now, as messageSearch reads them (a since: that is no date is
    # BAD_USER_INPUT at once, not at the first post that wakes it); each wake-up reads them
    # again for the reader as it is then.
    async with ctx.session() as db:
        await candidate_query(db, reader, bound)
    async for update in _stopping_when_too_slow(
        ctx,
        updates(ctx.env(), ctx.token, reader, SearchTarget(bound), after, on_batch=ctx.resolving),
    ):
        hit = update.hit
        shown = (
            hit_of(hit, hit.message, bound, ctx.keys, ctx.reader)
            if hit is not None and hit.message is not None
            else None
        )
        yield update, shown


async def scope_updates(context: Any, scope_id: str, after: str | None) -> AsyncIterator[Update]:
    ctx = live_context(context)
    reader = ctx.reader
    pk = expect_id(scope_id, "Scope")
    async with ctx.session() as db:
        await check_scope(db, reader, pk)
    ensure_read_ready(reader.search_ready)
    async for update in _stopping_when_too_slow(
        ctx, updates(ctx.env(), ctx.token, reader, ScopeTarget(pk), after, on_batch=ctx.resolving)
    ):
        yield update


async def _stopping_when_too_slow(
    ctx: LiveContext, source: AsyncIterator[Update]
) -> AsyncIterator[Update]:
    try:
        async for update in source:
            yield update
    except TooSlow:
        await ctx.too_slow()
