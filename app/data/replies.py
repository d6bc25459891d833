"""Writing an agent's reply: the next message of the turn's scope, with the turn's provenance."""

from __future__ import annotations

from dataclasses import dataclass

from app.data import lineage
from app.data.eligibility import Destination, eligible
from app.data.messages import MESSAGE_COLUMNS
from app.data.params import Params
from app.data.rows import MessageRow
from app.data.session import Session


@dataclass(frozen=True, slots=True)
class WrittenReply:
    message: MessageRow
    sources: int


async def write_reply(
    db: Session, workspace_id: int, turn_id: int, scope_id: int, agent_id: int, body: str
) -> WrittenReply:
    """Insert the reply and its message_sources (the turn's evidence ∪ its loaded window).

    The caller holds the turn's row lock in a transaction, so the ledger read here is the one
    the reply is built from. The workspace row is locked before the scope row, always in that
    order, so concurrent writers never deadlock; the two counters then give the next
    global_seq and seq. Each INSERT is a statement of its own: on Citus an INSERT inside a CTE
    is not routed to a shard, and its CTEs' results would go to every worker (docs/scale.md,
    A worker lost)."""
    global_seq: int = await db.fetchval(
        "update workspaces set last_global_seq = last_global_seq + 1 where id = $1"
        " returning last_global_seq",
        workspace_id,
    )
    scope = await db.fetchrow(
        """
        update scopes set last_seq = last_seq + 1 where workspace_id = $1 and id = $2
        returning last_seq, origin_audience_id,
            array(select e.message_id from turn_evidence e
                  where e.workspace_id = $1 and e.turn_id = $3
                  union
                  select w.message_id from turn_window w
                  where w.workspace_id = $1 and w.turn_id = $3) as sources
        """,
        workspace_id,
        scope_id,
        turn_id,
    )
    assert scope is not None
    sources: list[int] = scope["sources"]
    row = await db.fetchrow(
        f"""
        insert into messages as m (workspace_id, key, scope_id, seq, global_seq, author_id,
                                   body, created_at, audience_id, evidence, has_provenance)
        values ($1, 'reply-' || $2::bigint || '-' || $4::integer, $3, $4, $5, $6, $7, now(), $8,
                true, $9)
        returning {MESSAGE_COLUMNS}
        """,
        workspace_id,
        turn_id,
        scope_id,
        scope["last_seq"],
        global_seq,
        agent_id,
        body,
        scope["origin_audience_id"],
        bool(sources),
    )
    assert row is not None
    message = MessageRow.of(row)
    if sources:
        await db.execute(
            "insert into message_sources (workspace_id, message_id, source_message_id)"
            " select $1, $2, s from unnest($3::bigint[]) as s",
            workspace_id,
            message.id,
            sources,
        )
    return WrittenReply(message, len(sources))


async def deliverable(db: Session, destination: Destination, message_id: int) -> bool:
    """The pre-delivery recheck: the same eligibility every read uses — evidence, the reply's
    own audience, and the lineage walk over everything it was built from, caps included."""
    # The reply's provenance is complete: its lineage summary is cached first, as a statement
    # of its own; the check then reads the summary the same walk just computed.
    await lineage.cache_summaries(db, destination.workspace_id, [message_id])
    p = Params(destination.params())  # $1-$4, as the eligibility fragment reads them
    allowed: bool | None = await db.fetchval(
        f"select {eligible('m')} from messages m"
        f" where m.workspace_id = $1 and m.id = {p.add(message_id)}",
        *p.values,
    )
    return bool(allowed)


async def remembered_reply(
    db: Session, workspace_id: int, turn_id: int, client_mutation_id: str
) -> tuple[bool, MessageRow | None]:
    """(found, the reply) for a postReply already delivered under this client id; the reply
    is None if it was deleted since."""
    row = await db.fetchrow(
        f"""
        select r.message_id, {MESSAGE_COLUMNS}, m.deleted
        from turn_replies r
        join messages m on m.workspace_id = r.workspace_id and m.id = r.message_id
        where r.workspace_id = $1 and r.turn_id = $2 and r.client_mutation_id = $3
        """,
        workspace_id,
        turn_id,
        client_mutation_id,
    )
    if row is None:
        return False, None
    return True, None if row["deleted"] else MessageRow.of(row)


async def remember_reply(
    db: Session, workspace_id: int, turn_id: int, client_mutation_id: str, message_id: int
) -> None:
    await db.execute(
        "insert into turn_replies (workspace_id, turn_id, client_mutation_id, message_id)"
        " select $1, $2, $3, $4",
        workspace_id,
        turn_id,
        client_mutation_id,
        message_id,
    )
