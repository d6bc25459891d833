"""Turns: an agent's searches and replies bound to a scope, a requester and a destination.

A turn is created once (by `startTurn` or `recall turn`) and never changes. Everything a search
or a reply needs to know about who is asking and where text will be shown is read from here,
never from request arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from app.data.audit import SearchAudit
from app.data.eligibility import (
    Destination,
    eligible,
    in_perspective,
    perspective_conversations,
)
from app.data.executor import Executor
from app.data.params import Params
from app.data.session import Session


@dataclass(frozen=True, slots=True)
class TurnRow:
    id: int
    workspace_id: int
    agent_id: int
    scope_id: int
    # The scope's conversation: a thread's parent, else the scope itself.
    conversation_id: int
    requester_id: int
    trigger_message_id: int | None
    created_at: datetime
    destination: Destination
    # The ledger so far (at most 400 ids): what this turn's searches already showed.
    evidence: frozenset[int]
    # Still a member of the turn's scope now (membership may have changed since the start).
    agent_in_scope: bool
    # The agent's conversations now: narrows historySearch's scan of the sidecar.
    conversations: tuple[int, ...]
    # The requester is not deactivated now: a deactivated member reads nothing, through an
    # agent neither (the pre-delivery recheck reads it again under the turn's lock).
    requester_active: bool = True


@dataclass(frozen=True, slots=True)
class TurnTarget:
    """What startTurn checks before it writes anything."""

    scope_exists: bool
    agent_in_scope: bool
    requester_is_member: bool
    requester_deactivated: bool
    trigger_seq: int | None
    destination: Destination | None
    # The scope's destination audience (the row `destination` describes): the turn's.
    destination_audience_id: int | None


def _turn(workspace_id: int, turn_id: int, agent_id: int) -> tuple[str, list[object]]:
    """The statement reading `agent_id`'s turn (as _turn_row takes it), and its values."""
    p = Params([workspace_id])  # $1: the workspace, as the perspective fragments read it
    turn, agent = p.add(turn_id), p.add(agent_id)
    sql = f"""
select {in_perspective("t.scope_id", agent)} as agent_in_scope, t.id, t.workspace_id, t.agent_id, t.scope_id, coalesce(s.parent_id, s.id) as conversation_id,
       t.requester_id, t.trigger_message_id, t.created_at,
       a.kind as dest_kind, a.namespace_id as dest_ns, a.readers as dest_readers,
       array(select e.message_id from turn_evidence e
             where e.workspace_id = $1 and e.turn_id = t.id) as evidence,
       {perspective_conversations("$1", "t.agent_id")} as conversations,
       rq.deactivated_at is null as requester_active
from turns t
join actors rq on rq.workspace_id = $1 and rq.id = t.requester_id
join scopes s on s.workspace_id = $1 and s.id = t.scope_id
join audiences a on a.workspace_id = $1 and a.id = t.destination_audience_id
where t.workspace_id = $1 and t.id = {turn} and t.agent_id = {agent}
"""
    return sql, p.values


def _turn_row(r: asyncpg.Record) -> TurnRow:
    destination = Destination(
        r["workspace_id"], r["dest_kind"], r["dest_ns"], tuple(r["dest_readers"])
    )
    return TurnRow(
        r["id"],
        r["workspace_id"],
        r["agent_id"],
        r["scope_id"],
        r["conversation_id"],
        r["requester_id"],
        r["trigger_message_id"],
        r["created_at"],
        destination,
        frozenset(r["evidence"]),
        r["agent_in_scope"],
        tuple(r["conversations"]),
        r["requester_active"],
    )


async def turn_by_id(
    db: Executor, workspace_id: int, turn_id: int, agent_id: int
) -> TurnRow | None:
    sql, values = _turn(workspace_id, turn_id, agent_id)
    row = await db.fetchrow(sql, *values)
    return _turn_row(row) if row else None


async def lock_turn(db: Session, workspace_id: int, turn_id: int, agent_id: int) -> TurnRow | None:
    """The turn, row-locked until the end of the transaction: searches and replies of one turn
    run one at a time, so the evidence ceiling cannot be overrun by two concurrent searches.
    The requester's row is share-locked: a deactivation in flight commits first and is seen
    (requester_active), so a reply is never delivered to someone deactivated meanwhile."""
    sql, values = _turn(workspace_id, turn_id, agent_id)
    row = await db.fetchrow(sql + " for update of t for share of rq", *values)
    return _turn_row(row) if row else None


