"""historySearch SQL: the ranked page, its exclusion counts, and the neighbors of its hits.

Authorization is where every statement starts. The candidate rows are the messages in the
agent's perspective that are eligible for the turn's destination — the shared fragments of
app.data.eligibility, applied in the WHERE clause before any ORDER BY or LIMIT. Every other
condition here (the query's words, speaker, time bounds, the turn's own context) is another
conjunct: filters only ever remove rows, and a score is computed only for rows already admitted.
The sidecar (search_documents) only narrows the scan; the text returned is the canonical body.

Parameters shared by the page and the counts ($1-$4 are the destination, see eligibility.py):
  $5 agent   $6 include terms   $7 exclude terms   $8 turn   $9 trigger message
  $10 author (speaker filter)   $11 since   $12 until
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from app.data.eligibility import (
    Destination,
    audience_allows,
    eligible,
    has_evidence,
    in_perspective,
    lineage_allows,
)
from app.data.messages import MESSAGE_COLUMNS
from app.data.rows import MessageRow
from app.data.session import Session


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """One search, as bound by the turn ($5, $8, $9) and narrowed by the arguments."""

    agent_id: int
    turn_id: int
    trigger_id: int | None
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    author_id: int | None
    since: datetime | None
    until: datetime | None

    def params(self, destination: Destination) -> list[object]:
        return [
            *destination.params(),
            self.agent_id,
            list(self.include),
            list(self.exclude),
            self.turn_id,
            self.trigger_id,
            self.author_id,
            self.since,
            self.until,
        ]


@dataclass(frozen=True, slots=True)
class RankInputs:
    """What the ranking features are measured against ($13-$15), and the weights ($20-$23)."""

    turn_created_at: datetime
    requester_id: int
    conversation_id: int
    recency_weight: float
    recency_days: float
    requester_spoke_weight: float
    same_conversation_weight: float


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    key: str
    name_shared: bool


@dataclass(frozen=True, slots=True)
class HitRow:
    message: MessageRow
    components: tuple[tuple[str, float], ...]
    score: float
    same_conversation: bool
    author_name: str
    author_key: str
    author_kind: str
    author_name_shared: bool
    scope_kind: str
    scope_visibility: str | None
    scope_name: str | None
    parent_name: str | None
    people: tuple[Person, ...]


# Inline (not a sub-select): the function is immutable, so under the pool's custom plans
# (app.db) it folds to a constant whose selectivity the planner can estimate — a rare term
# goes through the GIN index, a common one walks the recency index and stops at the pool.
_QUERY = "recall_search_tsquery($6::text[], $7::text[], true)"
# The same words all required: its cover density is high only when they occur close together.
_ALL_WORDS = "recall_search_tsquery($6::text[], $7::text[], false)"

# The agent's perspective, decided once per statement over the workspace's scopes (few) with
# the shared fragment, rather than once per message.
_PERSPECTIVE = f"""(select array(select ps0.id from scopes ps0
    where ps0.workspace_id = $1 and {in_perspective("ps0.id", "$5")}))::bigint[]"""

# The sidecar's matches, found through its GIN index and narrowed by its scope_id (a derived
# copy), then each one's canonical row by primary key. The OFFSET 0 fence keeps that lookup
# by primary key: on a freshly imported workspace (no statistics yet) the planner otherwise
# rescans a scope's messages for every document, a plan 30x slower.
_DOCS = f"""
docs as (
    select d.message_id, d.global_seq, d.tsv from search_documents d
    where d.workspace_id = $1 and d.tsv @@ {_QUERY} and d.scope_id = any({_PERSPECTIVE})
)"""

# Matches in the agent's perspective, narrowed by the search's own filters. Both statements
# start from exactly this set; the page then requires eligibility, the counts classify it.
# The sidecar only narrows: the canonical row's scope decides the perspective.
_MATCHES = f"""
    from docs d
    cross join lateral (
        select m.id, m.scope_id, m.author_id, m.created_at, m.global_seq, m.evidence,
               m.audience_id, m.has_provenance, m.lineage_audience_ids, m.lineage_denied
        from messages m where m.workspace_id = $1 and m.id = d.message_id
        offset 0
    ) m
    where m.scope_id = any({_PERSPECTIVE})
      and ($10::bigint is null or m.author_id = $10)
      and ($11::timestamptz is null or m.created_at >= $11)
      and ($12::timestamptz is null or m.created_at < $12)
