"""The one predicate set that decides what a reader may see (docs/design.md, Eligibility).

This module is the definition of every rule of eligibility: allows(origin, destination), the
audiences a destination allows, evidence, the recursive lineage walk with its caps, and an
agent's perspective. Every surface — messageSearch, historySearch, neighbors, node lookups,
transcripts, the pre-delivery recheck — and the lineage cache (app.data.lineage) build their
SQL from the fragments here, so a fix here is the fix that is served. The database holds no
copy (migrations/027 dropped the reference functions of 002 and 019 that requests never
ran): a fragment is SQL text inlined into each statement, because a table-reading SQL function
cannot run inside a statement Citus routes to one shard (docs/scale.md).

Parameter convention: every statement that uses these fragments binds the destination as its
first four parameters: $1 workspace id, $2 destination kind, $3 namespace id, $4 reader ids;
every further value through app.data.params.Params, never a hand-numbered $5.

Linked identities (docs/identity.md): a live link between members A and B (two namespaces of one
person; live: approved by its starter and not revoked, live_link) opens exactly one path, and it is
part of the allowed audiences below, not a filter beside them: a destination with exactly one
reader B (members or external) also allows the audiences members(ns_A, [A]) — A alone, in A's own
namespace — of every A with a live link to B. Two-reader audiences on either side, another
namespace's workspace audiences and every other reader are untouched; lineage summaries are
compared with the same set, so each source of a reply is judged by the same rule. The set is
computed per statement or once per request (Session.allowed_audiences), never longer: links are
checked live.

Invariant: each fragment is a conjunct of a WHERE clause. It can only remove rows; nothing here
(or in any filter built on top of it) ever adds a row to what the reader could otherwise see.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Destination:
    """Where text would be shown: workspace(ns), members(ns, readers) or external(ns, readers)."""

    workspace_id: int
    kind: str
    namespace_id: int
    readers: tuple[int, ...]

    def params(self) -> tuple[int, str, int, list[int]]:
        return (self.workspace_id, self.kind, self.namespace_id, list(self.readers))

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "namespace_id": self.namespace_id, "readers": list(self.readers)}


def person_destination(workspace_id: int, namespace_id: int, member_id: int) -> Destination:
    """A person searching is the destination members(ns, [that person])."""
    return Destination(workspace_id, "members", namespace_id, (member_id,))


def allows(origin: str, dest_kind: str, dest_ns: str, dest_readers: str) -> str:
    """allows(origin, destination) as a SQL boolean: `origin` is an audiences row's alias (its
    kind, namespace_id and readers), the destination three SQL expressions. A destination is
    workspace(ns), members(ns, readers) or external(ns, readers); anything unknown (a null, an
    unknown kind) is false.

    - public: shown anywhere;
    - workspace(ns) (a public channel): the same namespace's workspace or member audiences;
      never an externally shared room, never another namespace;
    - members(ns, R) (private text): only to a non-empty reader set D ⊆ R in the same
      namespace, a members or an external destination (the latter by its named readers)."""
    o = origin
    return (
        f"coalesce(case {o}.kind"
        " when 'public' then true"
        f" when 'workspace' then {dest_kind} in ('workspace', 'members')"
        f" and {dest_ns} = {o}.namespace_id"
        f" when 'members' then {dest_kind} in ('members', 'external')"
        f" and {dest_ns} = {o}.namespace_id and cardinality({dest_readers}) > 0"
        f" and {dest_readers} <@ {o}.readers"
        " else false end, false)"
    )


_ALLOWS_DESTINATION = allows("a", "$2::text", "$3::bigint", "$4::bigint[]")


def live_link(link: str) -> str:
    """A link (an identity_links alias) is live: the starter approved the identity that
    confirmed it, and nobody revoked it. A pending link (confirmed, not yet approved) opens
    nothing: a code read over a shoulder or phished links nobody until its starter approves
    the confirmer by name (docs/identity.md)."""
    return f"({link}.revoked_at is null and {link}.approved_at is not null)"


def _linked_audiences(reader: str, other: str) -> str:
    """The one path a live identity link opens (docs/identity.md): for a destination with
    exactly one reader B ($4 = [B], in namespace $3), members or external, the audiences
    members(ns_A, [A]) of every member A with a live (approved, unrevoked: live_link) link to
    B, where ns_A is A's namespace.
    `reader` and `other` name the link's columns for B's side and A's (a link is stored once,
    starter and confirmer, and read from either side). Both tables are filtered by $1."""
    return (
        " select a.id from identity_links l"
        f" join audiences a on a.workspace_id = $1 and a.kind = 'members'"
        f" and coalesce(a.namespace_id, 0) = l.namespace_{other}"
        f" and a.readers = array[l.member_{other}]"
        " where $2::text in ('members', 'external') and cardinality($4::bigint[]) = 1"
        f" and l.workspace_id = $1 and l.member_{reader} = ($4::bigint[])[1]"
        f" and l.namespace_{reader} = $3::bigint and {live_link('l')}"
    )


# The ids of the workspace's audiences that allow the destination ($1-$4). Audiences are few
# (one per channel, DM and memory reader set), so a statement computes this set once and tests
# `audience_id = any(...)` per row instead of deciding per message. Three branches: the
# workspace's public and workspace audiences, and the member audiences whose readers contain
# the destination's (each an index-friendly superset narrowed by allows()); and, for a
# destination of exactly one reader, the single-reader audiences of that reader's live linked
# identities (_linked_audiences: nothing else a link could open is in this set). Computed per
# statement, or once per request (Session.allowed_audiences): a link is checked live on every
# request, so a revoked one opens nothing from the next request on.
ALLOWED_AUDIENCE_IDS = (
    "(select coalesce(array_agg(al.id), '{}') from ("
    " select a.id from audiences a"
    " where a.workspace_id = $1 and a.kind in ('public', 'workspace')"
    f" and {_ALLOWS_DESTINATION}"
    " union all"
    " select a.id from audiences a"
    " where $2::text in ('members', 'external') and cardinality($4::bigint[]) > 0"
    " and a.workspace_id = $1 and a.kind = 'members' and a.readers @> $4::bigint[]"
    f" and {_ALLOWS_DESTINATION}"
    " union all"
    f"{_linked_audiences('b', 'a')}"
    " union all"
    f"{_linked_audiences('a', 'b')}"
    ") al)::bigint[]"  # outside the parentheses: `= any(...)` then takes it as an array
)

# The allowed audiences are computed once per reference (an InitPlan), not once per row. A
# statement that references them several times can compute them once, in a CTE defined as
# ALLOWED_AUDIENCES_CTE, and pass `allowed=ALLOWED_FROM_CTE` to the fragments below.
_ALLOWED_AUDIENCES = ALLOWED_AUDIENCE_IDS
ALLOWED_AUDIENCES_CTE = f"allowed_audiences as materialized (select {ALLOWED_AUDIENCE_IDS} as ids)"
ALLOWED_FROM_CTE = "(select ids from allowed_audiences)::bigint[]"
# A statement that computed them can hand them back (as this column of one row), so that the
# request's later statements take them as a parameter (app.data.session keeps them for the
# request) instead of computing them again: ~0.8 ms each at 4,000 audiences.
REPORT_ALLOWED_AUDIENCES = (
    "case when row_number() over () = 1 then (select ids from allowed_audiences) end"
    " as allowed_audience_ids"
)


def allowed_audiences_cte(known: str | None) -> str:
    """ALLOWED_AUDIENCES_CTE, taking the ids from `known` — a parameter holding what this
    request already computed for the same destination (Session.allowed_audiences), or NULL —
    when it holds them."""
    if known is None:
        return ALLOWED_AUDIENCES_CTE
    return (
        f"allowed_audiences as materialized (select coalesce({known}::bigint[],"
        f" {ALLOWED_AUDIENCE_IDS}) as ids)"
    )


def has_evidence(m: str) -> str:
    """Source evidence exists, and still stands: a deleted message (docs/changes.md) is evidence
    of nothing, so no surface shows it. Unknown provenance fails closed."""
    return f"({m}.evidence and not {m}.deleted)"


def audience_allows(m: str, allowed: str = _ALLOWED_AUDIENCES) -> str:
    """allows(origin audience of the message, destination)."""
    return f"{m}.audience_id = any({allowed})"


# The caps of the lineage walk (docs/design.md, Lineage): more input messages at once, more
# nodes in the lineage (messages and memories), or more sources cited by one message deny the
# whole read.
MAX_INPUTS = 501
MAX_NODES = 5000
MAX_SOURCES_PER_NODE = 500


def lineage_summary(roots: str) -> str:
    """The lineage walk of the messages `roots` (a SQL bigint[] expression), as a subquery of
    one row: `audience_ids`, the audiences of every message and memory in their recursive
    provenance (the roots included), and `denied`, true when a cap overflowed or a node is
    unknown (fail closed). Every table is filtered by $1, the workspace, explicitly. The walk
    is evaluated lazily: the LIMIT stops it one node past the cap, so an enormous lineage costs
    no more than the cap to refuse. Each node's sources are counted by one probe of its own
    (LATERAL, LIMIT one past the cap): as a join over `nodes`, the planner, taking the walk for
    ~200 rows, read every edge of the workspace once per walk, which made the importer's
    summaries quadratic in the workspace's replies. The memories the nodes used are probed per
    node the same way: joined to every memory edge, the planner hashed all of them once per
    walk (at 1M messages, 0.14 ms of each walk's 0.17)."""
    return f"""(
        with recursive walk(id) as (
            select distinct r from unnest({roots}) as r
            union
            select x.source_message_id
            from walk w
            cross join lateral (
                select s.source_message_id from message_sources s
                where s.workspace_id = $1 and s.message_id = w.id
                offset 0
            ) x
        ),
        nodes as materialized (select id from walk limit {MAX_NODES + 1}),
        node_rows as materialized (
            select nm.id, nm.audience_id from messages nm
            where nm.workspace_id = $1 and nm.id in (select id from nodes)
        ),
        used_memories as materialized (
            select distinct mem.id, mem.audience_id
            from nodes n
            cross join lateral (
                select ms.memory_id from message_memory_sources ms
                where ms.workspace_id = $1 and ms.message_id = n.id
                offset 0
            ) x
            join memories mem on mem.workspace_id = $1 and mem.id = x.memory_id
        )
        select
            coalesce((select array_agg(distinct a) from (
                select audience_id as a from node_rows
                union all
                select audience_id from used_memories
            ) all_audiences), '{{}}')::bigint[] as audience_ids,
            coalesce(cardinality({roots}) > {MAX_INPUTS}, true)
            or (select count(*) from nodes) > {MAX_NODES}
            or (select count(*) from node_rows) <> (select count(*) from nodes)
            or exists (
                select 1 from nodes n
                cross join lateral (
                    select count(*) as sources from (
                        select 1 from message_sources s
                        where s.workspace_id = $1 and s.message_id = n.id
                        limit {MAX_SOURCES_PER_NODE + 1}
                    ) capped
                ) fan
                where fan.sources > {MAX_SOURCES_PER_NODE}
            )
            or (select count(*) from nodes) + (select count(*) from used_memories) > {MAX_NODES}
                as denied
    )"""


def lineage_walk_allows(roots: str, allowed: str = _ALLOWED_AUDIENCES) -> str:
    """The lineage of `roots` is allowed: not denied, and every audience in it allowed."""
    return (
        f"(select not lw.denied and lw.audience_ids <@ {allowed} from {lineage_summary(roots)} lw)"
    )


def live_lineage_allows(m: str, allowed: str = _ALLOWED_AUDIENCES) -> str:
    """The lineage walk of one message, as a correlated subquery (the summary is missing)."""
    return lineage_walk_allows(f"array[{m}.id]", allowed)


def lineage_allows(m: str, allowed: str = _ALLOWED_AUDIENCES, *, complete: bool = False) -> str:
    """Every message and memory in the message's recursive provenance is allowed too.

    From the cached lineage summary when there is one (migrations/004: it can be missing, never
    stale), else by the live walk. CASE fixes the evaluation order: the walk runs only for
    messages with provenance and no cache.

    `complete`: the request's first statement found no message of the workspace with
    provenance and a missing summary (Reader.lineage_complete), so a missing one is denied
    instead of walked. Every write the app makes that forgets a summary fills it again in its
    own transaction, so a committed workspace normally has none missing; one that went missing
    since (outside SQL) is not shown rather than walked: fail closed, never wider. It spares
    the statement the walk's recursive subquery, which cost a messageSearch page ~2 ms of
    planning and ~1 ms of executor set-up even where it never ran (docs/performance.md)."""
    missing = "false" if complete else live_lineage_allows(m, allowed)
    return (
        f"(case when not {m}.has_provenance then true"
        f" when {m}.lineage_audience_ids is null"
        f" then {missing}"
        f" else not {m}.lineage_denied and {m}.lineage_audience_ids <@ {allowed} end)"
    )


def eligible(m: str, allowed: str = _ALLOWED_AUDIENCES, *, complete: bool = False) -> str:
    """eligible(message, destination): evidence ∧ audience ∧ lineage, cheapest first;
    `complete` as for lineage_allows."""
    return (
        f"({has_evidence(m)} and {audience_allows(m, allowed)}"
        f" and {lineage_allows(m, allowed, complete=complete)})"
    )


def eligible_unless_deleted(
    m: str, allowed: str = _ALLOWED_AUDIENCES, *, complete: bool = False
) -> str:
    """eligible() with the deletion set aside: the message would be eligible had it not been
    deleted (its evidence, audience and lineage allow it). Live push (app.data.live_admission)
    tells exactly these readers that a deleted message is gone, by its id alone; it is never a
    reason to show anything."""
    return (
        f"({m}.evidence and {audience_allows(m, allowed)}"
        f" and {lineage_allows(m, allowed, complete=complete)})"
    )


def in_perspective(scope_id_expr: str, agent_param: str) -> str:
    """An agent's perspective: only scopes it is a member of (a thread: its parent's members)."""
    return (
        "exists (select 1 from scopes ps join scope_members pm"
        " on pm.workspace_id = $1 and pm.scope_id = coalesce(ps.parent_id, ps.id)"
        f" where ps.workspace_id = $1 and ps.id = {scope_id_expr} and pm.actor_id = {agent_param})"
    )


def perspective_conversations(workspace_expr: str, agent_expr: str) -> str:
    """The conversations (channels and DMs) an agent is a member of, as an array: a superset of
    the root scopes of in_perspective's scopes, for narrowing an index scan (a search document's
    root_scope_id). It never decides on its own: in_perspective is checked on every row."""
    return (
        f"array(select pm.scope_id from scope_members pm"
        f" where pm.workspace_id = {workspace_expr} and pm.actor_id = {agent_expr})"
    )
