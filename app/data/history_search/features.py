"""The ranking features computed over the pool: exact matches, the conversation around the best
matches, and supersession (app.history_search.ranking says what each is worth and why).

Every row these fragments score is already in the pool (eligible, in the perspective, not in
the turn's context) or, for the conversation around a match, passes exactly what a pool row
passed, each a conjunct, before any score exists. Nothing here can make a row eligible.
"""

from __future__ import annotations

from app.data.eligibility import ALLOWED_FROM_CTE, eligible, in_perspective
from app.data.history_search.inputs import Bound, author_and_time
from app.data.history_search.weights import bm25
from app.data.history_search.window import in_context

# An exact match contains the query verbatim: whitespace runs count as one space, case is
# ignored, and so are characters past the first 100,000 (what the document vector indexes).
_BODY = r"regexp_replace(lower(left(t.body, 100000)), '\s+', ' ', 'g')"
# A question ("...?") or a request to an agent by name ("scout, ..." / "scout: ...").
_ASKS = r"""(x.raw ~ '\?\s*$'
    or lower(substring(x.raw from '^\s*([[:alnum:]_.-]+)\s*[,:]'))
       = any((select names from agent_names)::text[]))"""


def best_ctes(b: Bound) -> str:
    """CTEs `agent_names` and `best`: the best `best_read` pool rows by lexical score, their
    bodies read once for two tests — `exact`: the body matches the pattern of the whole query
    (several words), or holds every word of it with its identifiers and phrases as written
    (app.history_search.exact builds the patterns); `asks`: it is a question or a request to an agent
    (where the answer was asked for, not the answer). A body that holds the query verbatim
    holds all of its lexemes, so it is among the best lexical scores: only those are read."""
    tests = []
    if b.has_whole:
        tests.append(f"x.body ~ {b.whole}")
    if b.has_verbatim:
        tests.append(
            "(l.tsv @@ (select all_words from terms)"
            f" and not exists (select 1 from unnest({b.verbatim}) v where x.body !~ v))"
        )
    exact = " or ".join(tests) if tests else "false"
    # The body made comparable (lower-cased, spaces collapsed) only where there is something
    # to compare it with.
    body = _BODY if tests else "t.body"
    return f"""
agent_names as materialized (
    select coalesce(array_agg(lower(g.name)), '{{}}') as names from actors g
    where g.workspace_id = $1 and g.kind = 'agent'
),
best as materialized (
    select l.id, coalesce({exact}, false) as exact, coalesce({_ASKS}, false) as asks
    from (
        select id, tsv from lexed order by lexical desc, id desc limit {b.best_read}
    ) l
    cross join lateral (
        select {body} as body, t.body as raw from messages t
        where t.workspace_id = $1 and t.id = l.id
    ) x
)"""


# The conversation around a source: its thread's nearest CONTEXT_PER_SOURCE messages (the
# thread it is in, or the one it roots), the thread's root, and its neighbors within
# CONTEXT_NEIGHBORS messages and CONTEXT_MINUTES that share a word with it.
CONTEXT_PER_SOURCE = 8
CONTEXT_NEIGHBORS = 2
CONTEXT_MINUTES = 120


def context_ctes(b: Bound, *, complete: bool) -> str:
    """CTEs `sources` (the best few matches, or the ones this turn's first search of the
    binding used), `around` (each message around a source, with the share of its source's
    lexical score it is raised to: follow_up_share for the replies after it in its thread,
    context_share for the rest) and `extra` (messages around a source outside the pool, only
    while the pool holds fewer than context_fill rows; tier CONTEXT unless they hold one of the
    query's words). A frozen source is rechecked like a pool row."""
    return f"""
sources as materialized (
    select l.id, l.lexical, m.scope_id, m.seq, m.created_at, s.kind, s.root_message_id, l.tsv
    from (select x.* from lexed x
          order by x.id = any((select array_agg(id) from best where exact)::bigint[]) desc,
                   x.lexical desc, x.id desc
          limit {b.context_sources}) l
    join messages m on m.workspace_id = $1 and m.id = l.id
    join scopes s on s.workspace_id = $1 and s.id = m.scope_id
    where not exists (select 1 from frozen)
    union all
    select m.id, (e.value->>1)::float8, m.scope_id, m.seq, m.created_at, s.kind,
           s.root_message_id, coalesce(d.tsv, ''::tsvector)
    from frozen f
    cross join jsonb_array_elements(f.weights->'sources') e
    -- Each source by primary key, then checked: a frozen source counts only while the turn
    -- may still see it (a score never depends on a message deleted, or in a conversation
    -- left, since the first search). OFFSET 0 keeps it a lookup per source: flattened, the
    -- planner joined the perspective's ~2,500 scopes to their messages first (0.9 s at 1M).
    cross join lateral (
        select m.* from messages m
        where m.workspace_id = $1 and m.id = (e.value->>0)::bigint
          and {in_perspective("m.scope_id", b.agent)}
          and {eligible("m", ALLOWED_FROM_CTE, complete=complete)}
        offset 0
    ) m
    join scopes s on s.workspace_id = $1 and s.id = m.scope_id
    left join search_documents d on d.workspace_id = $1 and d.message_id = m.id
),
around as materialized (
    select c.id, max(src.lexical * case when c.after then {b.follow_up_share}
                                        else {b.context_share} end) as raised
    from sources src
    cross join lateral (
        (select m.id, (src.kind <> 'thread' or m.seq > src.seq) as after from messages m
         where m.workspace_id = $1 and m.scope_id = case when src.kind = 'thread'
             then src.scope_id
             else (select t.id from scopes t where t.workspace_id = $1
                   and t.root_message_id = src.id and t.parent_id = src.scope_id
                   order by t.id limit 1) end
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
-- Messages around a source that are not in the pool pass exactly what a pool row passed: a
-- document, the perspective, the turn's context, the fragment `eligible`, the speaker and time
-- filters and the excluded words, each a conjunct, before any score exists.
extra as materialized (
    select m.id, m.scope_id, m.created_at, d.tsv, d.root_scope_id
    from around a
    join messages m on m.workspace_id = $1 and m.id = a.id
    join search_documents d on d.workspace_id = $1 and d.message_id = m.id
    where (select count(*) from pool) < {b.context_fill}{_first_window(b)}
      and m.id not in (select p.id from pool p)
      and {in_perspective("m.scope_id", b.agent)} and not {in_context(b, "m")}
      and {eligible("m", ALLOWED_FROM_CTE, complete=complete)}
      {_extra_filters(b)}
      and not coalesce(d.tsv @@ (select excluded from terms), false)
)"""


