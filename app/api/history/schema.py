"""historySearch, startTurn and postReply: the agent's surface (docs/api.md).

Who asks, from where, for whom and into which destination all come from the token: a turn
token for searching and replying, an agent token for starting a turn. No argument names a
perspective, an audience or a requester. Root fields only convert: GraphQL arguments in,
types out; app.api.history.resolvers and app.history do the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

import strawberry

from app.api.context import Info
from app.api.directory.types import Message
from app.api.history import resolvers
from app.api.history.resolvers import (
    resolve_history_search,
    resolve_post_reply,
    resolve_start_turn,
)
from app.api.history.types import (
    HistorySearchConnection,
    ReplyResult,
    Speaker,
    StartTurnResult,
    Turn,
)
from app.api.node import Node
from app.history.search import HistoryRequest


@strawberry.type
class HistoryQuery:
    @strawberry.field(
        description="Search the agent's own transcripts during a turn (turn token). Eligibility "
        "and perspective come from the turn; everything shown joins the turn's evidence."
    )
    async def history_search(
        self,
        info: Info,
        query: str,
        speaker: Speaker | None = Speaker.ANYONE,
        since: datetime | None = None,
        until: datetime | None = None,
        first: int | None = 8,
        after: str | None = None,
    ) -> HistorySearchConnection:
        result = await resolve_history_search(
            info,
            # An explicit null means the default, as for messageSearch.
            HistoryRequest(
                query,
                (speaker or Speaker.ANYONE).value,
                since,
                until,
                8 if first is None else first,
                after,
            ),
        )
        return HistorySearchConnection.of(result)


@strawberry.type
class HistoryMutation:
    @strawberry.mutation(description="Start a turn (agent token) and get its turn token.")
    async def start_turn(
        self,
        info: Info,
        scope_id: strawberry.ID,
        requester_id: strawberry.ID,
        trigger_message_id: strawberry.ID | None = None,
        window: int | None = 30,
    ) -> StartTurnResult:
        row, token = await resolve_start_turn(
            info, scope_id, requester_id, trigger_message_id, 30 if window is None else window
        )
        return StartTurnResult(turn=Turn.of(row), token=token)

    @strawberry.mutation(description="Post the agent's reply in the turn's scope (turn token).")
    async def post_reply(
        self,
        info: Info,
        body: str,
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
