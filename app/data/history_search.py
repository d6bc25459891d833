"""historySearch SQL: one statement for the examined window, its exclusion counts and the page.

Authorization is where every statement starts. The candidate rows are the messages in the
agent's perspective that are eligible for the turn's destination — the shared fragments of
app.data.eligibility, applied in the WHERE clause before any ORDER BY or LIMIT. Every other
condition here (the query's words, speaker, time bounds, the turn's own context) is another
conjunct: filters only ever remove rows, and a score is computed only for rows already admitted.
The sidecar (search_documents) only narrows the scan; the text returned is the canonical body.

Parameters ($1-$4 are the destination, see eligibility.py):
  $5 agent   $6 include terms   $7 exclude terms   $8 turn   $9 trigger message
  $10 author (speaker filter)   $11 since   $12 until   $13 the agent's conversations
  $14 window   $15-$17 rank inputs   $18-$20 page   $21-$24 weights
  $25 the destination's allowed audiences if this request already has them, else NULL
  $26-$30 word weighting and context: k1, b, proximity weight, context share, context top
  $31 the search's cursor binding (its weights are kept per turn and binding)
  $32 the share raising the replies that follow a context source in its thread
  $33 the share raising a message that revises an earlier one (0: off)
  $34 the share of its lexical score a question or a request to an agent loses (0: off)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    REPORT_ALLOWED_AUDIENCES,
    Destination,
    allowed_audiences_cte,
    audience_allows,
    eligible,
    has_evidence,
    in_perspective,
    lineage_allows,
)
from app.data.history_neighbors import Neighbors, neighbors_from, neighbors_of
from app.data.messages import MESSAGE_COLUMNS
from app.data.rows import MessageRow
from app.data.session import Session


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """One search, as bound by the turn ($5, $8, $9, $13) and narrowed by the arguments."""

    agent_id: int
    turn_id: int
    trigger_id: int | None
    conversations: tuple[int, ...]
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
            list(self.conversations),
        ]


@dataclass(frozen=True, slots=True)
class RankInputs:
    """What the ranking features are measured against ($15-$17), and the weights ($21-$24)."""

    turn_created_at: datetime
    requester_id: int
    conversation_id: int
    recency_weight: float
    recency_days: float
    requester_spoke_weight: float
    same_conversation_weight: float
    k1: float
    b: float
    proximity_weight: float
    context_share: float
    context_top: int
    follow_up_share: float
    supersedes_share: float
    asks_weight: float


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
# goes through the GIN index, a common one walks the recency index and stops at the window.
# Identifier terms also match their whole lexeme and their parts (migrations/014).
_QUERY = "recall_history_tsquery($6::text[], $7::text[])"
# The same words all required: its cover density is high only when they occur close together.
_ALL_WORDS = "recall_search_tsquery($6::text[], $7::text[], false)"

# The examined window: the newest `$14` matches that pass the search's own filters, found
# through the sidecar narrowed by its derived copies — root_scope_id against the agent's
# conversations ($13), author_id — then each match's canonical row by primary key (the OFFSET 0
# fence keeps that lookup). Bounding the window bounds the whole search: ranking and the
# exclusion counts read only these rows, however many messages match.
#
# The canonical perspective check (the shared fragment, on the message row's scope) is applied
# to the window's rows by the pool and by the counts, not here: as a correlated sub-select here
# the planner cannot estimate it, takes the window for a handful of rows, and sorts every match
# of a common term (1 s at 1M messages) instead of walking the recency index for the newest.
_EXAMINED = f"""
examined as materialized (
    select m.id, m.scope_id, m.author_id, m.created_at, m.evidence, m.deleted, m.audience_id,
           m.has_provenance, m.lineage_audience_ids, m.lineage_denied, d.tsv
    from search_documents d
    cross join lateral (
        select m.id, m.scope_id, m.author_id, m.created_at, m.evidence, m.deleted, m.audience_id,
               m.has_provenance, m.lineage_audience_ids, m.lineage_denied
        from messages m where m.workspace_id = $1 and m.id = d.message_id
        offset 0
    ) m
    where d.workspace_id = $1 and d.tsv @@ {_QUERY}
      and d.root_scope_id = any($13::bigint[])
      and ($10::bigint is null or d.author_id = $10)
      and ($10::bigint is null or m.author_id = $10)
      and ($11::timestamptz is null or m.created_at >= $11)
      and ($12::timestamptz is null or m.created_at < $12)
    order by d.global_seq desc
    limit $14
)"""

# Only scopes the agent is a member of (a thread: its parent's members), on the canonical row's
# scope — decided once per distinct scope of the window (below), not once per row.
_IN_PERSPECTIVE = "m.scope_id = any((select array_agg(scope_id) from perspective)::bigint[])"

# The trigger and the loaded window are already in the prompt: a hit repeating them is waste.
_IN_CONTEXT = """(m.id is not distinct from $9::bigint or exists (select 1 from turn_window w
    where w.workspace_id = $1 and w.turn_id = $8 and w.message_id = m.id))"""


# BM25 of a document vector against the query's weighted lexemes: term frequency saturating
# with k1 ($26), length normalised by b ($27) against the workspace's average document length.
def _bm25(tsv: str) -> str:
    """BM25 with each word counted once per message (a repeated word is emphasis in chat, not
    more topic: measured on eval/, no loss against counting it), so each lexeme is one binary
    search of the vector rather than an unnest of it (1.2 against 4.6 ms per 1,000 rows)."""
    return f"""((select coalesce(sum(w.idf), 0) from weights w where {tsv} @@ w.q)
        * ($26::float8 + 1) / (1 + $26::float8 * (1 - $27::float8 + $27::float8
        * length({tsv}) / (select avgdl from corpus))))::float8"""


# A query's identifier terms (migrations/014: recall_identifier_tsquery) pull in the
# conversation around their best exact matches.
CONTEXT_SOURCES = 5
CONTEXT_PER_SOURCE = 8
CONTEXT_NEIGHBORS = 2
# ... written within this long of it: the same exchange, not the next day's chatter.
CONTEXT_MINUTES = 120

# What a message says when it changes an earlier decision or plan: ordinary English words of
# change (as the document vector stems them), not the evaluation set's. "change" and "back"
# are not among them: on the tuning half they were an incident's "nothing changed" and "back
# to baseline" more often than a decision's reversal.
REVISION_STEMS = (
    "revert", "revers", "rollback", "postpon", "delay", "reschedul", "move", "extend", "updat",
    "cancel", "instead", "switch", "replac", "reopen", "undo", "overrid", "supersed", "anymor",
)  # fmt: skip
_REVISES = "'" + " | ".join(REVISION_STEMS) + "'::tsquery"
_REVISION_STEMS = "'{" + ",".join(REVISION_STEMS) + "}'::text[]"
# The best candidates a later message may revise, and the best candidates that say they change
# something: at most REVISABLE × REVISING pairs, however many messages say "update".
REVISABLE = 20
REVISING = 100
# ... and how much of the best lexical score the query words both match must make up (not
# counting the words of change): the later message is about the same thing as a strong match,
# not a noise message that shares one common word with a weak one and says "moved".
REVISES_OVERLAP = 0.4


# One statement: the examined window, its exclusion counts, and the ranked page of its eligible
# rows. Every examined match is counted once, under the first rule that removed it (the CASE
# evaluates the shared fragments in order and stops at the first that fails). The pool that is
# ranked is the window's rows whose verdict is `eligible` — every conjunct of the fragment
# passed — before any score exists. Ages are measured from the turn's start (not now()), so
# the order is stable across cursor pages; exp() is clamped because PostgreSQL raises on float
# underflow. The counts come on every row, and on a single row of NULL hits when the page is
# empty. `complete`: the reader's Reader.lineage_complete (a missing lineage summary is denied,
# not walked: eligibility.lineage_allows).
def _search_sql(complete: bool) -> str:
    return f"""
