"""The scan's WHERE clause beyond the workspace and the position: the query's text condition
and one conjunct for each filter. Each is `and`ed on, never `or`ed: a filter only removes rows
(the package's invariant)."""

from __future__ import annotations

from collections.abc import Sequence

from app.data.eligibility import ALLOWED_FROM_CTE, eligible
from app.data.message_search.inputs import AuthorSet, CandidateQuery, ScopeSet
from app.data.params import Params

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


def text_and_filters(q: CandidateQuery, p: Params) -> tuple[str, list[str]]:
    """The query's text condition, and the filters' conjuncts, each its own `and` term."""
    text = text_condition(q.include, q.exclude, p)
    return text, filters_of(q, p)


def filters_of(q: CandidateQuery, p: Params) -> list[str]:
    """The filters' conjuncts, each its own `and` term."""
    filters = []
    scope = None
    if q.scope is not None:
        scope = p.add(q.scope.scope_id, "bigint")
        filters.append(f"d.scope_id = {scope}")
    if q.author is not None:
        actor = p.add(q.author.actor_id, "bigint")
        filters.append(f"d.author_id in ({_AUTHOR_SETS[q.author.kind].format(p=actor)})")
    filters += [_author_set_sql(a, p) for a in q.authors]
    filters += [c for c in (_scope_set_sql(s, p) for s in q.scopes) if c is not None]
    # The document's copy of the message's created_at (migrations/012), checked against the
    # message row (app.data.message_search.verdict) like scope_id and author_id.
    if q.since is not None:
        filters.append(f"d.created_at >= {p.add(q.since, 'timestamptz')}")
    if q.until is not None:
        filters.append(f"d.created_at < {p.add(q.until, 'timestamptz')}")
    filters += _named_conditions(q, p, scope)
    return filters


def text_condition(include: Sequence[str], exclude: Sequence[str], p: Params) -> str:
    """The words' condition on a search document `d` (live push's sift applies it alone)."""
    if include:
        return (
            f"d.tsv @@ recall_search_tsquery({p.add(list(include), 'text[]')},"
            f" {p.add(list(exclude), 'text[]')}, false)"
        )
    if exclude:
        # Operators and excluded words only: no document containing any of them (a word that
        # folds to nothing, a stop word, excludes nothing).
        return (
            f"coalesce(not d.tsv @@ recall_search_tsquery({p.add(list(exclude), 'text[]')},"
            " '{}', true), true)"
        )
    return "true"


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
    neither keeps the bounded scan and its one workspace-wide bit (docs/api.md, Cursors).
    `scope` is the scopeId's placeholder (cast), if the query has one."""
    viewer = q.viewer
    if viewer is None or not (scope or q.author or q.authors or q.scopes):
        return []
    conditions = []
    if scope is not None:
        listable = viewer.scope_predicate("ls", p.add(viewer.actor_id))
        conditions.append(
            f"exists (select 1 from scopes ls where ls.workspace_id = $1"
            f" and ls.id = {scope} and {listable})"
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
        return f"{column} = {p.add(ids[0], 'bigint')}"
    return f"{column} = any({p.add(list(ids), 'bigint[]')})"


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
