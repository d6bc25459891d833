"""The neighbors of historySearch hits: the exchange around each hit, eligible lines only.

Read with the hits, in historySearch's own statement (app.data.history_search), with the same
eligibility fragments as the hits themselves. A neighbor is in its hit's scope, which passed the
agent's perspective for the hit, so perspective is not decided again per neighbor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.data.eligibility import ALLOWED_FROM_CTE, eligible
from app.data.messages import MESSAGE_COLUMNS
from app.data.rows import MessageRow

# Lines on either side of a hit.
EACH = 2


@dataclass(frozen=True, slots=True)
class Neighbors:
    before: tuple[MessageRow, ...]
    after: tuple[MessageRow, ...]


def neighbors_of(hit: str, *, complete: bool = False) -> str:
    """A JSON array of [side, message columns...] arrays: up to EACH eligible messages before the
    hit `hit` (an alias with id, scope_id, seq and thread_id) in its scope, and up to EACH
    after it — in its scope, or, when it roots a thread (`thread_id`), the thread's first
    replies: what followed a report or a question is its thread (the cause, the fix, the
    answer), usually in other words. In seq order. The statement defines the
    allowed_audiences CTE. The eligibility conjuncts sit inside the LIMITed subqueries, so an
    ineligible neighbor is skipped and the next eligible one is taken: never shown, never
    counted. A thread's perspective is its parent's, the hit's own scope.

    JSON rather than an array of anonymous records: on Citus the shard's result reaches the
    coordinator as text, and PostgreSQL cannot read an anonymous record back from text ("input
    of anonymous composite types is not implemented"). `complete` as for
    eligibility.lineage_allows."""
    eligible_row = eligible("m", ALLOWED_FROM_CTE, complete=complete)
    before = f"m.workspace_id = $1 and m.scope_id = {hit}.scope_id and m.seq < {hit}.seq"
    after = (
        f"m.workspace_id = $1 and m.scope_id = coalesce({hit}.thread_id, {hit}.scope_id)"
        f" and m.seq > case when {hit}.thread_id is null then {hit}.seq else -1 end"
    )
    return f"""(
        select coalesce(jsonb_agg(jsonb_build_array(n.side, n.id, n.key, n.scope_id, n.seq,
                   n.global_seq, n.author_id, n.body, n.created_at) order by n.side desc, n.seq),
               '[]')
        from ((select 'before' as side, {MESSAGE_COLUMNS} from messages m
               where {before} and {eligible_row} order by m.seq desc limit {EACH})
              union all
              (select 'after' as side, {MESSAGE_COLUMNS} from messages m
               where {after} and {eligible_row} order by m.seq limit {EACH})) n)"""


def neighbors_from(records: Sequence[Sequence[Any]] | None) -> Neighbors:
    """The records of neighbors_of, as rows."""
    before: list[MessageRow] = []
    after: list[MessageRow] = []
    for side, pk, key, scope_id, seq, global_seq, author_id, body, created_at in records or ():
        row = MessageRow(
            pk, key, scope_id, seq, global_seq, author_id, body, datetime.fromisoformat(created_at)
        )
        (before if side == "before" else after).append(row)
    return Neighbors(tuple(before), tuple(after))
