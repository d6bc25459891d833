"""historySearch, startTurn and postReply: the agent's surface (docs/api.md).

Who asks, from where, for whom and into which destination all come from the token: a turn
token for searching and replying, an agent token for starting a turn. No argument names a
perspective, an audience or a requester. Root fields only convert: GraphQL arguments in,
types out; app.api.history_search.resolvers and app.history_search do the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

import strawberry

from app import access
from app.api.context import Info
from app.api.directory.types import Message
from app.api.history_search import resolvers
from app.api.history_search.resolvers import (
    resolve_history_search,
    resolve_post_reply,
    resolve_start_turn,
)
from app.api.history_search.types import (
    HistorySearchConnection,
    ReplyResult,
    Speaker,
    StartTurnResult,
    Turn,
)
from app.api.node import Node
from app.api.policies import Page, guarded
from app.history_search.search import DEFAULT_FIRST, MAX_FIRST, HistoryRequest


@strawberry.type
class HistoryQuery:
    @guarded(
        "Search the agent's own transcripts during a turn. Eligibility and perspective come "
        "from the turn; everything shown joins the turn's evidence. Any included word matches "
        "(OR), best first; the trigger message and the loaded window are left out. Errors: "
        "BAD_USER_INPUT (empty or oversized query, first out of range, since not before until, "
        "a time outside the years 1-9999 in UTC), INVALID_CURSOR, SEARCH_UNAVAILABLE.",
        access=access.HISTORY_SEARCH,
        size=Page(DEFAULT_FIRST),
    )
    async def history_search(
        self,
        info: Info,
        query: Annotated[
            str,
            strawberry.argument(
                description='Words to find, any of them; `"an exact phrase"` and `-word` to '
                "exclude. At most 500 characters and 32 terms."
            ),
        ],
        speaker: Annotated[
            Speaker | None,
            strawberry.argument(description="Whose messages; null means ANYONE."),
        ] = Speaker.ANYONE,
        since: Annotated[
            datetime | None,
            strawberry.argument(
                description="Only messages posted at or after this time (inclusive); a time "
                "without a zone is UTC."
            ),
        ] = None,
        until: Annotated[
            datetime | None,
            strawberry.argument(
                description="Only messages posted before this time (exclusive); must be later "
                "than `since`."
            ),
        ] = None,
        first: Annotated[
            int | None,
            strawberry.argument(
                description=f"Hits per page, 1-{MAX_FIRST}; null means the default, "
                f"{DEFAULT_FIRST}."
            ),
        ] = DEFAULT_FIRST,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="pageInfo.endCursor of the previous page of the same search in "
                "the same turn."
            ),
        ] = None,
    ) -> HistorySearchConnection:
        result = await resolve_history_search(
            info,
            # An explicit null means the default, as for messageSearch.
            HistoryRequest(
                query,
                # The name: each value is its name, and mypy types a described value as
                # strawberry's EnumValueDefinition.
                (speaker or Speaker.ANYONE).name,
                since,
                until,
                DEFAULT_FIRST if first is None else first,
                after,
            ),
        )
        return HistorySearchConnection.of(result)


@strawberry.type
class HistoryMutation:
    @guarded(
        "Start a turn and get its turn token. FORBIDDEN when the agent is not a member of the "
        "scope or the requester not an active member of the workspace; BAD_USER_INPUT for a "
        "trigger outside the scope or a window out of range.",
        access=access.START_TURN,
    )
    async def start_turn(
        self,
        info: Info,
        scope_id: Annotated[
            strawberry.ID,
            strawberry.argument(
                description="The Scope the agent answers in; the agent must be a member."
            ),
        ],
        requester_id: Annotated[
            strawberry.ID,
            strawberry.argument(
                description="The Member the agent answers (a member of the workspace): "
                "speaker REQUESTER refers to them."
            ),
        ],
        trigger_message_id: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="The Message of that scope the agent responds to; the loaded "
                "window ends just before it. Null: the window is the scope's latest messages."
            ),
        ] = None,
        window: Annotated[
            int | None,
            strawberry.argument(
                description="How many eligible messages before the trigger the agent already "
                "has in context (left out of its searches), 0-100; null means 30."
            ),
        ] = 30,
    ) -> StartTurnResult:
        row, token = await resolve_start_turn(
            info, scope_id, requester_id, trigger_message_id, 30 if window is None else window
        )
        return StartTurnResult(turn=Turn.of(row), token=token)

    @guarded(
        "Post the agent's reply in the turn's scope (FORBIDDEN when the agent may no longer "
        "post there). Its provenance is the turn's evidence and window; a reply whose sources "
        "may not be shown there is not kept (delivered false).",
        access=access.POST_REPLY,
    )
    async def post_reply(
        self,
        info: Info,
        body: Annotated[
            str,
            strawberry.argument(
                description="The reply text, 1-20,000 characters, not only spaces "
                "(BAD_USER_INPUT otherwise)."
            ),
        ],
        client_mutation_id: Annotated[
            str | None,
            strawberry.argument(
                description="An id the runtime chooses per reply (1-200 characters). A retry "
                "with the same id in the same turn posts nothing and answers the reply "
                "delivered the first time (replayed: true)."
            ),
        ] = None,
    ) -> ReplyResult:
        outcome = await resolve_post_reply(info, body, client_mutation_id)
        return ReplyResult(
            delivered=outcome.delivered,
            message=Message.of(outcome.message) if outcome.message else None,
            withheld_reason=outcome.withheld_reason,
            replayed=outcome.replayed,
        )


async def viewer_turn(info: Info) -> Turn | None:
    """The turn behind a turn token (for Viewer.turn)."""
    row = await resolvers.viewer_turn_row(info)
    return Turn.of(row) if row else None


async def resolve_turns(info: Info, pks: Sequence[int]) -> list[Node | None]:
    """node(id) for turns: only the token's own turn resolves; any other is null."""
    own = await viewer_turn(info) if info.context.reader.turn_id in pks else None
    return [own if own is not None and pk == own.pk else None for pk in pks]
