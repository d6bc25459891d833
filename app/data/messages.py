"""Canonical messages, hydrated only for a reader that may read them."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.eligibility import allowed_audiences_cte
from app.data.params import Params
from app.data.readers import Reader
from app.data.rows import ActorRow, MessageRow, ScopeRow, actor_columns
from app.data.session import Session

# A message row's columns but its body (which a search page reads only when it is short).
HEAD_COLUMNS = "m.id, m.key, m.scope_id, m.seq, m.global_seq, m.author_id, m.created_at"
MESSAGE_COLUMNS = f"{HEAD_COLUMNS}, m.body"


async def readable_messages_by_ids(
    db: Session, reader: Reader, ids: Sequence[int]
) -> list[MessageRow]:
    """The messages among `ids` that the reader may read, each with its author and its scope
    (shown with the message, as part of it); the rest are silently absent."""
    if reader.destination is None or not ids:
        return []
    destination = reader.destination.params()
    p = Params(destination)
    in_ids = p.add(list(ids))
    where = reader.message_predicate("m", p)
    assert where is not None
    known = db.allowed_audiences(destination)
    allowed = allowed_audiences_cte(p.add(known) if known is not None else None)
    rows = await db.fetch(
        f"""
        with {allowed}
        select {MESSAGE_COLUMNS},
               {actor_columns("a", "a_")},
               s.id as s_id, s.key as s_key, s.kind as s_kind, s.visibility as s_visibility,
               s.name as s_name, s.parent_id as s_parent_id,
               s.root_message_id as s_root_message_id,
               s.destination_audience_id as s_destination_audience_id
        from messages m
        join actors a on a.workspace_id = m.workspace_id and a.id = m.author_id
        join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
        where m.workspace_id = $1 and m.id = any({in_ids}) and {where}
        """,
        *p.values,
    )
    return [MessageRow.of(r, author=ActorRow.of(r, "a_"), scope=ScopeRow.of(r, "s_")) for r in rows]
