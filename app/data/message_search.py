"""The statements of messageSearch: the bounded, authorized candidate scan and the highlights.

Invariant: every filter only removes rows. The scan starts from the viewer's own workspace and
from the documents whose vector matches the query; the position, scope, author and time (since,
until) conditions are further conjuncts of that WHERE clause, and eligibility (evidence, audience, lineage — the shared
fragments of app.data.eligibility, never re-implemented here) is decided per candidate before a
candidate can become a result. Nothing here ORs a condition in, so no filter and no cursor can
widen what the person may read: a filter on another person's DM, another workspace's scope or a
nonexistent author narrows the result to nothing, exactly like a filter on an unknown id.

The scan is bounded: at most `budget` candidates (documents matching text and every filter)
are examined per request, newest first. The rows returned are ids, order keys and the first
eligibility rule each candidate fails — never text; bodies are hydrated by the loaders, which
authorize again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    REPORT_ALLOWED_AUDIENCES,
    allowed_audiences_cte,
    audience_allows,
    has_evidence,
    lineage_allows,
)
from app.data.params import Params
from app.data.session import Session

# The private-use characters that mark highlights in ts_headline output. Bodies may contain
# them too, so they are replaced in the highlighted copy by U+FFFD first: both are one UTF-16
# unit, so offsets into the copy are offsets into the body.
START_MARK = "\ue000"
STOP_MARK = "\ue001"
_HEADLINE_OPTIONS = f"HighlightAll=true, StartSel={START_MARK}, StopSel={STOP_MARK}"


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


def _after_condition(after: After, p: Params) -> str:
    g = p.add(after.global_seq)
    if after.scope_id is None:
        return f"d.global_seq < {g}"
    s, q, m = p.add(after.scope_id), p.add(after.seq), p.add(after.message_id)
    # (global_seq DESC, scope_id ASC, seq DESC, message_id ASC), strictly after; the leading
    # `<=` lets the recency index seek to the position.
    return (
        f"d.global_seq <= {g} and (d.global_seq < {g} or (d.global_seq = {g} and"
        f" (d.scope_id > {s} or (d.scope_id = {s} and (d.seq < {q} or"
        f" (d.seq = {q} and d.message_id > {m}))))))"
    )


@dataclass(frozen=True, slots=True)
class CandidateQuery:
    """What a scan looks for: a reader's destination ($1-$4), the query's terms, the filters.

    since (inclusive) and until (exclusive) bound the message's created_at; both are aware
    datetimes (app.search.message_search normalizes them to UTC)."""

    destination: tuple[int, str, int, list[int]]
    include: Sequence[str]
    exclude: Sequence[str]
    scope: ScopeCondition | None = None
    author: AuthorCondition | None = None
    since: datetime | None = None
    until: datetime | None = None


async def scan_candidates(
    db: Session, q: CandidateQuery, *, after: After | None, budget: int, walk: int | None = None
) -> list[Candidate]:
    """Up to `budget` candidates in search order, each with its eligibility verdict.

    The pool plans every statement for its actual parameters (app.db), so the folded tsquery
    picks the GIN or the recency index by how selective it is. A query that is only stop
    words has a NULL tsquery, which matches no document (`@@ NULL` is not true).

    With `walk`, only the newest `walk` documents (after the position) are considered, read
    in order through the recency index whatever the planner estimates (see scan_for_page).
    """
    destination, scope, author = q.destination, q.scope, q.author
    p = Params(destination)
    where = [
        "d.workspace_id = $1",
        f"d.tsv @@ recall_search_tsquery({p.add(list(q.include))}::text[],"
        f" {p.add(list(q.exclude))}::text[], false)",
    ]
    source = "search_documents d"
    if after is not None:
        where.append(_after_condition(after, p))
    if walk is not None:
        start = f" and {_after_condition(after, p)}" if after is not None else ""
        source = (
            f"(select d.* from search_documents d where d.workspace_id = $1{start}"
            f" order by d.global_seq desc, d.scope_id, d.seq desc, d.message_id"
            f" limit {p.add(walk)}) d"
        )
    if scope is not None:
        where.append(f"d.scope_id = {p.add(scope.scope_id)}::bigint")
    if author is not None:
        actor = p.add(author.actor_id)
        where.append(f"d.author_id in ({_AUTHOR_SETS[author.kind].format(p=actor + '::bigint')})")
    # The document's copy of the message's created_at (migrations/012), checked against the
    # message row below like scope_id and author_id.
    if q.since is not None:
        where.append(f"d.created_at >= {p.add(q.since)}::timestamptz")
    if q.until is not None:
        where.append(f"d.created_at < {p.add(q.until)}::timestamptz")
    limit = p.add(budget)
    known = db.allowed_audiences(destination)
    allowed = allowed_audiences_cte(p.add(known) if known is not None else None)
    # The verdict is eligible()'s conjuncts in eligible()'s order, as a CASE so the audit can
    # count each candidate under the first rule that removed it. NULL fails closed (coalesce),
    # and so does a document that disagrees with its message row (m.id is null).
    sql = f"""
        with {allowed},
        candidates as materialized (
            select d.message_id, d.global_seq, d.scope_id, d.seq, d.author_id, d.created_at
            from {source}
            where {" and ".join(where)}
            order by d.global_seq desc, d.scope_id, d.seq desc, d.message_id
            limit {limit}
        )
        select c.message_id, c.global_seq, c.scope_id, c.seq,
               case
                   when m.id is null or not coalesce({has_evidence("m")}, false)
                       then 'no_evidence'
                   when not coalesce({audience_allows("m", ALLOWED_FROM_CTE)}, false) then 'audience'
                   when not coalesce({lineage_allows("m", ALLOWED_FROM_CTE)}, false) then 'lineage'
               end as excluded_by,
               {REPORT_ALLOWED_AUDIENCES}
        from candidates c
        -- By primary key (OFFSET 0 keeps it that lookup: with every column below in the join
        -- condition the planner would pick whichever index covers most of them and scan an
        -- author's messages in a scope), then checked against the document.
        left join lateral (
            select m.id, m.scope_id, m.author_id, m.global_seq, m.seq, m.created_at, m.evidence,
                   m.deleted, m.audience_id, m.has_provenance, m.lineage_audience_ids,
                   m.lineage_denied
            from messages m where m.workspace_id = $1 and m.id = c.message_id
            offset 0
        ) m on m.scope_id = c.scope_id and m.author_id = c.author_id
            and m.global_seq = c.global_seq and m.seq = c.seq and m.created_at = c.created_at
        order by c.global_seq desc, c.scope_id, c.seq desc, c.message_id
    """
    rows = await db.fetch(sql, *p.values)
    db.remember_allowed_audiences(destination, rows)
    return [
        Candidate(
            int(r["message_id"]),
            int(r["global_seq"]),
            int(r["scope_id"]),
            int(r["seq"]),
            r["excluded_by"],
        )
        for r in rows
    ]


# Documents read newest first before a query of several lexemes falls back to the planner.
WALK = 10_000


def _several_lexemes(include: Sequence[str]) -> bool:
    """Queries the planner underestimates: it multiplies the selectivities of a query's
    lexemes, but words searched together (a phrase, a Chinese word's bigrams, "acme migration")
    occur together. At 1M messages it took a phrase with 4,791 matches for 90 rows and fetched
    every match from the GIN index (~15 ms), where reading the newest documents finds a page's
    candidates in ~3 ms."""
    return len(include) > 1 or any(" " in t or not t.isascii() for t in include)


async def scan_for_page(
    db: Session, q: CandidateQuery, *, after: After | None, first: int, budget: int
) -> list[Candidate]:
    """The candidates a page of `first` needs, never more than `budget` of them.

    Most pages fill from their first few candidates, so the scan probes a little past what a
    full page needs (`2 * first + 1`: a page and the one eligible match that proves a next one,
    with room for some invisible ones) and continues to the budget only when the probe came
    back short of that. A query of several lexemes probes by reading the newest WALK documents
    first, and hands the rest of the scan to the planner only if they held too few matches.
    Either way the candidates, their order and their verdicts are exactly those of one scan of
    `budget` in search order, cut where the page is decided."""
    probe = min(budget, 2 * first + 1)

    async def scan(start: After | None, n: int, walk: int | None = None) -> list[Candidate]:
        return await scan_candidates(db, q, after=start, budget=n, walk=walk)

    def past(found: list[Candidate]) -> After | None:
        last = found[-1] if found else None
        return After(last.global_seq, last.scope_id, last.seq, last.message_id) if last else after

    if _several_lexemes(q.include):
        found = await scan(after, probe, WALK)
        if len(found) < probe:
            # The newest documents held too few matches; the rest of them match nothing more,
            # so the planner's scan continues right after the last match found.
            return found + await scan(past(found), budget - len(found))
    else:
        found = await scan(after, probe)
    eligible = sum(c.excluded_by is None for c in found)
    if eligible > first or len(found) < probe or probe == budget:
        return found
    return found + await scan(past(found), budget - probe)


async def headlines(db: Session, bodies: Sequence[str], include: Sequence[str]) -> list[str | None]:
    """Each body with the English part of the query's terms marked by START_MARK/STOP_MARK
    (stems and phrases as PostgreSQL matched them); None where nothing English can match.
    One statement for the whole page."""
    if not bodies:
        return []
    rows = await db.fetch(
        """
        select ts_headline('english', translate(b.body, $3, $4), q.q, $5) as marked
        from unnest($1::text[]) with ordinality as b(body, ord)
        cross join (
            select recall_search_tsquery(
                array(select recall_without_cjk(t) from unnest($2::text[]) as t), '{}', true
            ) as q
        ) as q
        order by b.ord
        """,
        list(bodies),
        list(include),
        START_MARK + STOP_MARK,
        "\ufffd\ufffd",
        _HEADLINE_OPTIONS,
    )
    return [r["marked"] for r in rows]
