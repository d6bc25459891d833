"""postReply: persist the agent's reply, then recheck it against the turn's destination.

The reply's provenance is everything the turn saw: its ledger (every message its searches
showed) and its loaded window. The recheck runs the lineage walk over the persisted reply, so
what is checked is exactly what later readers will walk.

A withheld reply is not kept: the transaction that wrote it is rolled back. Keeping it (say,
with evidence = false, which eligibility would hide everywhere) would leave undisclosable text
in the transcript and its words in the search index, for every future read path to keep
hiding, and nothing needs it: the runtime is told why and may answer differently.
"""

from __future__ import annotations

from dataclasses import dataclass

from app import access
from app.data import live_events, replies, turns
from app.data.readers import Reader
from app.data.retry import in_transaction
from app.data.rows import MessageRow
from app.data.session import Session
from app.errors import BadUserInput, Forbidden
from app.history_search.ledger import Ledger

MAX_BODY = 20_000
REQUESTER_DEACTIVATED = "the requester was deactivated; nothing is delivered to them"
WITHHELD = (
    "the reply was built from messages or memories that may not be shown in this conversation,"
    " or its provenance exceeds the lineage limits; it was not delivered"
)


MAX_CLIENT_ID = 200


@dataclass(frozen=True, slots=True)
class ReplyOutcome:
    delivered: bool
    message: MessageRow | None
    withheld_reason: str | None
    # A retry of a reply already delivered under the same clientMutationId: nothing was posted.
    replayed: bool = False


class _Withheld(Exception):
    """Raised inside the reply's transaction to roll the reply back."""


async def post_reply(
    db: Session,
    reader: Reader,
    ledger: Ledger,
    *,
    body: str,
    client_mutation_id: str | None = None,
) -> ReplyOutcome:
    """Post once per `client_mutation_id`: a retry (the runtime never saw the answer) gets the
    reply delivered the first time, and nothing new is written. A withheld reply is not
    remembered (it was never kept), so retrying it decides again."""
    access.POST_REPLY.check(reader)
    workspace_id, agent_id = reader.workspace_id, reader.actor_id
    if reader.turn_id is None or reader.turn_id != ledger.turn_id:
        raise Forbidden("this turn is gone")
    if not body.strip() or len(body) > MAX_BODY:
        raise BadUserInput(f"body must be 1 to {MAX_BODY} characters, not only spaces")
    if client_mutation_id is not None and not 0 < len(client_mutation_id) <= MAX_CLIENT_ID:
        raise BadUserInput(f"clientMutationId must be 1 to {MAX_CLIENT_ID} characters")

    async def post() -> ReplyOutcome:
        turn = await turns.lock_turn(db, workspace_id, ledger.turn_id, agent_id)
        if turn is None or not turn.agent_in_scope:
            raise Forbidden("the agent may no longer post in this turn's scope")
        if client_mutation_id is not None:
            # Under the turn's row lock: two concurrent retries cannot both post.
            found, earlier = await replies.remembered_reply(
                db, workspace_id, turn.id, client_mutation_id
            )
            if found:
                return ReplyOutcome(True, earlier, None, replayed=True)
        # Deactivated since the turn started (or since this request's token was read):
        # they may read nothing, so nothing is delivered to them.
        if not turn.requester_active:
            raise _Withheld(REQUESTER_DEACTIVATED)
        reply = await replies.write_reply(db, workspace_id, turn.id, turn.scope_id, agent_id, body)
        if not await replies.deliverable(db, turn.destination, reply.message.id):
            raise _Withheld(WITHHELD)
        if client_mutation_id is not None:
            await replies.remember_reply(
                db, workspace_id, turn.id, client_mutation_id, reply.message.id
            )
        # Last, so the live log's position lock is held only until the commit.
        await live_events.record(db, workspace_id, [(reply.message.id, live_events.POST)])
        return ReplyOutcome(True, reply.message, None)

    try:
        async with ledger.lock:
            return await in_transaction(db, post)
    except _Withheld as withheld:
        return ReplyOutcome(False, None, str(withheld))
