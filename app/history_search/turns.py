"""Starting a turn: the one place an agent's perspective, destination and requester are bound.

None of these is ever a search argument. A search tool that accepted them could be called
without them, so they are fixed here, checked once, and read back from the turn afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from app import access
from app.data import turns
from app.data.executor import Executor, Transactional
from app.data.readers import Reader
from app.data.retry import in_transaction
from app.data.tokens import store_token
from app.data.turns import TurnRow
from app.errors import BadUserInput, Forbidden, UsageError

MAX_WINDOW = 100


@dataclass(frozen=True, slots=True)
class StartedTurn:
    turn: TurnRow
    token: str


async def start_turn(
    db: Transactional,
    reader: Reader,
    *,
    scope_id: int | None,
    requester_id: int | None,
    trigger_message_id: int | None,
    window: int,
) -> StartedTurn:
    """startTurn: the reader's agent (an agent token's: FORBIDDEN otherwise) starts a turn in
    one transaction. `None` ids are well-formed ids of nothing (or of another type)."""
    access.START_TURN.check(reader)
    return await in_transaction(
        db,
        lambda: _begin(
            db,
            reader.workspace_id,
            agent_id=reader.actor_id,
            scope_id=scope_id,
            requester_id=requester_id,
            trigger_message_id=trigger_message_id,
            window=window,
        ),
    )


async def _begin(
    db: Executor,
    workspace_id: int,
    *,
    agent_id: int,
    scope_id: int | None,
    requester_id: int | None,
    trigger_message_id: int | None,
    window: int,
) -> StartedTurn:
    """Check the binding and write the turn, its window and its token, in the caller's
    transaction."""
    if not 0 <= window <= MAX_WINDOW:
        raise BadUserInput(f"window must be between 0 and {MAX_WINDOW}")
    target = await turns.turn_target(
        db, workspace_id, agent_id, scope_id or 0, requester_id or 0, trigger_message_id
    )
    # A scope that does not exist and one the agent is not in answer alike, so the error
    # reveals nothing about scopes outside the agent's perspective.
    if (
        not target.agent_in_scope
        or target.destination is None
        or target.destination_audience_id is None
        or scope_id is None
    ):
        raise Forbidden("the agent is not a member of that scope")
    if not target.requester_is_member or requester_id is None:
        raise Forbidden("the requester is not a member of this workspace")
    # A deactivated member reads nothing, through any surface: an agent's turn included.
    if target.requester_deactivated:
        raise Forbidden("the requester was deactivated and may read nothing")
    if trigger_message_id is not None and target.trigger_seq is None:
        raise BadUserInput("the trigger message is not in that scope")
    turn_id = await turns.insert_turn(
        db,
        target.destination,
        destination_audience_id=target.destination_audience_id,
        agent_id=agent_id,
        scope_id=scope_id,
        requester_id=requester_id,
        trigger_message_id=trigger_message_id,
        trigger_seq=target.trigger_seq,
        window=window,
    )
    token = await store_token(db, workspace_id, "turn", agent_id, turn_id)
    row = await turns.turn_by_id(db, workspace_id, turn_id, agent_id)
    assert row is not None
    return StartedTurn(row, token)


async def start_turn_by_keys(
    conn: asyncpg.Connection,
    *,
    workspace_key: str,
    agent_key: str,
    scope_key: str,
    requester_key: str,
    trigger_key: str | None,
    window: int,
) -> str:
    """`recall turn`: the same as startTurn, named by fixture keys; returns the turn token."""
    keys = await turns.ids_by_keys(
        conn, workspace_key, agent_key, scope_key, requester_key, trigger_key
    )
    if keys.workspace_id is None:
        raise UsageError(f"unknown workspace '{workspace_key}'")
    if keys.agent_id is None:
        raise UsageError(f"unknown agent '{agent_key}' in workspace '{workspace_key}'")
    if keys.scope_id is None:
        raise UsageError(f"unknown scope '{scope_key}' in workspace '{workspace_key}'")
    if keys.requester_id is None:
        raise UsageError(f"unknown member '{requester_key}' in workspace '{workspace_key}'")
    if trigger_key is not None and keys.trigger_id is None:
        raise UsageError(f"unknown message '{trigger_key}' in workspace '{workspace_key}'")
    workspace_id, agent_id, scope_id = keys.workspace_id, keys.agent_id, keys.scope_id
    started = await in_transaction(
        conn,
        lambda: _begin(
            conn,
            workspace_id,
            agent_id=agent_id,
            scope_id=scope_id,
            requester_id=keys.requester_id,
            trigger_message_id=keys.trigger_id,
            window=window,
        ),
    )
    return started.token
