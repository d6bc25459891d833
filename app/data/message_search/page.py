"""The page, decided in SQL exactly as app.message_search.paging.page_of decides it: the probe's
decision whether to read on, the candidates of both scans in search order with their verdicts,
the page's cut, the examined candidates and the page; and the statement's final select.

Most pages fill from their first few candidates, so the probe scans a little past what a full
page needs (`2 * first + 1`: a page and the one eligible match that proves a next one, with room
for some invisible ones), and the rest of the budget is read only when the probe came back short
of that: the second scan's condition is a constant of the statement, so it does not run at all
otherwise. A query of several lexemes probes by reading the newest WALK documents first
(app.data.message_search.scan), and reads the rest through the text index only if they held
too few matches.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.data.eligibility import REPORT_ALLOWED_AUDIENCES
from app.data.message_search.inputs import After
from app.data.message_search.verdict import judged
from app.data.params import Params

_INT_MAX = 2_147_483_647
_BIGINT_MAX = 9_223_372_036_854_775_807


def probe_size(first: int, budget: int) -> int:
    return min(budget, 2 * first + 1)


@dataclass(frozen=True, slots=True)
class PageBounds:
    """The page's parameters, bound: where the second scan starts if the probe found nothing
    (origin_*: the cursor's position, or the top), and the page's, budget's and probe's sizes."""

    origin_global_seq: str
    origin_scope_id: str
    origin_seq: str
    origin_message_id: str
    first: str
    budget: str
    probe: str


def bind_page(p: Params, after: After | None, first: int, budget: int) -> PageBounds:
    # Where the second scan starts: after the probe's last candidate, or where the probe
    # started if it found none (the largest global_seq when the search starts at the top).
    origin = after or After(_BIGINT_MAX, None, None, None)
    return PageBounds(
        p.add(origin.global_seq, "bigint"),
        p.add(origin.scope_id, "bigint"),
        p.add(origin.seq, "bigint"),
        p.add(origin.message_id, "bigint"),
        p.add(first),
        p.add(budget),
        p.add(probe_size(first, budget)),
    )


def probe_ctes(probe_scan: str, b: PageBounds, *, walked_newest: str | None, complete: bool) -> str:
    """CTEs `probe` (the first scan), `probed` (its verdicts) and `decided`: the probe's count,
    its eligible count, whether to read on (`go`), and where the rest starts (g, s, q, m).
    `walked_newest`: the statement-constant condition under which the probe read only the
    newest WALK documents (several lexemes, not fetched through the text index); None: never."""
    # The probe's decision, only while the probe has no more than a page of eligible ones
    # (past that the page is cut inside the probe, whose candidates are the first ones in
    # search order, and nothing after them can change it): a probe of the newest documents
    # reads on when they held fewer matches than the probe; any other only when the probe was
    # full (fewer: there are no more).
    go = f"(n = {b.probe} and eligible <= {b.first} and {b.probe} < {b.budget})"
    if walked_newest is not None:
        newest_go = f"(eligible <= {b.first} and (n < {b.probe} or {b.probe} < {b.budget}))"
        go = f"(case when {walked_newest} then {newest_go} else {go} end)"
    return f"""probe as materialized ({probe_scan}),
        probed as materialized ({judged("probe", complete)}),
        decided as materialized (
            select c.n, c.eligible, {go} as go,
                   coalesce(l.global_seq, {b.origin_global_seq}) as g,
                   case when l.global_seq is null then {b.origin_scope_id} else l.scope_id end as s,
                   case when l.global_seq is null then {b.origin_seq} else l.seq end as q,
                   case when l.global_seq is null then {b.origin_message_id}
                        else l.message_id end as m
            from (select count(*) as n, count(*) filter (where excluded_by is null) as eligible
                  from probed) c
            left join (select global_seq, scope_id, seq, message_id from probed
                       order by global_seq, scope_id desc, seq desc, message_id desc
                       limit 1) l on true
        )"""


def page_ctes(rest_scan: str, b: PageBounds, *, complete: bool) -> str:
    """CTEs `rest` (the second scan), `candidates` (both scans' candidates in search order,
    numbered `k`, with `e` eligible ones up to each), `cut`, `examined` and `page`."""
    return f"""rest as materialized ({rest_scan}),
        candidates as materialized (
            select c.*, row_number() over w as k,
                   count(*) filter (where c.excluded_by is null) over w as e
            from (select * from probed union all {judged("rest", complete)}) c
            window w as (order by c.global_seq desc, c.scope_id, c.seq desc, c.message_id
                         rows between unbounded preceding and current row)
        ),
        -- The page ends before the first eligible candidate past `first` (proof of a next
        -- page); everything before it was examined for this page.
        cut as materialized (
            select min(k) as k from candidates where excluded_by is null and e = {b.first} + 1
        ),
        examined as materialized (
            select * from candidates where k < coalesce((select k from cut), {_INT_MAX})
        ),
        page as materialized (select * from examined where excluded_by is null)"""


# One row per hit in page order (one row without a hit for an empty page), each carrying the
# page's counts and its last candidate (the continuation when the budget ran out).
FINAL = f"""
        select (select count(*) from candidates) as examined_count,
               (select k from cut) is not null as cut,
               (select count(*) filter (where excluded_by = 'no_evidence') from examined)
                   as no_evidence,
               (select count(*) filter (where excluded_by = 'audience') from examined)
                   as audience,
               (select count(*) filter (where excluded_by = 'lineage') from examined)
                   as lineage,
               l.message_id as l_message_id, l.global_seq as l_global_seq,
               l.scope_id as l_scope_id, l.seq as l_seq, l.excluded_by as l_excluded_by,
               pg.message_id as c_message_id, pg.global_seq as c_global_seq,
               pg.scope_id as c_scope_id, pg.seq as c_seq, pg.excluded_by as c_excluded_by,
               h.*,
               {REPORT_ALLOWED_AUDIENCES}
        from (select 1) one
        left join (select * from candidates order by k desc limit 1) l on true
        left join page pg on true
        left join hydrated h on h.k = pg.k
        order by pg.k
    """
