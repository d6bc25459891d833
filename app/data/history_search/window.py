"""The examined window of a historySearch, each examined match's verdict, and the ranked pool.

The window is the matches a search looks at: the newest `window` documents that contain any of
the query's words, and, however old, every document that contains its rarest words (the
rarest first, as many as have at most `rare_window` documents between them, from the term
statistics). A rare identifier's incident from a year ago competes with this week's chatter
that shares a common word; the work stays bounded however common the words
(docs/relevance.md, The window).

Both are read from the sidecar narrowed by its derived copies (root scope against the agent's
conversations, author, time), then each match's canonical row by primary key; the filters are
checked again on that row. The sidecar only narrows the scan: eligibility is decided on the
message rows.

Every examined match is counted once under the first rule that removed it (the CASE evaluates
the shared fragments of app.data.eligibility in their order and stops at the first that
fails; NULL fails closed). The pool is the window's rows whose verdict is `eligible`, before
any score exists.
"""

from __future__ import annotations

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    audience_allows,
    has_evidence,
    in_perspective,
    lineage_allows,
)
from app.data.history_search.inputs import Bound, author_and_time

# The rules of the counts, in the order they are decided.
RULES = ("already_in_context", "no_evidence", "audience", "lineage", "eligible")


def terms_cte(b: Bound) -> str:
    """CTE `terms`: the query's tsqueries, computed once per statement (a function of the
    parameters in a filter would be called again for every row under a generic plan):
    `any_word` (identifiers whole and in parts, excluded words removed), `all_words`, and
    `excluded` (any excluded word)."""
    return f"""terms as materialized (
    select recall_history_tsquery({b.include}, {b.exclude}) as any_word,
           recall_search_tsquery({b.include}, {b.exclude}, false) as all_words,
           recall_search_tsquery({b.exclude}, '{{}}', true) as excluded
)"""


QUERY = "(select any_word from terms)"


def _document_filters(b: Bound, d: str) -> str:
    return " and ".join([f"{d}.root_scope_id = any({b.conversations})", *author_and_time(b, d)])


def _message_filters(b: Bound) -> str:
    return " and ".join(["true", *author_and_time(b, "m")])


_DOCUMENT = "message_id, global_seq, root_scope_id, tsv"
# The most documents a walk of the recency index reads (at 1M messages ~30 ms): a word in 1%
# of the workspace's documents and a quarter of them in the agent's conversations fills a
# window of 100 in ~40,000.
WALK_LIMIT = 40_000


def _older(b: Bound, d: str) -> str:
    """A later window holds only documents older than where the one before it ended."""
    if not b.has_window_before:
        return ""
    return f" and {d}.global_seq < {b.window_before}"


def _not_read_as_rare(b: Bound, d: str) -> str:
    """A later window leaves out the rare words' matches the first window read: all of them,
    or those down to `rare_floor` when it stopped at rare_window."""
    if not b.has_window_before:
        return ""
    floor = f" and {d}.global_seq >= {b.rare_floor}" if b.has_rare_floor else ""
    return f" and not (coalesce({d}.tsv @@ (select q from rare), false){floor})"


def _rare_matches(b: Bound) -> str:
    """CTE `rare_matches`: every match of the rare lexemes from the GIN index (OFFSET 0: not a
    walk of the recency index looking for them) not already in `newest`, at most rare_window;
    in the first window only."""
    if b.has_window_before:
        return f"rare_matches as materialized (select {_DOCUMENT} from newest where false)"
    return f"""rare_matches as materialized (
    select {_DOCUMENT} from (
        select r.* from search_documents r
        where r.workspace_id = $1 and r.tsv @@ (select q from rare)
        offset 0
    ) d
    where d.tsv @@ {QUERY} and {_document_filters(b, "d")}
      and d.message_id not in (select n.message_id from newest n)
    order by d.global_seq desc
    limit {b.rare_window}
)"""


def _rare_floor(b: Bound) -> str:
    if b.has_window_before:
        return b.rare_floor if b.has_rare_floor else "null::bigint"
    return f"""case when (select count(*) from rare_matches) >= {b.rare_window}
            then (select min(r.global_seq) from rare_matches r) end"""


