"""The neighbors of historySearch hits: the exchange around each hit, eligible lines only.

Fetched for all hits of a page in one statement (NeighborsByHitLoader), with the same
eligibility and perspective fragments as the hits themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    Destination,
    allowed_audiences_cte,
    eligible,
    in_perspective,
)
from app.data.messages import MESSAGE_COLUMNS
from app.data.rows import MessageRow
from app.data.session import Session

# The destination's allowed audiences once for the statement, not once per reference.
_ELIGIBLE_M = eligible("m", ALLOWED_FROM_CTE)
_NEIGHBORS = f"""
with {allowed_audiences_cte("$8")}
select h.id as hit_id, n.side, n.id, n.key, n.scope_id, n.seq, n.global_seq, n.author_id,
       n.body, n.created_at
from unnest($5::bigint[]) as h(id)
join messages hm on hm.workspace_id = $1 and hm.id = h.id
cross join lateral (
    (select 'before' as side, {MESSAGE_COLUMNS} from messages m
     where m.workspace_id = $1 and m.scope_id = hm.scope_id and m.seq < hm.seq
       and {_ELIGIBLE_M} and {in_perspective("m.scope_id", "$6")}
     order by m.seq desc limit $7)
    union all
    (select 'after' as side, {MESSAGE_COLUMNS} from messages m
     where m.workspace_id = $1 and m.scope_id = hm.scope_id and m.seq > hm.seq
       and {_ELIGIBLE_M} and {in_perspective("m.scope_id", "$6")}
     order by m.seq limit $7)
) n
where {eligible("hm", ALLOWED_FROM_CTE)} and {in_perspective("hm.scope_id", "$6")}
order by h.id, n.seq
"""


@dataclass(frozen=True, slots=True)
class Neighbors:
    before: tuple[MessageRow, ...]
    after: tuple[MessageRow, ...]


async def neighbors_of(
    db: Session, destination: Destination, agent_id: int, hit_ids: Sequence[int], each: int = 2
) -> dict[int, Neighbors]:
    """Up to `each` eligible messages on either side of every hit, in one statement. The
    eligibility conjuncts sit inside the LIMITed subqueries, so an ineligible neighbor is
    skipped and the next eligible one is taken: never shown, never counted."""
    rows = await db.fetch(
        _NEIGHBORS,
        *destination.params(),
        list(hit_ids),
        agent_id,
        each,
        db.allowed_audiences(destination.params()),
    )
    before: dict[int, list[MessageRow]] = {h: [] for h in hit_ids}
    after: dict[int, list[MessageRow]] = {h: [] for h in hit_ids}
    for r in rows:
        (before if r["side"] == "before" else after)[r["hit_id"]].append(MessageRow.of(r))
    return {h: Neighbors(tuple(before[h]), tuple(after[h])) for h in hit_ids}