with {_EXAMINED},
{allowed_audiences_cte("$25")},
-- OFFSET 0 keeps the check a probe per distinct scope (two index lookups) rather than a join
-- that hashes the agent's whole perspective.
perspective as materialized (
    select w.scope_id from (select distinct scope_id from examined) w
    cross join lateral (select {in_perspective("w.scope_id", "$5")} as ok offset 0) p
    where p.ok
),
-- Each examined match in the perspective, under the first rule that removed it, or
-- 'eligible': eligible()'s conjuncts in its order, after the turn's context; NULL fails
-- closed. Decided once, for the counts and for the pool alike (one copy of the fragments to
-- plan, not two: planning was ~11 ms of a rare term's ~14 ms of SQL at 1M).
verdicts as materialized (
    select m.id, m.scope_id, m.created_at, m.tsv, case
            when coalesce({_IN_CONTEXT}, true) then 'already_in_context'
            when not coalesce({has_evidence("m")}, false) then 'no_evidence'
            when not coalesce({audience_allows("m", ALLOWED_FROM_CTE)}, false) then 'audience'
            when not coalesce({lineage_allows("m", ALLOWED_FROM_CTE, complete=complete)}, false)
                then 'lineage'
            else 'eligible'
        end as rule
    from examined m
    where {_IN_PERSPECTIVE}
),
counted as (
    select coalesce(jsonb_object_agg(rule, n), '{{}}') as counts,
           coalesce(sum(n), 0)::int as examined
    from (select rule, count(*) as n from verdicts group by 1) ruled
),
-- The ranked pool: the window's rows that passed every rule (in the perspective, not in the
-- turn's context, eligible), before any score exists.
pool as (
    select v.id, v.scope_id, v.created_at, v.tsv from verdicts v where v.rule = 'eligible'
),
-- Word weighting: each lexeme of the query (as the document vector would index the query's
-- terms: stems, CJK pairs, identifiers whole and in parts) weighs its inverse document
-- frequency in this workspace (migrations/014 keeps the counts current as messages arrive).
qlex as materialized (
    select unnest(recall_query_lexemes($6::text[])) as lexeme
),
-- The statistics move as messages arrive; a turn's later searches with the same binding (the
-- next page, or the same question again) rank with the weights its first one used, so that a
-- cursor's score stays a position in the same order.
frozen as materialized (
    select f.weights from turn_search_weights f
    where f.workspace_id = $1 and f.turn_id = $8 and f.binding = $31
),
corpus as materialized (
    select greatest(coalesce(max(c.documents), 0), 1)::float8 as n,
           coalesce((select (f.weights->>'avgdl')::float8 from frozen f), greatest(
               coalesce(max(c.lexemes)::float8 / nullif(max(c.documents), 0), 1), 1)) as avgdl
    from search_corpus_stats c where c.workspace_id = $1
),
weights as materialized (
    select q.lexeme, quote_literal(q.lexeme)::tsquery as q,
        coalesce((select (f.weights->'idf'->>q.lexeme)::float8 from frozen f),
        ln(1 + (c.n - coalesce(s.documents, 0) + 0.5) / (coalesce(s.documents, 0) + 0.5)))
        as idf
    from qlex q cross join corpus c
    left join search_term_stats s on s.workspace_id = $1 and s.lexeme = q.lexeme
),
lexed as (
    select p.*, {_bm25("p.tsv")} as lexical from pool p
),
-- The conversation around an exact identifier match: the best few messages that quote an
-- identifier of the query as written pull in their thread (the one they are in or the one
-- they root, nearest first) and their neighbors in their scope.
sources as materialized (
    select l.id, l.lexical, m.scope_id, m.seq, m.created_at, s.kind, s.root_message_id, l.tsv
    from lexed l
    join messages m on m.workspace_id = $1 and m.id = l.id
    join scopes s on s.workspace_id = $1 and s.id = m.scope_id
    where not exists (select 1 from frozen) and l.id in (
        (select x.id from lexed x
         where x.tsv @@ recall_identifier_tsquery($6::text[])
         order by x.lexical desc, x.id desc limit {CONTEXT_SOURCES})
        union
        (select x.id from lexed x order by x.lexical desc, x.id desc limit $30))
    union all
    select m.id, (e.value->>1)::float8, m.scope_id, m.seq, m.created_at, s.kind,
           s.root_message_id, coalesce(d.tsv, ''::tsvector)
    from frozen f
    cross join jsonb_array_elements(f.weights->'sources') e
    join messages m on m.workspace_id = $1 and m.id = (e.value->>0)::bigint
    join scopes s on s.workspace_id = $1 and s.id = m.scope_id
    left join search_documents d on d.workspace_id = $1 and d.message_id = m.id
),
-- A pulled-in message is raised to a share of its source's lexical score: FOLLOW_UP_SHARE ($32)
-- for the replies that follow it in its thread (or in the thread it roots: the cause and the
-- fix written after the report, the answer after the question), CONTEXT_SHARE ($29) for the
-- rest (its thread's root and earlier replies, its neighbors in the channel). A neighbor must
-- share a word with its source: the next message in a busy channel is as often another topic,
-- and one that is not a reply is not raised above the match (one shared common word is not
-- the same exchange).
around as materialized (
    select c.id, max(src.lexical * case when c.after then $32::float8 else $29::float8 end)
        as raised
    from sources src
    cross join lateral (
        (select m.id, (src.kind <> 'thread' or m.seq > src.seq) as after from messages m
         where m.workspace_id = $1 and m.scope_id = case when src.kind = 'thread'
             then src.scope_id
             else (select t.id from scopes t where t.workspace_id = $1
                   and t.root_message_id = src.id limit 1) end
         order by abs(m.seq - case when src.kind = 'thread' then src.seq else 0 end), m.id
         limit {CONTEXT_PER_SOURCE})
        union
        select src.root_message_id, false where src.root_message_id is not null
        union
        (select m.id, false from messages m
         join search_documents d on d.workspace_id = $1 and d.message_id = m.id
         where m.workspace_id = $1 and m.scope_id = src.scope_id
         and m.seq between src.seq - {CONTEXT_NEIGHBORS} and src.seq + {CONTEXT_NEIGHBORS}
         and m.created_at between src.created_at - interval '{CONTEXT_MINUTES} minutes'
                              and src.created_at + interval '{CONTEXT_MINUTES} minutes'
         and tsvector_to_array(d.tsv) && tsvector_to_array(src.tsv))
    ) c(id, after)
    where c.id <> src.id
    group by c.id
),
-- Pulled-in messages that were not matches pass exactly what a match passes: the perspective,
-- the turn's context, the fragment `eligible`, the speaker and time filters and the excluded
-- words, each a conjunct, before any score exists.
extra as (
    select m.id, m.scope_id, m.created_at, coalesce(d.tsv, ''::tsvector) as tsv
    from around a
    join messages m on m.workspace_id = $1 and m.id = a.id
    left join search_documents d on d.workspace_id = $1 and d.message_id = m.id
    where m.id not in (select p.id from pool p)
      and {in_perspective("m.scope_id", "$5")} and not {_IN_CONTEXT}
      and {eligible("m", ALLOWED_FROM_CTE, complete=complete)}
      and ($10::bigint is null or m.author_id = $10)
      and ($11::timestamptz is null or m.created_at >= $11)
      and ($12::timestamptz is null or m.created_at < $12)
      and not coalesce(d.tsv @@ recall_search_tsquery($7::text[], '{{}}', true), false)
),
candidates as (
    select l.id, l.scope_id, l.created_at, l.tsv, l.lexical from lexed l
    union all
    select e.id, e.scope_id, e.created_at, e.tsv, {_bm25("e.tsv")} from extra e
),
-- A decision that later changed: a candidate that says it changes something (REVISION_STEMS:
-- revert, postpone, move, extend, ...) supersedes one of the best candidates written before it
-- in the same conversation (a channel and its threads) when the query words both match make up
-- REVISES_OVERLAP of the best lexical score: it is raised to SUPERSEDES_SHARE ($33) of that
-- one's lexical score. Among the best REVISABLE and REVISING only, so the pairs are bounded
-- whatever the window. Kept per turn and binding like the context sources: a row's score never
-- depends on rows that arrive between pages. Candidates only: every row compared is eligible.
conversed as materialized (
    select c.id, c.created_at, c.tsv, c.lexical, coalesce(s.parent_id, s.id) as conversation
    from candidates c join scopes s on s.workspace_id = $1 and s.id = c.scope_id
    where not exists (select 1 from frozen) and $33::float8 > 0
),
revisable as materialized (
    select * from conversed order by lexical desc, id desc limit {REVISABLE}
),
revising as materialized (
    select * from conversed where tsv @@ {_REVISES}
    order by lexical desc, id desc limit {REVISING}
),
revisions as materialized (
    select b.id, max(a.lexical) as revised
    from revising b
    join revisable a on a.conversation = b.conversation and a.created_at < b.created_at
    where (select coalesce(sum(w.idf), 0) from weights w where a.tsv @@ w.q and b.tsv @@ w.q
           and w.lexeme <> all({_REVISION_STEMS}))
          >= {REVISES_OVERLAP} * (select max(x.lexical) from revisable x)
    group by b.id
    union all
    select (e.value->>0)::bigint, (e.value->>1)::float8
    from frozen f cross join jsonb_array_elements(coalesce(f.weights->'revisions', '[]')) e
),
agent_names as materialized (
    select coalesce(array_agg(lower(g.name)), '{{}}') as names from actors g
    where $34::float8 <> 0 and g.workspace_id = $1 and g.kind = 'agent'
),
-- "Where were *we* talking": decided once per scope of the candidates, not once per message
-- (and not at all while its weight is 0: the condition folds to a constant in a custom plan).
requester_spoke as materialized (
    select w.scope_id from (select distinct scope_id from candidates) w
    where $23::float8 <> 0 and exists (select 1 from messages r where r.workspace_id = $1
                  and r.scope_id = w.scope_id and r.author_id = $16)
),
-- The boosts are shares of the best lexical score among the candidates: "near-equal" is
-- relative to how strongly this query matches at all, so the same weights nudge a query of
-- one common word and one of five rare ones alike.
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
        'sources', (select coalesce(jsonb_agg(jsonb_build_array(id, lexical)), '[]')
                    from sources),
        'revisions', (select coalesce(jsonb_agg(jsonb_build_array(id, revised)), '[]')
                      from revisions)) as weights
    where not exists (select 1 from frozen)
),
scored as (
    select c.id, c.lexical,
        case when cardinality($6::text[]) > 1
            then $28::float8 * ts_rank_cd(c.tsv, {_ALL_WORDS})::float8 else 0 end
            -- Raised to a share of the match it is around, never past its own evidence.
            + greatest(coalesce(a.raised, 0) - c.lexical, 0) as proximity,
        -- A question, or a request to an agent by name, is where the answer was asked for.
        case when $34::float8 <> 0 and (b.body ~ '\\?\\s*$'
                  or lower(substring(b.body from '^\\s*([[:alnum:]_.-]+)\\s*[,:]'))
                     = any((select names from agent_names)::text[]))
            then -$34::float8 * c.lexical else 0 end as asks,
        $21::float8 * x.top * exp(-least(greatest(
            extract(epoch from ($15::timestamptz - c.created_at))::float8, 0)
            / 86400.0 / $22::float8, 60)) as recency,
        case when c.scope_id in (select scope_id from requester_spoke)
            then $23::float8 * x.top else 0 end as requester_spoke,
        coalesce(s.parent_id, s.id) = $17 as same_conversation,
        x.top
    from candidates c
    cross join scale x
    join scopes s on s.workspace_id = $1 and s.id = c.scope_id
    join messages b on b.workspace_id = $1 and b.id = c.id
    left join around a on a.id = c.id
),
ranked as (
    select sc.*, case when sc.same_conversation then $24::float8 * sc.top else 0 end as same_boost,
        greatest(coalesce($33::float8 * r.revised, 0) - sc.lexical - sc.proximity, 0)
            as supersedes
    from scored sc
    left join revisions r on r.id = sc.id
),
totals as (
    select r.*, r.lexical + r.proximity + r.supersedes + r.asks + r.recency
        + r.requester_spoke + r.same_boost as score
    from ranked r
),
page as (
    select t.* from totals t
    where ($18::float8 is null or t.score < $18 or (t.score = $18 and t.id < $19))
    order by t.score desc, t.id desc
    limit $20
),
hits as (
    select p.lexical, p.proximity, p.supersedes, p.asks, p.recency, p.requester_spoke,
           p.same_boost, p.score,
           p.same_conversation,
           {MESSAGE_COLUMNS},
           a.name as author_name, a.key as author_key, a.kind as author_kind,
           exists (select 1 from actors o where o.workspace_id = $1 and o.name = a.name
                   and o.id <> a.id) as author_name_shared,
           s.kind as scope_kind, s.visibility as scope_visibility, s.name as scope_name,
           ps.name as parent_name,
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
-- Each hit's neighbors. In a CTE, not a subquery of the final select list: on Citus a
-- correlated subquery there holding the lineage walk (a recursive CTE) kept the statement from
-- being routed to one shard while it also had a data-modifying CTE (docs/scale.md, Rules).
neighborhoods as (
    select h.id, {neighbors_of("h", "$5", complete=complete)} as neighbors from hits h
),
-- The turn's ledger and the version of its row as this statement saw them: the search is
-- recorded (app.data.turns.record_shown) only if no other search of the turn recorded since.
ledger as materialized (
    select t.xmin::text as version,
           array(select e.message_id from turn_evidence e
                 where e.workspace_id = $1 and e.turn_id = $8) as evidence
    from turns t where t.workspace_id = $1 and t.id = $8 and t.agent_id = $5
)
select c.counts, c.examined, h.*, nh.neighbors,
       case when row_number() over () = 1 then (select version from ledger) end as turn_version,
       case when row_number() over () = 1 then (select evidence from ledger) end as evidence,
       case when row_number() over () = 1 then (select weights from ranked_with) end
           as new_weights,
       {REPORT_ALLOWED_AUDIENCES}
from counted c
left join hits h on true
left join neighborhoods nh on nh.id = h.id
order by h.score desc, h.id desc
"""


_SEARCH = {complete: _search_sql(complete) for complete in (False, True)}

RULES = ("already_in_context", "no_evidence", "audience", "lineage", "eligible")


@dataclass(frozen=True, slots=True)
class PageRequest:
    after: tuple[float, int] | None
    limit: int
    window: int
    # The cursor binding (app.history.cursor): the weights are frozen per turn and binding.
    binding: str


@dataclass(frozen=True, slots=True)
class SearchRows:
    hits: list[HitRow]
    # Examined matches by the first rule that removed them, plus `eligible` (passed them all).
    counts: Mapping[str, int]
    # How many matches were examined; fewer than the window means every match was.
    examined: int
    # The neighbors of each hit, by the hit's message id.
    neighbors: Mapping[int, Neighbors]
    # The turn's ledger as the statement saw it, and the version of the turn's row then (None:
    # the turn is gone).
    evidence: frozenset[int]
    turn_version: str | None
    # The weights this search ranked with, if its turn had none frozen for its binding: to be
    # saved with what it shows (app.data.turns.record_shown).
    new_weights: Mapping[str, Any] | None = None


async def search(
    db: Session,
    destination: Destination,
    filters: SearchFilters,
    rank: RankInputs,
    page: PageRequest,
    *,
    lineage_complete: bool = False,
) -> SearchRows:
    """Up to `page.limit` hits in ranking order (after the cursor position, if any) with their
    neighbors, the exclusion counts of the window they were ranked from, and the turn's
    ledger: one statement."""
    after_score, after_id = page.after if page.after else (None, None)
    rows = await db.fetch(
        _SEARCH[lineage_complete],
        *filters.params(destination),
        page.window,
        rank.turn_created_at,
        rank.requester_id,
        rank.conversation_id,
        after_score,
        after_id,
        page.limit,
        rank.recency_weight,
        rank.recency_days,
        rank.requester_spoke_weight,
        rank.same_conversation_weight,
        db.allowed_audiences(destination.params()),
        rank.k1,
        rank.b,
        rank.proximity_weight,
        rank.context_share,
        rank.context_top,
        page.binding,
        rank.follow_up_share,
        rank.supersedes_share,
        rank.asks_weight,
    )
    db.remember_allowed_audiences(destination.params(), rows)
    counts = dict.fromkeys(RULES, 0)
    counts.update(rows[0]["counts"])  # jsonb, decoded by the pool (app.db)
    hits = [_hit(r) for r in rows if r["id"] is not None]
    neighbors = {r["id"]: neighbors_from(r["neighbors"]) for r in rows if r["id"] is not None}
    head = next((r for r in rows if r["turn_version"] is not None), None)
    return SearchRows(
        hits,
        counts,
        rows[0]["examined"],
        neighbors,
        frozenset(head["evidence"]) if head is not None else frozenset(),
        head["turn_version"] if head is not None else None,
        head["new_weights"] if head is not None else None,
    )


def _hit(r: asyncpg.Record) -> HitRow:
    components = (
        ("lexical", r["lexical"]),
        ("proximity", r["proximity"]),
        ("supersedes", r["supersedes"]),
        ("asks", r["asks"]),
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