def window_ctes(b: Bound) -> str:
    """CTEs `context_ids`, `reach`, `span`, `rare`, `newest`, `rare_matches` and `examined` (id,
    scope, author, time, the eligibility columns, the document vector and root scope).

    The access path is chosen here, from the term statistics, not by the planner: the
    statement is planned once per connection (a generic plan, app.db) and must be right for
    every query. `span.walk`: the query's words are in so many documents (at least
    sqrt(window × documents)) that the newest `window` matches are found sooner by walking
    the recency index than by fetching them all from the GIN index; the two branches of
    `newest` are each gated by it (a one-time filter: the other never runs). The walk reads at
    most WALK_LIMIT documents (words common in the workspace may be rare in the agent's
    conversations): what it did not reach is older than the window, which says so
    (`complete` false). The window is `window` matches beyond the turn's own context: the
    trigger and the loaded window match too (they are the conversation the agent is in), and
    are counted, not shown (`already_in_context`)."""
    return f"""
-- The trigger and the turn's loaded window (already in the prompt), and how many of them match.
context_ids as materialized (
    select coalesce(array_agg(c.id), '{{}}') as ids from (
        select w.message_id from turn_window w where w.workspace_id = $1 and w.turn_id = {b.turn}
        {f"union all select {b.trigger}" if b.has_trigger else ""}
    ) c(id)
),
reach as materialized (
    select {b.window} + (
        select count(*) from unnest((select ids from context_ids)::bigint[]) i(id)
        cross join lateral (
            select 1 from search_documents c
            where c.workspace_id = $1 and c.message_id = i.id and c.tsv @@ {QUERY}
            offset 0
        ) c
    ) as n
),
span as materialized (
    select coalesce(sum(w.documents), 0) > sqrt({b.window}::float8 * (select n from corpus))
        as walk
    from weights w
),
-- The query's rarest lexemes, rarest first, as many as have at most rare_window documents
-- between them (NULL: none): every match of them is examined in the first window, however
-- old. Frozen with the turn's weights for the binding (ranked_with), so that a later window
-- leaves out exactly the matches the first one read, however the statistics move.
rare as materialized (
    select case when exists (select 1 from frozen f where f.weights ? 'rare')
        then (select (f.weights->>'rare')::tsquery from frozen f)
        else (select string_agg(quote_literal(r.lexeme), ' | ')::tsquery
              from (select w.lexeme, sum(w.documents) over (order by w.documents, w.lexeme)
                           as running
                    from weights w where w.documents > 0) r
              where r.running <= {b.rare_window})
        end as q
),
newest as materialized (
    (select {_DOCUMENT} from (
         select w.* from search_documents w
         where w.workspace_id = $1 and (select walk from span){_older(b, "w")}
         order by w.global_seq desc
         limit {WALK_LIMIT}
     ) d
     where d.tsv @@ {QUERY} and {_document_filters(b, "d")}{_not_read_as_rare(b, "d")}
     order by d.global_seq desc
     limit (select n from reach))
    union all
    (select {_DOCUMENT} from (
         select g.* from search_documents g
         where g.workspace_id = $1 and g.tsv @@ {QUERY} and not (select walk from span)
               {_older(b, "g")}
         offset 0
     ) d
     where {_document_filters(b, "d")}{_not_read_as_rare(b, "d")}
     order by d.global_seq desc
     limit (select n from reach))
),
{_rare_matches(b)},
-- Where the next window starts: below the oldest match of this one when it is full; below
-- the last document the walk read when the walk ended first; nowhere (NULL) when every
-- match of the query's words was examined. And how far back the first window read the rare
-- words' matches, when it had to stop at rare_window of them.
beyond as materialized (
    select case
        when (select count(*) from newest) >= (select n from reach)
            then (select min(n.global_seq) from newest n)
        when (select walk from span) then (
            select s.global_seq from search_documents s
            where s.workspace_id = $1{_older(b, "s")}
            order by s.global_seq desc offset {WALK_LIMIT - 1} limit 1)
        end as next_window,
        {_rare_floor(b)} as rare_floor
),
examined as materialized (
    select m.id, m.scope_id, m.author_id, m.created_at, m.evidence, m.deleted, m.audience_id,
           m.has_provenance, m.lineage_audience_ids, m.lineage_denied, d.tsv, d.root_scope_id
    from (select * from newest union all select * from rare_matches) d
    cross join lateral (
        select m.id, m.scope_id, m.author_id, m.created_at, m.evidence, m.deleted,
               m.audience_id, m.has_provenance, m.lineage_audience_ids, m.lineage_denied
        from messages m where m.workspace_id = $1 and m.id = d.message_id
        offset 0
    ) m
    where {_message_filters(b)}
)"""


def in_context(b: Bound, m: str) -> str:
    """The trigger and the turn's loaded window are already in the prompt: a hit repeating them
    is waste (`context_ids` is defined by window_ctes)."""
    return f"{m}.id = any((select ids from context_ids)::bigint[])"


def verdicts_ctes(b: Bound, *, complete: bool) -> str:
    """CTEs `perspective`, `verdicts`, `counted` and `pool`. `complete`: the
    reader's Reader.lineage_complete (a missing lineage summary is denied, not walked)."""
    return f"""
-- Only scopes the agent is a member of (a thread: its parent's members), on the canonical row's
-- scope, decided once per distinct scope of the window. OFFSET 0 keeps it a probe per scope
-- rather than a join that hashes the agent's whole perspective.
perspective as materialized (
    select w.scope_id from (select distinct scope_id from examined) w
    cross join lateral (select {in_perspective("w.scope_id", b.agent)} as ok offset 0) p
    where p.ok
),
verdicts as materialized (
    select m.id, m.scope_id, m.created_at, m.tsv, m.root_scope_id, case
            when {in_context(b, "m")} then 'already_in_context'
            when not coalesce({has_evidence("m")}, false) then 'no_evidence'
            when not coalesce({audience_allows("m", ALLOWED_FROM_CTE)}, false) then 'audience'
            when not coalesce({lineage_allows("m", ALLOWED_FROM_CTE, complete=complete)}, false)
                then 'lineage'
            else 'eligible'
        end as rule
    from examined m
    where m.scope_id = any((select array_agg(scope_id) from perspective)::bigint[])
),
-- `complete`: every match of any of the query's words was examined by this window and the
-- ones before it (no next window).
counted as (
    select coalesce(jsonb_object_agg(rule, n), '{{}}') as counts,
           coalesce(sum(n), 0)::int as examined,
           (select next_window from beyond) is null as complete,
           (select next_window from beyond) as next_window,
           (select rare_floor from beyond) as rare_floor
    from (select rule, count(*) as n from verdicts group by 1) ruled
),
pool as materialized (
    select v.id, v.scope_id, v.created_at, v.tsv, v.root_scope_id
    from verdicts v where v.rule = 'eligible'
)"""