async def turn_target(
    db: Executor,
    workspace_id: int,
    agent_id: int,
    scope_id: int,
    requester_id: int,
    trigger_message_id: int | None,
) -> TurnTarget:
    p = Params([workspace_id])  # $1: the workspace, as the perspective fragment reads it
    agent, scope = p.add(agent_id), p.add(scope_id)
    requester, trigger = p.add(requester_id), p.add(trigger_message_id)
    row = await db.fetchrow(
        f"""
        select s.id is not null as scope_exists,
               s.id is not null and {in_perspective("s.id", agent)} as agent_in_scope,
               exists (select 1 from actors r
                       where r.workspace_id = $1 and r.id = {requester} and r.kind = 'member')
                   as requester_ok,
               exists (select 1 from actors r
                       where r.workspace_id = $1 and r.id = {requester} and r.kind = 'member'
                         and r.deactivated_at is not null) as requester_deactivated,
               (select tm.seq from messages tm
                where tm.workspace_id = $1 and tm.id = {trigger} and tm.scope_id = s.id)
                   as trigger_seq,
               a.id as dest_id, a.kind as dest_kind, a.namespace_id as dest_ns,
               a.readers as dest_readers
        from (select 1) one
        left join scopes s on s.workspace_id = $1 and s.id = {scope}
        left join audiences a on a.workspace_id = $1 and a.id = s.destination_audience_id
        """,
        *p.values,
    )
    assert row is not None
    destination = None
    if row["dest_kind"] is not None and row["dest_ns"] is not None:
        destination = Destination(
            workspace_id, row["dest_kind"], row["dest_ns"], tuple(row["dest_readers"])
        )
    return TurnTarget(
        row["scope_exists"],
        row["agent_in_scope"],
        row["requester_ok"],
        row["requester_deactivated"],
        row["trigger_seq"],
        destination,
        row["dest_id"],
    )


async def insert_turn(
    db: Executor,
    destination: Destination,
    *,
    destination_audience_id: int,
    agent_id: int,
    scope_id: int,
    requester_id: int,
    trigger_message_id: int | None,
    trigger_seq: int | None,
    window: int,
) -> int:
    """Write the turn and its loaded window: the last `window` messages of the scope before the
    trigger (or the latest). The window is what the runtime puts in the prompt, so it holds
    only messages eligible for the turn's destination, like any other read.

    Two statements, in the caller's transaction: on Citus an INSERT inside a CTE is not routed
    to a shard, and the turn's id would be sent to every worker (docs/scale.md, A worker
    lost); each INSERT alone names the workspace and runs on its shard group's worker."""
    turn_id: int = await db.fetchval(
        "insert into turns (workspace_id, agent_id, scope_id, requester_id, trigger_message_id,"
        " window_size, destination_audience_id) values ($1, $2, $3, $4, $5, $6, $7) returning id",
        destination.workspace_id,
        agent_id,
        scope_id,
        requester_id,
        trigger_message_id,
        window,
        destination_audience_id,
    )
    if window == 0:
        return turn_id
    p = Params(destination.params())  # $1-$4, as the eligibility fragments read them
    agent, scope = p.add(agent_id), p.add(scope_id)
    before, size = p.add(trigger_seq, "integer"), p.add(window)
    await db.execute(
        f"""
        insert into turn_window (workspace_id, turn_id, message_id)
        -- m.workspace_id, not $1: Citus then runs the INSERT ... SELECT on the shard as it is.
        select m.workspace_id, {p.add(turn_id)}, m.id
        from messages m
        where m.workspace_id = $1 and m.scope_id = {scope}
          and ({before} is null or m.seq < {before})
          and {eligible("m")} and {in_perspective("m.scope_id", agent)}
        order by m.seq desc
        limit {size}
        """,
        *p.values,
    )
    return turn_id


@dataclass(frozen=True, slots=True)
class TurnKeys:
    """Fixture keys resolved to ids for `recall turn` (None where a key names nothing)."""

    workspace_id: int | None
    agent_id: int | None
    scope_id: int | None
    requester_id: int | None
    trigger_id: int | None


