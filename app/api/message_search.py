"""messageSearch and searchStatus: the web Messages tab's search (docs/api.md)."""

from __future__ import annotations

from enum import Enum
from typing import Any

import strawberry

from app.api.context import Info
from app.api.ids import decode_id
from app.api.pagination import PageInfo
from app.api.types import Message
from app.data.audit import query_digest, record_search
from app.data.message_search import (
    After,
    AuthorCondition,
    CandidateQuery,
    ScopeCondition,
    headlines,
    scan_for_page,
)
from app.data.readiness import readiness_of
from app.errors import BadUserInput, Forbidden
from app.search.cursor import binding, decode_cursor, encode_cursor
from app.search.highlights import highlight_ranges
from app.search.paging import budget_for, page_of, position_of
from app.search.query import parse_query
from app.search.readiness import ensure_read_ready

MAX_FIRST = 100


@strawberry.enum(description="Whose messages an author filter keeps.")
class AuthorKind(Enum):
    MEMBER = strawberry.enum_value("member", description="That person's own messages.")
    AGENT = strawberry.enum_value("agent", description="That agent's messages.")
    MEMBER_AGENTS = strawberry.enum_value(
        "member_agents",
        description="Messages by the agents that person owns; not the person's own.",
    )


# The data layer's name of each kind, and the id type each kind names (an id of another type
# is well-formed but matches nothing).
_AUTHOR_KIND = {
    AuthorKind.MEMBER: ("member", "Member"),
    AuthorKind.AGENT: ("agent", "Agent"),
    AuthorKind.MEMBER_AGENTS: ("member_agents", "Member"),
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
        return await _message_search(info, query, scope_id, author, first, after)

    @strawberry.field
    async def search_status(self, info: Info) -> SearchStatus:
        row = await readiness_of(info.context.db, info.context.reader.workspace_id)
        return SearchStatus(
            ready=row.ready,
            migrated=row.migrated,
            backfilled=row.backfilled,
            finalized=row.finalized,
        )


async def _message_search(
    info: Info,
    query: str,
    scope_id: str | None,
    author: AuthorFilter | None,
    first: int | None,
    after: str | None,
) -> MessageSearchConnection:
    ctx = info.context
    reader = ctx.reader
    if reader.kind != "member" or reader.destination is None:
        raise Forbidden("messageSearch needs a member token")
    first = 20 if first is None else first
    if not 1 <= first <= MAX_FIRST:
        raise BadUserInput(f"first must be between 1 and {MAX_FIRST}")
    parsed = parse_query(query)

    # Ids parsed while the request was validated; decoding again cannot fail.
    filters: dict[str, Any] = {"scope": None, "author": None}
    scope = None
    if scope_id is not None:
        type_name, pk = decode_id(scope_id)
        filters["scope"] = {"type": type_name, "id": pk}
        scope = ScopeCondition(pk if type_name == "Scope" else None)
    author_condition = None
    if author is not None:
        type_name, pk = decode_id(author.id)
        kind, wanted = _AUTHOR_KIND[author.kind]
        filters["author"] = {"kind": kind, "type": type_name, "id": pk}
        author_condition = AuthorCondition(kind, pk if type_name == wanted else None)
    bound_to = binding(parsed.normalized, filters)
    start = decode_cursor(after, bound_to) if after is not None else None

    ensure_read_ready(reader.search_ready)
    budget = budget_for(first)
    secret = ctx.settings.master_key.get_secret_value() if ctx.settings.master_key else None
    # The read and its audit row share one transaction: a failed audit write fails the search.
    async with ctx.db.transaction():
        candidates = await scan_for_page(
            ctx.db,
            CandidateQuery(
                reader.destination.params(),
                parsed.include,
                parsed.exclude,
                scope=scope,
                author=author_condition,
            ),
            after=After(start.global_seq, start.scope_id, start.seq, start.message_id)
            if start
            else None,
            first=first,
            budget=budget,
        )
        page = page_of(candidates, first, budget)
        await record_search(
            ctx.db,
            workspace_id=reader.workspace_id,
            surface="message_search",
            actor_id=reader.actor_id,
            turn_id=None,
            query_digest=query_digest(secret, parsed.normalized),
            filters={**filters, "first": first, "continued": start is not None},
            destination=reader.destination.describe(),
            selected=[{"message_id": h.message_id} for h in page.hits],
            exclusions=page.exclusions,
        )
        # Hydration authorizes again (the loader applies the same eligibility); a hit that no
        # longer loads is left out rather than shown from the index.
        rows = await ctx.loaders.message_by_id.load_many([h.message_id for h in page.hits])
        loaded = [(h, r) for h, r in zip(page.hits, rows, strict=True) if r is not None]
        marked = await headlines(ctx.db, [r.body for _, r in loaded], parsed.include)

    edges = [
        MessageSearchEdge(
            cursor=encode_cursor(position_of(hit), bound_to),
            node=Message.of(row),
            highlights=[
                TextRange(start=s, end=e)
                for s, e in highlight_ranges(row.body, mark, parsed.include)
            ],
        )
        for (hit, row), mark in zip(loaded, marked, strict=True)
    ]
    return MessageSearchConnection(
        edges=edges,
        page_info=PageInfo(
            has_next_page=page.has_next_page,
            end_cursor=encode_cursor(page.end, bound_to) if page.end is not None else None,
        ),
        candidate_budget_exhausted=page.budget_exhausted,
    )