def _first_window(b: Bound) -> str:
    """The conversation around the sources joins the first window only: a later window's
    matches are older than the sources, and its own matches are read with their neighbors."""
    return " and false" if b.has_window_before else ""


def _extra_filters(b: Bound) -> str:
    return " ".join(f"and {c}" for c in author_and_time(b, "m"))


NO_CONTEXT = """
sources as materialized (select null::bigint as id, null::float8 as lexical where false),
around as materialized (select null::bigint as id, null::float8 as raised where false),
extra as materialized (
    select null::bigint as id, null::bigint as scope_id, null::timestamptz as created_at,
           null::tsvector as tsv, null::bigint as root_scope_id where false
)"""


def candidates_cte(b: Bound) -> str:
    """CTE `candidates`: the pool's rows (tier 2 when an exact match, else 1) and the extra
    rows (tier 1 if they contain a word of the query, else 0), with their lexical scores and
    whether they ask (the best pool rows only).

    A copy of a text already among the candidates (the same document vector: the same words
    in the same places — a bot's notice, a pasted status, a line posted to several channels)
    says nothing the first did not: the n-th copy, oldest first, keeps 1/n of its lexical
    score, so copies no longer fill a page ahead of the messages that say something else. The
    oldest keeps its score: a copy arriving later never lowers one already ranked."""
    return f"""
candidates as materialized (
    select u.id, u.scope_id, u.created_at, u.tsv, u.root_scope_id,
           u.lexical / row_number() over (partition by u.tsv order by u.id) as lexical,
           u.tier, u.asks
    from (
        select l.id, l.scope_id, l.created_at, l.tsv, l.root_scope_id, l.lexical,
               case when l.id = any((select array_agg(id) from best where exact)::bigint[])
                    then 2 else 1 end as tier,
               l.id = any((select array_agg(id) from best where asks)::bigint[]) as asks
        from lexed l
        union all
        select e.id, e.scope_id, e.created_at, e.tsv, e.root_scope_id, {bm25(b, "e.tsv")},
               case when e.tsv @@ (select any_word from terms) then 1 else 0 end, false
        from extra e
    ) u
)"""


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


def revisions_ctes(b: Bound) -> str:
    """CTEs `revisable`, `revising` and `revisions`: a candidate that says it changes
    something supersedes one of the best matches written before it in the same conversation
    (a channel and its threads) when the query words both match make up REVISES_OVERLAP of
    the best lexical score; it is raised to supersedes_share of that one's lexical score.
    Kept per turn and binding like the sources: a row's score never depends on rows that
    arrive between pages."""
    return f"""
revisable as materialized (
    select c.id, c.created_at, c.tsv, c.lexical, c.root_scope_id from candidates c
    where c.tier > 0 and not exists (select 1 from frozen)
    order by c.lexical desc, c.id desc limit {REVISABLE}
),
revising as materialized (
    select c.id, c.created_at, c.tsv, c.lexical, c.root_scope_id from candidates c
    where c.tier > 0 and not exists (select 1 from frozen) and c.tsv @@ {_REVISES}
    order by c.lexical desc, c.id desc limit {REVISING}
),
revisions as materialized (
    select r.id, max(a.lexical) as revised
    from revising r
    join revisable a on a.root_scope_id = r.root_scope_id and a.created_at < r.created_at
    where (select coalesce(sum(w.idf), 0) from weights w where a.tsv @@ w.q and r.tsv @@ w.q
           and w.lexeme <> all({_REVISION_STEMS}))
          >= {REVISES_OVERLAP} * (select max(x.lexical) from revisable x)
    group by r.id
    union all
    select (e.value->>0)::bigint, (e.value->>1)::float8
    from frozen f cross join jsonb_array_elements(coalesce(f.weights->'revisions', '[]')) e
)"""


NO_REVISIONS = (
    "revisions as materialized (select null::bigint as id, null::float8 as revised where false)"
)
