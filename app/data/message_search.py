"""The statements of messageSearch: the bounded, authorized candidate scan, the page and the
page's messages with their highlights in one; then the page's audit row.

Invariant: every filter only removes rows. The scan starts from the viewer's own workspace and
from the documents whose vector matches the query; the position, scope, author and time (since,
until) conditions are further conjuncts of that WHERE clause, and eligibility (evidence, audience, lineage — the shared
fragments of app.data.eligibility, never re-implemented here) is decided per candidate before a
candidate can become a result. Nothing here ORs a condition in, so no filter and no cursor can
widen what the person may read: a filter on another person's DM, another workspace's scope or a
nonexistent author narrows the result to nothing, exactly like a filter on an unknown id.

The scan is bounded: at most `budget` candidates (documents matching text and every filter)
are examined per request, newest first. A filter that names a conversation or an author admits
only readable candidates (_named_conditions), so the budget says nothing about what is hidden
there. The candidates carry ids, order keys and the first eligibility rule each fails — never
text; only the page's bodies are read, from the canonical rows whose verdicts admitted them, in
the same statement.

The audit row is its own INSERT, written before the page is returned: a failed write fails the
search and nothing is shown. Inside the page's statement (a data-modifying CTE) it would save a
round trip on plain PostgreSQL, but on Citus an INSERT ... SELECT there splits the statement
into subplans, each a round trip to the shard (17 for a page: 32 ms instead of 13 at 100k
messages; docs/scale.md); the page's statement is one router query instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import asyncpg

from app.data.audit import SearchAudit, write_audit
from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    REPORT_ALLOWED_AUDIENCES,
    allowed_audiences_cte,
    audience_allows,
    eligible,
    has_evidence,
    lineage_allows,
)
from app.data.messages import HEAD_COLUMNS
from app.data.params import Params
from app.data.readers import Reader
from app.data.rows import ActorRow, MessageRow, ScopeRow, actor_columns
from app.data.session import Session

# The private-use characters that mark highlights in ts_headline output. Bodies may contain
# them too, so they are replaced in the highlighted copy by U+FFFD first: both are one UTF-16
# unit, so offsets into the copy are offsets into the body.
START_MARK = "\ue000"
STOP_MARK = "\ue001"
_REPLACEMENT = "\ufffd"
_HEADLINE_OPTIONS = f"HighlightAll=true, StartSel={START_MARK}, StopSel={STOP_MARK}"

# A hit is read and highlighted in a window of at most WINDOW characters of its body: all of
# it for the messages people write, and for a very long one (a pasted log, a 100 KB report)
# the part from a little before the first occurrence of a query term. ts_headline parses what
# it is given, so highlighting a whole 100 KB body cost ~28 ms a hit (a page of 100 such hits:
# 1.2 s and 10 MB); a window of 2,048 costs ~0.5 ms. Such a body is not returned by the
# page's statement at all: Message.body loads it when a client asks for it.
WINDOW = 2048
# Characters of context kept before the first occurrence when the window does not start at 0.
WINDOW_LEAD = 200
# The first occurrence is looked for regardless of case in this many leading characters, and
# as the term is written (case-sensitive, stopping at the first) in the rest: lower-casing a
# whole 100 KB body per hit was most of a long page's time.
CASELESS_PREFIX = 8192


@dataclass(frozen=True, slots=True)
class ScopeCondition:
    """messageSearch(scopeId:): only that scope. scope_id None is an id of no scope."""

    scope_id: int | None


@dataclass(frozen=True, slots=True)
class AuthorCondition:
    """messageSearch(author:). kind is member | agent | member_agents; actor_id None is an id
    of nothing of that kind."""

    kind: str
    actor_id: int | None


@dataclass(frozen=True, slots=True)
class AuthorSet:
    """The from: (or agents-of:) operators of a query, resolved: messages by one of actor_ids
    (agents_of: by an agent one of actor_ids owns, as AuthorCondition's member_agents);
    negated: by none of them. An empty positive set matches nothing."""

    actor_ids: tuple[int, ...]
    agents_of: bool = False
    negated: bool = False


@dataclass(frozen=True, slots=True)
class ScopeSet:
    """The in: operators of a query, resolved: messages of one of the conversations root_ids
    or of their threads (a document's root_scope_id), or of one of the threads thread_ids;
    negated: of none of them. An empty positive set matches nothing."""

    root_ids: tuple[int, ...]
    thread_ids: tuple[int, ...] = ()
    negated: bool = False


@dataclass(frozen=True, slots=True)
class After:
    """Continue strictly after this position; scope_id None means after all of global_seq."""

    global_seq: int
    scope_id: int | None
    seq: int | None
    message_id: int | None


@dataclass(frozen=True, slots=True)
class Candidate:
    message_id: int
    global_seq: int
    scope_id: int
    seq: int
    # The first rule that removed the candidate (no_evidence, audience, lineage); None: eligible.
    excluded_by: str | None


# Authors an author filter keeps; each selects actors of the right kind only, so an id of the
# wrong kind (an agent's id under MEMBER, a member's under AGENT) selects nobody.
_AUTHOR_SETS = {
    "member": "select a.id from actors a where a.workspace_id = $1 and a.kind = 'member'"
    " and a.id = {p}",
    # A deleted agent is no one any more (docs/changes.md): its id matches nothing.
    "agent": "select a.id from actors a where a.workspace_id = $1 and a.kind = 'agent'"
    " and a.deleted_at is null and a.id = {p}",
    # Agents whose owner is the given member; never the member's own messages.
    "member_agents": "select a.id from actors a where a.workspace_id = $1 and a.kind = 'agent'"
    " and a.owner_id = {p}",
}


def _after_sql(g: str, s: str | None, q: str | None, m: str | None) -> str:
    """Strictly after the position (g, s, q, m), in search order (global_seq DESC, scope_id ASC,
    seq DESC, message_id ASC); with s None, after all of global_seq g. The leading `<=` lets
    the recency index seek to the position."""
    if s is None:
        return f"d.global_seq < {g}"
    return (
        f"d.global_seq <= {g} and (d.global_seq < {g} or (d.global_seq = {g} and"
        f" (d.scope_id > {s} or (d.scope_id = {s} and (d.seq < {q} or"
        f" (d.seq = {q} and d.message_id > {m}))))))"
    )


def _after_condition(after: After, p: Params) -> str:
    g = p.add(after.global_seq)
    if after.scope_id is None:
        return _after_sql(g, None, None, None)
    return _after_sql(g, p.add(after.scope_id), p.add(after.seq), p.add(after.message_id))


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What a scan looks for: a reader's destination ($1-$4), the query's terms, the filters.

    since (inclusive) and until (exclusive) bound the message's created_at; both are aware
    datetimes (app.search.message_search normalizes them to UTC)."""

    destination: tuple[int, str, int, list[int]]
    # No words (include empty): a query of operators only, every document is a match (minus
    # the excluded words).
    include: Sequence[str]
    exclude: Sequence[str]
    scope: ScopeCondition | None = None
    author: AuthorCondition | None = None
    # The query's operators (app.search.operator_filters), each a further conjunct.
    authors: Sequence[AuthorSet] = ()
    scopes: Sequence[ScopeSet] = ()
    since: datetime | None = None
    until: datetime | None = None
    # The reader's Reader.lineage_complete: a missing lineage summary is denied, not walked.
    lineage_complete: bool = False
    # Who searches: a filter naming a conversation or an author then counts only candidates
    # this reader may read (_named_conditions). None: every match is a candidate (unit scans).
    viewer: Reader | None = None


def _text_and_filters(q: CandidateQuery, p: Params) -> tuple[str, list[str]]:
    """The query's text condition, and the filters' conjuncts, each its own `and` term."""
    if q.include:
        text = (
            f"d.tsv @@ recall_search_tsquery({p.add(list(q.include))}::text[],"
            f" {p.add(list(q.exclude))}::text[], false)"
        )
    elif q.exclude:
        # Operators and excluded words only: no document containing any of them (a word that
        # folds to nothing, a stop word, excludes nothing).
        text = (
            f"coalesce(not d.tsv @@ recall_search_tsquery({p.add(list(q.exclude))}::text[],"
            " '{}', true), true)"
        )
    else:
        text = "true"
    filters = []
    scope = None
    if q.scope is not None:
        scope = p.add(q.scope.scope_id)
        filters.append(f"d.scope_id = {scope}::bigint")
    if q.author is not None:
        actor = p.add(q.author.actor_id)
        filters.append(
            f"d.author_id in ({_AUTHOR_SETS[q.author.kind].format(p=actor + '::bigint')})"
        )
    filters += [_author_set_sql(a, p) for a in q.authors]
    filters += [c for c in (_scope_set_sql(s, p) for s in q.scopes) if c is not None]
    # The document's copy of the message's created_at (migrations/012), checked against the
    # message row below like scope_id and author_id.
    if q.since is not None:
        filters.append(f"d.created_at >= {p.add(q.since)}::timestamptz")
    if q.until is not None:
        filters.append(f"d.created_at < {p.add(q.until)}::timestamptz")
    filters += _named_conditions(q, p, scope)
    return text, filters


def _named_conditions(q: CandidateQuery, p: Params, scope: str | None) -> list[str]:
    """A filter that names a conversation or an author (scopeId, author, in:, from:,
    agents-of:) counts only candidates the viewer may read: conjuncts of the scan, before the
    budget. Otherwise the budget running out would say that at least `budget` hidden messages
    lie in that conversation or were posted by that person where the viewer cannot read, and,
    bisecting since/until, when. Their hidden messages then answer exactly like none at all.

    A scopeId must also name a scope the viewer may list (Reader.scope_predicate, the rule in:
    resolves by), one statement-constant check the planner runs once: another person's private
    channel is one and the same empty filter as an id of nothing, read in no time. Each
    candidate is then judged by eligible() on its message row (a primary-key probe) in the
    scan itself; the scan reads on past what it drops, which costs time only for the named
    conversation's or author's hidden messages, never the whole workspace's. A search naming
    neither keeps the bounded scan and its one workspace-wide bit (docs/api.md, Cursors)."""
    viewer = q.viewer
    if viewer is None or not (scope or q.author or q.authors or q.scopes):
        return []
    conditions = []
    if scope is not None:
        listable = viewer.scope_predicate("ls", p.add(viewer.actor_id))
        conditions.append(
            f"exists (select 1 from scopes ls where ls.workspace_id = $1"
            f" and ls.id = {scope}::bigint and {listable})"
        )
    readable = eligible("em", ALLOWED_FROM_CTE, complete=q.lineage_complete)
    conditions.append(
        "exists (select 1 from messages em where em.workspace_id = $1"
        f" and em.id = d.message_id and {readable} offset 0)"
    )
    return conditions


def _in(column: str, ids: Sequence[int], p: Params) -> str:
    """column is one of ids; a single id as `=` so the planner can read that id's documents
    in search order from its index (migrations/030) instead of sorting all of them."""
    if len(ids) == 1:
        return f"{column} = {p.add(ids[0])}::bigint"
    return f"{column} = any({p.add(list(ids))}::bigint[])"


def _author_set_sql(a: AuthorSet, p: Params) -> str:
    if not a.actor_ids:
        return "false"  # a negated empty set is never compiled (it excludes nothing)
    if a.agents_of:
        owned = (
            "select ag.id from actors ag where ag.workspace_id = $1 and ag.kind = 'agent'"
            f" and {_in('ag.owner_id', a.actor_ids, p)}"
        )
        condition = f"d.author_id in ({owned})"
    else:
        condition = _in("d.author_id", a.actor_ids, p)
    return f"not ({condition})" if a.negated else condition


def _scope_set_sql(s: ScopeSet, p: Params) -> str | None:
    parts = []
    if s.root_ids:
        parts.append(_in("d.root_scope_id", s.root_ids, p))
    if s.thread_ids:
        parts.append(_in("d.scope_id", s.thread_ids, p))
    if not parts:
        return None if s.negated else "false"
    condition = parts[0] if len(parts) == 1 else f"({' or '.join(parts)})"
    return f"not ({condition})" if s.negated else condition


_ORDER = "d.global_seq desc, d.scope_id, d.seq desc, d.message_id"
_DOCUMENT_COLUMNS = "d.message_id, d.global_seq, d.scope_id, d.seq, d.author_id, d.created_at"


def _scan(
    q: CandidateQuery,
    p: Params,
    text: str,
    filters: list[str],
    after: str | None,
    limit: str,
    walk: str | None = None,
    gate: str | None = None,
) -> str:
    """One bounded scan of the sidecar in search order: documents matching the text, after the
    position, and every filter; with `walk`, only among the newest `walk` documents after the
    position, read through the recency index whatever the planner estimates; with `gate`, only
    if that (statement-constant) condition holds."""
    source = "search_documents d"
    if walk is not None:
        start = f" and {after}" if after is not None else ""
        source = (
            f"(select d.* from search_documents d where d.workspace_id = $1{start}"
            f" order by {_ORDER} limit {walk}) d"
        )
    where = ["d.workspace_id = $1", text]
    if after is not None:
        where.append(after)
    where += filters
    if gate is not None:
        where.append(gate)
    return (
        f"select {_DOCUMENT_COLUMNS} from {source}"
        f" where {' and '.join(where)} order by {_ORDER} limit {limit}"
    )


# Each candidate's canonical row by primary key (OFFSET 0 keeps it that lookup: with every
# column below in the join condition the planner would pick whichever index covers most of them
# and scan an author's messages in a scope), checked against the document; and its verdict:
# eligible()'s conjuncts in eligible()'s order, as a CASE so the audit can count each candidate
# under the first rule that removed it. NULL fails closed (coalesce), and so does a document
# that disagrees with its message row (m.id is null).
def _verdict(complete: bool) -> str:
    return f"""
    case
        when m.id is null or not coalesce({has_evidence("m")}, false) then 'no_evidence'
        when not coalesce({audience_allows("m", ALLOWED_FROM_CTE)}, false) then 'audience'
        when not coalesce({lineage_allows("m", ALLOWED_FROM_CTE, complete=complete)}, false)
            then 'lineage'
    end"""


_CANONICAL = """
    left join lateral (
        select m.id, m.scope_id, m.author_id, m.global_seq, m.seq, m.created_at, m.evidence, m.deleted, m.audience_id, m.has_provenance, m.lineage_audience_ids,
               m.lineage_denied
        from messages m where m.workspace_id = $1 and m.id = c.message_id
        offset 0
    ) m on m.scope_id = c.scope_id and m.author_id = c.author_id
        and m.global_seq = c.global_seq and m.seq = c.seq and m.created_at = c.created_at"""


def _judged(cte: str, complete: bool) -> str:
    """The candidates of `cte` with their verdicts (`complete`: CandidateQuery's)."""
    return (
        f"select c.message_id, c.global_seq, c.scope_id, c.seq, {_verdict(complete)}"
        f" as excluded_by from {cte} c {_CANONICAL}"
    )


async def scan_candidates(
    db: Session, q: CandidateQuery, *, after: After | None, budget: int, walk: int | None = None
) -> list[Candidate]:
    """Up to `budget` candidates in search order, each with its eligibility verdict: one scan,
    as search_page's first one (the statements' shared parts are tested through it).

    The pool plans every statement for its actual parameters (app.db), so the folded tsquery
    picks the GIN or the recency index by how selective it is. A query that is only stop
    words has a NULL tsquery, which matches no document (`@@ NULL` is not true)."""
    destination = q.destination
    p = Params(destination)
    text, filters = _text_and_filters(q, p)
    position = _after_condition(after, p) if after is not None else None
    scan = _scan(
        q, p, text, filters, position, p.add(budget), p.add(walk) if walk is not None else None
    )
    known = db.allowed_audiences(destination)
    allowed = allowed_audiences_cte(p.add(known) if known is not None else None)
    sql = f"""
        with {allowed},
        candidates as materialized ({scan}),
        judged as ({_judged("candidates", q.lineage_complete)})
        select j.*, {REPORT_ALLOWED_AUDIENCES} from judged j
        order by j.global_seq desc, j.scope_id, j.seq desc, j.message_id
    """
    rows = await db.fetch(sql, *p.values)
    db.remember_allowed_audiences(destination, rows)
    return [_candidate(r) for r in rows]


def _candidate(r: asyncpg.Record, prefix: str = "") -> Candidate:
    return Candidate(
        int(r[prefix + "message_id"]),
        int(r[prefix + "global_seq"]),
        int(r[prefix + "scope_id"]),
        int(r[prefix + "seq"]),
        r[prefix + "excluded_by"],
    )


# Documents read newest first before a query of several lexemes falls back to the planner.
WALK = 10_000


def _several_lexemes(include: Sequence[str]) -> bool:
    """Queries the planner underestimates: it multiplies the selectivities of a query's
    lexemes, but words searched together (a phrase, a Chinese word's bigrams, "acme migration")
    occur together. At 1M messages it took a phrase with 4,791 matches for 90 rows and fetched
    every match from the GIN index (~15 ms), where reading the newest documents finds a page's
    candidates in ~3 ms."""
    return len(include) > 1 or any(" " in t or not t.isascii() for t in include)


@dataclass(frozen=True, slots=True)
class PageHit:
    candidate: Candidate
    # The message as the reader may read it (None only if its row vanished); its body only if
    # it fits the window (body_complete), otherwise left for Message.body to load.
    message: MessageRow | None
    # The window of the body that was highlighted (the whole body when it fits), where it
    # starts in the body in UTF-16 code units, and the window with the English part of the
    # query's terms marked by START_MARK/STOP_MARK (None where nothing English can match).
    window: str
    window_start: int
    marked: str | None


@dataclass(frozen=True, slots=True)
class PageRows:
    """One page, decided in SQL exactly as app.search.paging.page_of decides it."""

    hits: list[PageHit]
    # A further eligible candidate proved a next page (hits is full).
    cut: bool
    # Candidates read, and the last of them (the continuation when the budget ran out).
    examined: int
    last: Candidate | None
    # Candidates before the page's end by the first rule that removed them (the audit's).
    exclusions: dict[str, int]


_INT_MAX = 2_147_483_647
_BIGINT_MAX = 9_223_372_036_854_775_807


async def search_page(
    db: Session,
    q: CandidateQuery,
    *,
    after: After | None,
    first: int,
    budget: int,
    audit: SearchAudit,
) -> PageRows:
    """A page of `first`: the bounded, authorized scan, the page, its messages (with author and
    scope) and their highlights in one statement; then its audit row.

    Most pages fill from their first few candidates, so the scan probes a little past what a
    full page needs (`2 * first + 1`: a page and the one eligible match that proves a next one,
    with room for some invisible ones), and reads on to the budget only when the probe came
    back short of that: the second scan's condition is a constant of the statement, so it does
    not run at all otherwise. A query of several lexemes probes by reading the newest WALK
    documents first, and hands the rest to the planner only if they held too few matches.
    Either way the candidates, their order and their verdicts are exactly those of one scan of
    `budget` in search order, cut where the page is decided (app.search.paging.page_of, which
    this statement computes: the first `first` eligible candidates; the candidates before a
    further eligible one are the examined ones, whose exclusions the audit counts).

    The audit row (what the page selected, what its examined candidates were excluded by) is
    written next; if that fails, the search fails and nothing is shown. The page's messages are
    read from the rows
    their verdicts were decided on: one statement sees one snapshot, so the row shown is the
    row found eligible (an authorization "again" in a later statement, as the loaders do, is
    for rows read in another snapshot; here it would only cost planning, ~0.5 ms)."""
    destination = q.destination
    p = Params(destination)
    probe = min(budget, 2 * first + 1)
    several = _several_lexemes(q.include)
    text, filters = _text_and_filters(q, p)
    probe_scan = _scan(
        q,
        p,
        text,
        filters,
        _after_condition(after, p) if after is not None else None,
        p.add(probe),
        p.add(WALK) if several else None,
    )
    # Where the second scan starts: after the probe's last candidate, or where the probe
    # started if it found none (the largest global_seq when the search starts at the top).
    origin = after or After(_BIGINT_MAX, None, None, None)
    og, os_, oq, om = (
        p.add(origin.global_seq),
        p.add(origin.scope_id),
        p.add(origin.seq),
        p.add(origin.message_id),
    )
    first_p, budget_p, probe_p = p.add(first), p.add(budget), p.add(probe)
    # The probe's decision (scan_for_page before this statement): several lexemes read on when
    # the newest documents held fewer matches than the probe; one lexeme only when the probe
    # was full. Either way only while the probe has no more than a page of eligible ones.
    go = (
        f"(n < {probe_p} or (eligible <= {first_p} and {probe_p} < {budget_p}))"
        if several
        else f"(n = {probe_p} and eligible <= {first_p} and {probe_p} < {budget_p})"
    )
    rest_scan = _scan(
        q,
        p,
        text,
        filters,
        # The position as the decision's columns (NULL scope, seq and message: after all of
        # global_seq, as _after_sql writes it, since NULL comparisons remove the rest).
        _after_sql(
            "(select g from decided)",
            "(select s from decided)",
            "(select q from decided)",
            "(select m from decided)",
        ),
        f"(select greatest({budget_p} - n, 0) from decided)",
        gate="(select go from decided)",
    )
    known = db.allowed_audiences(destination)
    allowed = allowed_audiences_cte(p.add(known) if known is not None else None)
    include = p.add(list(q.include))
    # Marks in a body are replaced in the highlighted copy first (both are one UTF-16 unit).
    marks_from, marks_to = p.add(START_MARK + STOP_MARK), p.add(_REPLACEMENT * 2)
    options = p.add(_HEADLINE_OPTIONS)
    window, lead, prefix = p.add(WINDOW), p.add(WINDOW_LEAD), p.add(CASELESS_PREFIX)
    # Whole when it fits the window: its size in bytes (read from the value's header, no
    # detoasting) rules most bodies in or out; only one of up to 4 bytes a character is
    # counted.
    whole = (
        f"(octet_length(m.body) <= {window} or (octet_length(m.body) <= 4 * {window}"
        f" and length(m.body) <= {window}))"
    )
    sql = f"""
        with {allowed},
        probe as materialized ({probe_scan}),
        probed as materialized ({_judged("probe", q.lineage_complete)}),
        decided as materialized (
            select c.n, c.eligible, {go} as go,
                   coalesce(l.global_seq, {og}::bigint) as g,
                   case when l.global_seq is null then {os_}::bigint else l.scope_id end as s,
                   case when l.global_seq is null then {oq}::bigint else l.seq end as q,
                   case when l.global_seq is null then {om}::bigint else l.message_id end as m
            from (select count(*) as n, count(*) filter (where excluded_by is null) as eligible
                  from probed) c
            left join (select global_seq, scope_id, seq, message_id from probed
                       order by global_seq, scope_id desc, seq desc, message_id desc
                       limit 1) l on true
        ),
        rest as materialized ({rest_scan}),
        candidates as materialized (
            select c.*, row_number() over w as k,
                   count(*) filter (where c.excluded_by is null) over w as e
            from (select * from probed union all {_judged("rest", q.lineage_complete)}) c
            window w as (order by c.global_seq desc, c.scope_id, c.seq desc, c.message_id
                         rows between unbounded preceding and current row)
        ),
        -- The page ends before the first eligible candidate past `first` (proof of a next
        -- page); everything before it was examined for this page.
        cut as materialized (
            select min(k) as k from candidates where excluded_by is null and e = {first_p} + 1
        ),
        examined as materialized (
            select * from candidates where k < coalesce((select k from cut), {_INT_MAX})
        ),
        page as materialized (select * from examined where excluded_by is null),
        marks as materialized (
            select recall_search_tsquery(
                array(select recall_without_cjk(t) from unnest({include}::text[]) as t),
                '{{}}', true) as q
        ),
        hydrated as materialized (
            select pg.k, {HEAD_COLUMNS},
                   case when w.whole then m.body else '' end as body, w.whole as body_complete,
                   w.text as window_text,
                   -- Where the window starts in UTF-16 units: code points before it, plus
                   -- one more for each one beyond the BMP.
                   w.start + case when w.start = 0 then 0 else regexp_count(
                       left(m.body, w.start), '[\U00010000-\U0010ffff]') end as window_start,
                   {actor_columns("a", "a_")},
                   sc.id as s_id, sc.key as s_key, sc.kind as s_kind,
                   sc.visibility as s_visibility, sc.name as s_name,
                   sc.parent_id as s_parent_id, sc.root_message_id as s_root_message_id,
                   sc.destination_audience_id as s_destination_audience_id,
                   ts_headline('english', translate(w.text, {marks_from}, {marks_to}),
                       (select q from marks), {options}) as marked
            from page pg
            join messages m on m.workspace_id = $1 and m.id = pg.message_id
            join actors a on a.workspace_id = $1 and a.id = m.author_id
            join scopes sc on sc.workspace_id = $1 and sc.id = m.scope_id
            cross join lateral (
                select s.whole, s.start, substr(m.body, s.start + 1, {window}) as text
                from (
                    select o.whole, case when o.whole then 0 else greatest(0,
                        coalesce((select min(coalesce(
                                      nullif(strpos(lower(left(m.body, {prefix})), t), 0),
                                      nullif(strpos(m.body, t), 0)))
                                  from unnest({include}::text[]) as t), 1)
                        - 1 - {lead}) end as start
                    from (select {whole} as whole) o
                    offset 0  -- computed once per hit, not once per use of `start`
                ) s
            ) w
        )
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
    rows = await db.fetch(sql, *p.values)
    db.remember_allowed_audiences(destination, rows)
    head = rows[0]
    exclusions = {rule: int(head[rule]) for rule in ("no_evidence", "audience", "lineage")}
    await write_audit(
        db,
        destination[0],
        audit,
        selected=[{"message_id": r["c_message_id"]} for r in rows if r["c_message_id"] is not None],
        exclusions=exclusions,
    )
    hits = [
        PageHit(
            _candidate(r, "c_"),
            replace(
                MessageRow.of(r),
                body_complete=r["body_complete"],
                author=ActorRow.of(r, "a_"),
                scope=ScopeRow.of(r, "s_"),
            )
            if r["id"] is not None
            else None,
            r["window_text"] or "",
            r["window_start"] or 0,
            r["marked"],
        )
        for r in rows
        if r["c_message_id"] is not None
    ]
    return PageRows(
        hits,
        bool(head["cut"]),
        int(head["examined_count"]),
        _candidate(head, "l_") if head["l_message_id"] is not None else None,
        exclusions,
    )
