"""The agent's surface as data: the turn's ledger, historySearch's result, a started turn, a
reply's outcome and a turn's rows. The token decides who asks, from where, for whom and into
which destination: a turn token for searching and replying, an agent token for starting a turn.
"""

from __future__ import annotations

from app.api.context import Info
from app.api.ids import expect_id
from app.data import turns
from app.data.rows import MessageRow
from app.data.turns import AuditRow, TurnRow
from app.errors import Forbidden
from app.history.ledger import Ledger
from app.history.replies import ReplyOutcome, post_reply
from app.history.search import HistoryRequest, HistoryResult, history_search
from app.history.turns import start_turn


def turn_ledger(info: Info) -> Ledger:
    """The request's ledger of the token's turn; FORBIDDEN for any other token."""
    reader, ledger = info.context.reader, info.context.ledger
    if reader.kind != "turn" or reader.turn_id is None or ledger is None:
        raise Forbidden("this field needs a turn token")
    return ledger


async def resolve_history_search(info: Info, request: HistoryRequest) -> HistoryResult:
    ledger = turn_ledger(info)
    context = info.context
    return await history_search(
        context.db,
        workspace_id=context.reader.workspace_id,
        agent_id=context.reader.actor_id,
        destination=context.reader.destination,
        turn=context.reader.turn,
        search_ready=context.reader.search_ready,
        lineage_complete=context.reader.lineage_complete,
        ledger=ledger,
        request=request,
        keys=context.keys,
    )


async def resolve_start_turn(
    info: Info,
    scope_id: str,
    requester_id: str,
    trigger_message_id: str | None,
    window: int,
) -> tuple[TurnRow, str]:
    """The started turn and its token."""
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
            window=window,
        )
        row = await turns.turn_by_id(context.db, ws, started.turn_id, agent)
    assert row is not None
    return row, started.token


async def resolve_post_reply(info: Info, body: str, client_mutation_id: str | None) -> ReplyOutcome:
    ledger = turn_ledger(info)
    return await post_reply(
        info.context.db,
        workspace_id=info.context.reader.workspace_id,
        agent_id=info.context.reader.actor_id,
        ledger=ledger,
        body=body,
        client_mutation_id=client_mutation_id,
    )


async def viewer_turn_row(info: Info) -> TurnRow | None:
    """The turn behind a turn token (for Viewer.turn and node lookups)."""
    reader = info.context.reader
    if reader.kind != "turn" or reader.turn_id is None:
        return None
    return await turns.turn_by_id(
        info.context.db, reader.workspace_id, reader.turn_id, reader.actor_id
    )


async def turn_evidence(info: Info, turn_id: int) -> list[MessageRow]:
    """The turn's ledger as messages the reader may still read."""
    ids = await turns.evidence_ids(info.context.db, info.context.reader.workspace_id, turn_id)
    rows = await info.context.loaders.message_by_id.load_many(ids)
    return [r for r in rows if r is not None]


async def turn_audits(info: Info, turn_id: int) -> list[AuditRow]:
    return await turns.audits_of_turn(info.context.db, info.context.reader.workspace_id, turn_id)