"""

# The trigger and the loaded window are already in the prompt: a hit repeating them is waste.
_IN_CONTEXT = """(m.id is not distinct from $9::bigint or exists (select 1 from turn_window w
    where w.workspace_id = $1 and w.turn_id = $8 and w.message_id = m.id))"""

# Of the eligible matches, the newest `$19` form the pool that is ranked: a bounded amount of
# ranking work per search, found through the GIN index. Ages are measured from the turn's
# start (not now()), so the order is stable across cursor pages. exp() is clamped because
# PostgreSQL raises on float underflow rather than returning 0.
_PAGE = f"""
with {_DOCS}, pool as (
    select m.id, m.scope_id, m.created_at, d.tsv
    {_MATCHES}
      and not {_IN_CONTEXT}
      and {eligible("m")}
    order by d.global_seq desc
    limit $19
), scored as (
    select p.id,
        ts_rank_cd(p.tsv, {_QUERY})::float8 as lexical,
        case when cardinality($6::text[]) > 1
            then ts_rank_cd(p.tsv, {_ALL_WORDS})::float8 else 0 end as proximity,
        $20::float8 * exp(-least(greatest(
            extract(epoch from ($13::timestamptz - p.created_at))::float8, 0)
            / 86400.0 / $21::float8, 60)) as recency,
        case when exists (select 1 from messages r where r.workspace_id = $1
            and r.scope_id = p.scope_id and r.author_id = $14) then $22::float8 else 0 end
            as requester_spoke,
        coalesce(s.parent_id, s.id) = $15 as same_conversation
    from pool p
    join scopes s on s.workspace_id = $1 and s.id = p.scope_id
), ranked as (
    select sc.*, case when sc.same_conversation then $23::float8 else 0 end as same_boost
    from scored sc
), page as (
    select r.*, r.lexical + r.proximity + r.recency + r.requester_spoke + r.same_boost as score
    from ranked r
)
select p.lexical, p.proximity, p.recency, p.requester_spoke, p.same_boost, p.score,
       p.same_conversation,
       {MESSAGE_COLUMNS},
       a.name as author_name, a.key as author_key, a.kind as author_kind,
       exists (select 1 from actors o where o.workspace_id = $1 and o.name = a.name
               and o.id <> a.id) as author_name_shared,
       s.kind as scope_kind, s.visibility as scope_visibility, s.name as scope_name,
       ps.name as parent_name,
       (select coalesce(array_agg(array[pa.name, pa.key,
                   (exists (select 1 from actors o where o.workspace_id = $1 and o.name = pa.name
                            and o.id <> pa.id))::text] order by pa.key), '{{}}')
        from scope_members sm join actors pa on pa.workspace_id = $1 and pa.id = sm.actor_id
        where sm.workspace_id = $1 and sm.scope_id = s.id and pa.kind = 'member') as people
from page p
join messages m on m.workspace_id = $1 and m.id = p.id
join actors a on a.workspace_id = $1 and a.id = m.author_id
join scopes s on s.workspace_id = $1 and s.id = m.scope_id
left join scopes ps on ps.workspace_id = $1 and ps.id = s.parent_id
where ($16::float8 is null or p.score < $16 or (p.score = $16 and p.id < $17))
order by p.score desc, p.id desc
limit $18
"""

# Every match is counted once, under the first rule that removed it, with the same fragments
# the page uses (the CASE evaluates them in order and stops at the first that fails, so the
# lineage walk runs only for rows that passed the cheaper rules). One aggregate over the whole
# match set, no rows fetched: there is no counting ceiling to be wrong past.
_COUNTS = f"""
with {_DOCS}
select rule, count(*) as n
from (
    select case
        when {_IN_CONTEXT} then 'already_in_context'
        when not {has_evidence("m")} then 'no_evidence'
        when not {audience_allows("m")} then 'audience'
        when not {lineage_allows("m")} then 'lineage'
        else 'eligible'
    end as rule
    {_MATCHES}
) ruled
group by rule
"""


RULES = ("already_in_context", "no_evidence", "audience", "lineage", "eligible")


@dataclass(frozen=True, slots=True)
class PageRequest:
    after: tuple[float, int] | None
    limit: int
    pool: int


async def ranked_page(
    db: Session,
    destination: Destination,
    filters: SearchFilters,
    rank: RankInputs,
    page: PageRequest,
) -> list[HitRow]:
    """Up to `page.limit` hits in ranking order, after the cursor position if any."""
    after_score, after_id = page.after if page.after else (None, None)
    rows = await db.fetch(
        _PAGE,
        *filters.params(destination),
        rank.turn_created_at,
        rank.requester_id,
        rank.conversation_id,
        after_score,
        after_id,
        page.limit,
        page.pool,
        rank.recency_weight,
        rank.recency_days,
        rank.requester_spoke_weight,
        rank.same_conversation_weight,
    )
    return [_hit(r) for r in rows]


def _hit(r: asyncpg.Record) -> HitRow:
    components = (
        ("lexical", r["lexical"]),
        ("proximity", r["proximity"]),
        ("recency", r["recency"]),
        ("requester_spoke", r["requester_spoke"]),
        ("same_conversation", r["same_boost"]),
    )
    people = tuple(Person(p[0], p[1], p[2] == "true") for p in r["people"])
    return HitRow(
        MessageRow.of(r),
        components,
        r["score"],
        r["same_conversation"],
        r["author_name"],
        r["author_key"],
        r["author_kind"],
        r["author_name_shared"],
        r["scope_kind"],
        r["scope_visibility"],
        r["scope_name"],
        r["parent_name"],
        people,
    )


async def exclusion_counts(
    db: Session, destination: Destination, filters: SearchFilters
) -> Mapping[str, int]:
    """Matches by the first rule that removed them, plus `eligible` (those that passed all)."""
    rows = await db.fetch(_COUNTS, *filters.params(destination))
    counts = dict.fromkeys(RULES, 0)
    counts.update({r["rule"]: r["n"] for r in rows})
    return counts
