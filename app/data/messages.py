"""Canonical messages, hydrated only for a reader that may read them."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.eligibility import ALLOWED_AUDIENCES_CTE
from app.data.readers import Reader
from app.data.rows import MessageRow
from app.data.session import Session

MESSAGE_COLUMNS = "m.id, m.key, m.scope_id, m.seq, m.global_seq, m.author_id, m.body, m.created_at"


async def readable_messages_by_ids(
    db: Session, reader: Reader, ids: Sequence[int]
) -> list[MessageRow]:
    """The messages among `ids` that the reader may read; the rest are silently absent."""
    predicate = reader.message_predicate("m", 6)
    if predicate is None or not ids:
        return []
    where, extra = predicate
    assert reader.destination is not None
    rows = await db.fetch(
        f"with {ALLOWED_AUDIENCES_CTE} select {MESSAGE_COLUMNS} from messages m"
        f" where m.workspace_id = $1 and m.id = any($5) and {where}",
        *reader.destination.params(),
        list(ids),
        *extra,
    )
    return [MessageRow.of(r) for r in rows]
