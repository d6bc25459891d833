"""Scores, the page, its hits with their neighbors, and the turn's ledger.

Hits are ordered by tier, then score: an exact match (tier 2) before any other match (tier 1),
and a match before a message that contains none of the query's words (tier 0, the
conversation around a match), whatever the weights. Ages are measured from the turn's start
(not now()), so the order is stable across cursor pages; exp() is clamped because PostgreSQL
raises on float underflow.
"""

from __future__ import annotations

from app.data.eligibility import REPORT_ALLOWED_AUDIENCES
from app.data.history_search.inputs import Bound
from app.data.history_search.neighbors import neighbors_of
from app.data.messages import MESSAGE_COLUMNS


def _after(b: Bound) -> str:
    if not b.has_after:
        return "true"
    return f"(t.tier, t.score, t.id) < ({b.after_tier}, {b.after_score}, {b.after_id})"


def scoring_ctes(b: Bound) -> str:
    """CTEs `scale`, `ranked_with`, `scored` and `page`."""
    return f"""
-- The boosts are shares of the best lexical score among the candidates: "near-equal" is
-- relative to how strongly this query matches at all.
scale as materialized (
    select coalesce((select (f.weights->>'top')::float8 from frozen f), max(lexical), 0) as top
    from candidates
),
-- The weights this search ranked with, for its turn's later searches of the same binding
-- (none if it ranked with frozen ones): returned, and saved by the statement that records what
-- was shown (app.data.turns.record_shown). An INSERT ... SELECT here would keep Citus from
-- routing this statement whole (docs/scale.md).
ranked_with as (
    select jsonb_build_object(
        'idf', (select coalesce(jsonb_object_agg(lexeme, idf), '{{}}') from weights),
        'avgdl', (select avgdl from corpus),
        'top', (select top from scale),
        'rare', (select q::text from rare),
        'sources', (select coalesce(jsonb_agg(jsonb_build_array(id, lexical)), '[]')
                    from sources),
        'revisions', (select coalesce(jsonb_agg(jsonb_build_array(id, revised)), '[]')
                      from revisions)) as weights
    where not exists (select 1 from frozen)
),
scored as (
    select c.id, c.tier, c.lexical,
        -- Raised to a share of the match it is around, never past its own evidence.
        greatest(coalesce(a.raised, 0) - c.lexical, 0) as context,
        greatest(coalesce({b.supersedes_share} * r.revised, 0) - c.lexical, 0) as supersedes,
        case when c.asks then -{b.asks} * c.lexical else 0 end as asks,
        {b.recency} * x.top * exp(-least(greatest(
            extract(epoch from ({b.turn_created_at} - c.created_at))::float8, 0)
            / 86400.0 / {b.recency_days}, 60)) as recency,
        c.root_scope_id = {b.conversation} as same_conversation,
        case when c.root_scope_id = {b.conversation} then {b.same_conversation} * x.top
             else 0 end as same_boost
    from candidates c
    cross join scale x
    left join around a on a.id = c.id
    left join revisions r on r.id = c.id
),
page as materialized (
    select t.* from (
        select s.*, s.lexical + s.context + s.supersedes + s.asks + s.recency
                    + s.same_boost as score
        from scored s
    ) t
    where {_after(b)}
    order by t.tier desc, t.score desc, t.id desc
    limit {b.limit}
)"""


def hits_ctes(b: Bound, *, complete: bool) -> str:
    """CTEs `hits` (the page's messages with author and scope), `neighborhoods` (each hit's
    neighbors) and `ledger` (the turn's evidence and its row version, as this statement saw
    them)."""
    return f"""
hits as materialized (
    select p.tier, p.lexical, p.context, p.supersedes, p.asks, p.recency,
           p.same_boost,
           p.score, p.same_conversation,
           {MESSAGE_COLUMNS},
           a.name as author_name, a.key as author_key, a.kind as author_kind,
           exists (select 1 from actors o where o.workspace_id = $1 and o.name = a.name
                   and o.id <> a.id) as author_name_shared,
           s.kind as scope_kind, s.visibility as scope_visibility, s.name as scope_name,
           ps.name as parent_name,
           (select t.id from scopes t where t.workspace_id = $1 and t.root_message_id = m.id
            and t.parent_id = m.scope_id order by t.id limit 1) as thread_id,
           (select coalesce(array_agg(array[pa.name, pa.key,
                       (exists (select 1 from actors o where o.workspace_id = $1
                                and o.name = pa.name and o.id <> pa.id))::text]
                       order by pa.key), '{{}}')
            from scope_members sm join actors pa on pa.workspace_id = $1 and pa.id = sm.actor_id
            where s.kind = 'dm' and sm.workspace_id = $1 and sm.scope_id = s.id
              and pa.kind = 'member') as people
    from page p
    join messages m on m.workspace_id = $1 and m.id = p.id
    join actors a on a.workspace_id = $1 and a.id = m.author_id
    join scopes s on s.workspace_id = $1 and s.id = m.scope_id
    left join scopes ps on ps.workspace_id = $1 and ps.id = s.parent_id
),
-- Each hit's neighbors, once per hit (materialized: joined to the hits it would be evaluated
-- again for every pair). In a CTE, not a subquery of the final select list: on Citus a
-- correlated subquery there holding the lineage walk kept the statement from being routed to
-- one shard (docs/scale.md, Rules).
neighborhoods as materialized (
    select h.id, {neighbors_of("h", complete=complete)} as neighbors from hits h
),
-- The turn's ledger and the version of its row as this statement saw them: the search is
-- recorded (app.data.turns.record_shown) only if no other search of the turn recorded since.
ledger as materialized (
    select t.xmin::text as version,
           array(select e.message_id from turn_evidence e
                 where e.workspace_id = $1 and e.turn_id = {b.turn}) as evidence
    from turns t where t.workspace_id = $1 and t.id = {b.turn} and t.agent_id = {b.agent}
)"""


FINAL = f"""
select c.counts, c.examined, c.complete, c.next_window, c.rare_floor, h.*, nh.neighbors,
       case when row_number() over () = 1 then (select version from ledger) end as turn_version,
       case when row_number() over () = 1 then (select evidence from ledger) end as evidence,
       case when row_number() over () = 1 then (select weights from ranked_with) end
           as new_weights,
       {REPORT_ALLOWED_AUDIENCES}
from counted c
left join hits h on true
left join neighborhoods nh on nh.id = h.id
order by h.tier desc, h.score desc, h.id desc
"""