async def ids_by_keys(
    db: Executor, workspace: str, agent: str, scope: str, requester: str, trigger: str | None
) -> TurnKeys:
    # The workspace first (workspace_keys, a reference table on Citus), so that the keys below
    # are looked up on its shard only.
    ws = await db.fetchval("select workspace_id from workspace_keys where key = $1", workspace)
    if ws is None:
        return TurnKeys(None, None, None, None, None)
    row = await db.fetchrow(
        """
        select $1::bigint as ws,
            (select ag.id from actors ag
             where ag.workspace_id = $1 and ag.key = $2 and ag.kind = 'agent') as agent,
            (select s.id from scopes s where s.workspace_id = $1 and s.key = $3) as scope,
            (select r.id from actors r
             where r.workspace_id = $1 and r.key = $4 and r.kind = 'member') as requester,
            (select m.id from messages m where m.workspace_id = $1 and m.key = $5) as trigger
        """,
        ws,
        agent,
        scope,
        requester,
        trigger,
    )
    assert row is not None
    return TurnKeys(row["ws"], row["agent"], row["scope"], row["requester"], row["trigger"])


async def evidence_ids(db: Session, workspace_id: int, turn_id: int) -> list[int]:
    """The turn's ledger, in the order messages joined it."""
    rows = await db.fetch(
        "select message_id from turn_evidence where workspace_id = $1 and turn_id = $2"
        " order by added_at, message_id",
        workspace_id,
        turn_id,
    )
    return [r["message_id"] for r in rows]


async def lock_turn_row(db: Session, workspace_id: int, turn_id: int, agent_id: int) -> bool:
    """Lock the turn's row until the end of the transaction; False if there is no such turn."""
    found = await db.fetchval(
        "select t.id from turns t where t.workspace_id = $1 and t.id = $2 and t.agent_id = $3"
        " for update",
        workspace_id,
        turn_id,
        agent_id,
    )
    return found is not None


async def record_shown(
    db: Session,
    *,
    workspace_id: int,
    turn_id: int,
    agent_id: int,
    version: str,
    message_ids: Sequence[int],
    audit: SearchAudit,
    selected: Sequence[Mapping[str, Any]],
    exclusions: Mapping[str, int],
    weights: tuple[str, Mapping[str, Any]] | None = None,
) -> bool:
    """What a historySearch showed joins the turn's ledger, and its audit row is written (and
    the `weights` it ranked with frozen for its binding, if given), all or nothing, if the
    turn's row is still at `version` (its xmin when the search read the ledger); False, writing
    nothing, if another search of the turn recorded in between. One statement, one round trip:
    the function of migrations/035 (`recall_record_shown`), whose statements each name the
    workspace, so that on Citus they run on its shard group's worker alone (docs/scale.md, A
    worker lost). Its UPDATE of the turn's row is the version check: it waits for a concurrent
    recording and then re-checks the version on the row that one committed (READ COMMITTED's
    recheck), where a SELECT ... FOR UPDATE would go on with a ledger read before the wait."""
    binding, ranked_with = weights if weights is not None else (None, None)
    recorded: bool = await db.fetchval(
        """
        select recall_record_shown(
            p_workspace => $1, p_turn => $2, p_agent => $3, p_version => $4,
            p_message_ids => $5::bigint[], p_binding => $6::text, p_weights => $7::jsonb,
            p_surface => $8, p_actor => $9, p_audit_turn => $10::bigint,
            p_query_digest => $11, p_filters => $12::jsonb, p_destination => $13::jsonb,
            p_selected => $14::jsonb, p_exclusions => $15::jsonb)
        """,
        workspace_id,
        turn_id,
        agent_id,
        version,
        list(message_ids),
        binding,
        dict(ranked_with) if ranked_with is not None else None,
        audit.surface,
        audit.actor_id,
        audit.turn_id,
        audit.query_digest,
        dict(audit.filters),
        dict(audit.destination),
        [dict(s) for s in selected],
        dict(exclusions),
    )
    return bool(recorded)


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    query_digest: str
    filters: dict[str, Any]
    selected: list[dict[str, Any]]
    exclusions: dict[str, int]
    created_at: datetime


async def audits_of_turn(db: Session, workspace_id: int, turn_id: int) -> list[AuditRow]:
    rows = await db.fetch(
        """
        select id, query_digest, filters, selected, exclusions, created_at from search_audit
        where workspace_id = $1 and turn_id = $2 and surface = 'history_search'
        order by created_at, id
        """,
        workspace_id,
        turn_id,
    )
    return [
        AuditRow(
            r["id"],
            r["query_digest"],
            r["filters"],
            r["selected"],
            r["exclusions"],
            r["created_at"],
        )
        for r in rows
    ]
