"""historySearch, startTurn and postReply: the agent's surface (docs/api.md).

Who asks, from where, for whom and into which destination all come from the token: a turn
token for searching and replying, an agent token for starting a turn. No argument names a
perspective, an audience or a requester.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import strawberry

from app.api.context import Info
from app.api.history_types import (
    HistoryHit,
    HistoryHitEdge,
    HistorySearchConnection,
    HistorySearchStatus,
    ReplyResult,
    ScoreComponent,
    Speaker,
    StartTurnResult,
    Turn,
)
from app.api.ids import encode_id, expect_id
from app.api.pagination import PageInfo
from app.api.types import Message, Node
from app.data import turns
from app.data.history_neighbors import Neighbors
from app.errors import Forbidden
from app.history.ledger import Ledger
from app.history.replies import post_reply
from app.history.search import HistoryRequest, HitView, history_search
from app.history.turns import start_turn


def _turn_ledger(info: Info) -> Ledger:
    """The request's ledger of the token's turn; FORBIDDEN for any other token."""
    reader, ledger = info.context.reader, info.context.ledger
    if reader.kind != "turn" or reader.turn_id is None or ledger is None:
        raise Forbidden("this field needs a turn token")
    return ledger


def _edge(view: HitView) -> HistoryHitEdge:
    hit = view.shown.hit
    node = HistoryHit(
        message=Message.of(hit.message),
        where=view.where,
        channel=view.channel,
        this_conversation=view.this_conversation,
        when=hit.message.created_at,
        ago=view.ago,
        speaker=view.speaker,
        text=view.text,
        before=[Message.of(m) for m in view.shown.before],
        after=[Message.of(m) for m in view.shown.after],
        score=hit.score,
        why=[ScoreComponent(name=n, value=v) for n, v in hit.components],
    )
    return HistoryHitEdge(cursor=view.cursor, node=node)


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
        ledger = _turn_ledger(info)
        context = info.context
        master = context.settings.master_key

        async def load_neighbors(ids: list[int]) -> Sequence[Neighbors]:
            found = await context.loaders.neighbors_by_hit.load_many(ids)
            return [n or Neighbors((), ()) for n in found]

        result = await history_search(
            context.db,
            workspace_id=context.reader.workspace_id,
            agent_id=context.reader.actor_id,
            search_ready=context.reader.search_ready,
            ledger=ledger,
            # An explicit null means the default, as for messageSearch.
            request=HistoryRequest(
                query,
                (speaker or Speaker.ANYONE).value,
                since,
                until,
                8 if first is None else first,
                after,
            ),
            master_key=master.get_secret_value() if master else None,
            load_neighbors=load_neighbors,
        )
        edges = [_edge(v) for v in result.hits]
        return HistorySearchConnection(
            status=HistorySearchStatus(result.status),
            message_ids=[encode_id("Message", i) for i in result.message_ids],
            count=len(edges),
            edges=edges,
            page_info=PageInfo(has_next_page=result.has_next_page, end_cursor=result.end_cursor),
        )


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
        context = info.context
        if context.reader.kind != "agent":
            raise Forbidden("startTurn needs an agent token")
        trigger = None
        if trigger_message_id is not None:
            # An id of another type names no message: it is in no scope (0 matches nothing).
            trigger = expect_id(trigger_message_id, "Message") or 0
        ws, agent = context.reader.workspace_id, context.reader.actor_id
        async with context.db.transaction():
            started = await start_turn(
                context.db,
                ws,
                agent_id=agent,
                scope_id=expect_id(scope_id, "Scope"),
                requester_id=expect_id(requester_id, "Member"),
                trigger_message_id=trigger,
                window=30 if window is None else window,
            )
            row = await turns.turn_by_id(context.db, ws, started.turn_id, agent)
        assert row is not None
        return StartTurnResult(turn=Turn.of(row), token=started.token)

    @strawberry.mutation(description="Post the agent's reply in the turn's scope (turn token).")
    async def post_reply(self, info: Info, body: str) -> ReplyResult:
        ledger = _turn_ledger(info)
        outcome = await post_reply(
            info.context.db,
            workspace_id=info.context.reader.workspace_id,
            agent_id=info.context.reader.actor_id,
            ledger=ledger,
            body=body,
        )
        return ReplyResult(
            delivered=outcome.delivered,
            message=Message.of(outcome.message) if outcome.message else None,
            withheld_reason=outcome.withheld_reason,
        )


async def viewer_turn(info: Info) -> Turn | None:
    """The turn behind a turn token (for Viewer.turn)."""
    reader = info.context.reader
    if reader.kind != "turn" or reader.turn_id is None:
        return None
    row = await turns.turn_by_id(
        info.context.db, reader.workspace_id, reader.turn_id, reader.actor_id
    )
    return Turn.of(row) if row else None


async def resolve_turns(info: Info, pks: Sequence[int]) -> list[Node | None]:
    """node(id) for turns: only the token's own turn resolves; any other is null."""
    own = await viewer_turn(info) if info.context.reader.turn_id in pks else None
    return [own if own is not None and pk == own.pk else None for pk in pks]
