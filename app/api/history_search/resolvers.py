"""The agent's surface as data: the turn's ledger, historySearch's result, a started turn, a
reply's outcome and a turn's rows. The token decides who asks, from where, for whom and into
which destination: a turn token for searching and replying, an agent token for starting a turn.
"""

from __future__ import annotations

from app.api.context import Info
from app.data import turns
from app.data.rows import MessageRow
from app.data.turns import AuditRow, TurnRow
from app.errors import Forbidden
from app.history_search.ledger import Ledger
from app.history_search.replies import ReplyOutcome, post_reply
from app.history_search.search import HistoryRequest, HistoryResult, history_search
from app.history_search.turns import start_turn
from app.request.ids import expect_id


def turn_ledger(info: Info) -> Ledger:
    """The request's ledger of the token's turn (a turn token's: FORBIDDEN for any other,
    as the field's policy already said)."""
    ledger = info.context.ledger
    if ledger is None:
        raise Forbidden("this field needs a turn token")
    return ledger


async def resolve_history_search(info: Info, request: HistoryRequest) -> HistoryResult:
    context = info.context
    return await history_search(
        context.db, context.reader, turn_ledger(info), request, keys=context.keys
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
    trigger = None
    if trigger_message_id is not None:
        # An id of another type names no message: it is in no scope (0 matches nothing).
        trigger = expect_id(trigger_message_id, "Message") or 0
    started = await start_turn(
        context.db,
        context.reader,
        scope_id=expect_id(scope_id, "Scope"),
        requester_id=expect_id(requester_id, "Member"),
        trigger_message_id=trigger,
        window=window,
    )
    return started.turn, started.token


async def resolve_post_reply(info: Info, body: str, client_mutation_id: str | None) -> ReplyOutcome:
    return await post_reply(
        info.context.db,
        info.context.reader,
        turn_ledger(info),
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
