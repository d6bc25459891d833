"""Live push's one statement per subscriber and wake-up (docs/live.md): which of the messages the
log names are hits of the subscriber's search now, hydrated as messageSearch hydrates a page, and
which of some other messages the subscriber may still read.

Built from messageSearch's own fragments (app.data.message_search: the text condition and every
filter's conjunct, each candidate's verdict by the shared eligibility predicates, the hydration
with highlights) over the named documents instead of a bounded scan: a message is admitted
exactly when a fresh messageSearch for this reader would count it among its eligible
candidates, decided in the same snapshot its row is read from. Nothing is decided in Python and
nothing is remembered between wake-ups: a membership, visibility, deactivation or link change
committed before the statement runs decides it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    allowed_audiences_cte,
    eligible,
    eligible_unless_deleted,
)
from app.data.message_search.conditions import text_and_filters
from app.data.message_search.hydrate import hydrated_ctes
from app.data.message_search.inputs import CandidateQuery
from app.data.message_search.rows import PageHit, page_rows_of
from app.data.message_search.verdict import judged
from app.data.params import Params
from app.data.session import Session


@dataclass(frozen=True, slots=True)
class Admission:
    # The named messages that are hits now, with their messages and highlights.
    hits: list[PageHit]
    # Of the messages to recheck: those the reader may read now (within the scope, if given),
    # and those deleted that the reader could read but for the deletion.
    readable: frozenset[int]
    deleted_readable: frozenset[int]


def statement(
    q: CandidateQuery,
    p: Params,
    *,
    candidates: Sequence[int],
    recheck: Sequence[int],
    within_scope: int | None,
) -> str:
    text, filters = text_and_filters(q, p)
    ids = p.add(list(candidates), "bigint[]")
    where = " and ".join(["d.workspace_id = $1", f"d.message_id = any({ids})", text, *filters])
    complete = q.lineage_complete
    rechecked = p.add(list(recheck), "bigint[]")
    scoped = f" and m.scope_id = {p.add(within_scope, 'bigint')}" if within_scope else ""
    hydrated = hydrated_ctes(p, q.include)
    return f"""
        with {allowed_audiences_cte(None)},
        cand as materialized (
            select d.message_id, d.global_seq, d.scope_id, d.seq, d.author_id, d.created_at
            from search_documents d where {where}
        ),
        page as materialized (
            select row_number() over (order by j.message_id) as k, j.*
            from ({judged("cand", complete)}) j where j.excluded_by is null
        ),
        {hydrated}
        select 0 as examined_count, false as cut, 0 as no_evidence, 0 as audience,
               0 as lineage, null::bigint as l_message_id,
               pg.message_id as c_message_id, pg.global_seq as c_global_seq,
               pg.scope_id as c_scope_id, pg.seq as c_seq, pg.excluded_by as c_excluded_by,
               h.*,
               (select coalesce(array_agg(m.id), '{{}}') from messages m
                where m.workspace_id = $1 and m.id = any({rechecked}){scoped}
                  and {eligible("m", ALLOWED_FROM_CTE, complete=complete)}) as readable_ids,
               (select coalesce(array_agg(m.id), '{{}}') from messages m
                where m.workspace_id = $1 and m.id = any({rechecked}){scoped} and m.deleted
                  and {eligible_unless_deleted("m", ALLOWED_FROM_CTE, complete=complete)})
                   as deleted_readable_ids
        from (select 1) one
        left join page pg on true
        left join hydrated h on h.k = pg.k
        order by pg.k"""


async def admit(
    db: Session,
    q: CandidateQuery,
    *,
    candidates: Sequence[int],
    recheck: Sequence[int],
    within_scope: int | None = None,
) -> Admission:
    """One statement: the hits among `candidates`, and who of `recheck` is still readable."""
    p = Params(q.destination)
    sql = statement(q, p, candidates=candidates, recheck=recheck, within_scope=within_scope)
    # Planned once per connection: every candidate is named by id, so one plan is right for
    # every value, and planning this statement cost as much as running it (~2 ms each at 1M
    # messages), for each reader and search that a commit wakes.
    rows = await db.fetch_planned_once(sql, *p.values)
    page = page_rows_of(rows, {})
    head = rows[0]
    return Admission(
        page.hits,
        frozenset(head["readable_ids"]),
        frozenset(head["deleted_readable_ids"]),
    )
