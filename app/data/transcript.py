"""A scope's eligible transcript around a position (Scope.messages), in seq order.

The same rules as every other read: the reader must be able to read the scope, and each message
must pass the reader's message predicate (app.data.readers, built on app.data.eligibility). An
ineligible message is skipped, never shown; the window simply extends past it.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.data.eligibility import allowed_audiences_cte
from app.data.messages import MESSAGE_COLUMNS
from app.data.params import Params
from app.data.readers import Reader
from app.data.rows import MessageRow
from app.data.session import Session

MAX_SEQ = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Window:
    """Eligible messages before the pivot (ascending), the pivot message, those after it."""

    before: list[MessageRow]
    target: MessageRow | None
    after: list[MessageRow]


async def window(
    db: Session,
    reader: Reader,
    scope_id: int,
    *,
    pivot_seq: int,
    target_id: int | None,
    n_before: int,
    n_after: int,
) -> Window:
    """Up to n_before eligible messages with seq below the pivot and n_after above it.

    With target_id, the pivot is that message's seq — only if it is an eligible message of this
    scope; otherwise nothing is returned. One statement.
    """
    if reader.destination is None:
        return Window([], None, [])
    destination = reader.destination.params()
    p = Params(destination)
    scope, target_param = p.add(scope_id), p.add(target_id)
    pivot, before_limit, after_limit = p.add(pivot_seq), p.add(n_before), p.add(n_after)
    actor = p.add(reader.actor_id)
    where = reader.message_predicate("m", p)
    assert where is not None
    allowed = allowed_audiences_cte(p.add(db.allowed_audiences(destination)))
    # Every branch requires the scope to be readable and the row eligible; the pivot only picks
    # where the window sits.
    common = (
        f"m.workspace_id = $1 and m.scope_id = {scope} and exists (select 1 from readable)"
        f" and {where}"
    )
    sql = f"""
        with {allowed},
        readable as (
            select 1 from scopes s
            where s.workspace_id = $1 and s.id = {scope} and {reader.scope_predicate("s", actor)}
        ),
        pivot as (
            select case when {target_param}::bigint is null then {pivot}::int else (
                select m.seq from messages m where {common} and m.id = {target_param}
            ) end as seq
        )
        (select 'before' as part, {MESSAGE_COLUMNS} from messages m, pivot p
         where {common} and m.seq < p.seq order by m.seq desc limit {before_limit})
        union all
        (select 'target' as part, {MESSAGE_COLUMNS} from messages m, pivot p
         where {common} and m.id = {target_param} and m.seq = p.seq)
        union all
        (select 'after' as part, {MESSAGE_COLUMNS} from messages m, pivot p
         where {common} and m.seq > p.seq order by m.seq limit {after_limit})
    """
    rows = await db.fetch(sql, *p.values)
    before = [MessageRow.of(r) for r in rows if r["part"] == "before"]
    target = next((MessageRow.of(r) for r in rows if r["part"] == "target"), None)
    after = [MessageRow.of(r) for r in rows if r["part"] == "after"]
    return Window(sorted(before, key=lambda r: r.seq), target, after)
