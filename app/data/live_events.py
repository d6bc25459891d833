"""Each workspace's live log (migrations/034, docs/live.md): what the writers record, in the
writing transaction, and what subscribers read back.

A writer appends its events last, just before it commits: taking the next positions locks the
workspace's live_positions row until the commit, so positions become visible in the order they
were given (a subscriber reading "after N" cannot see N+2 before N+1 commits). The NOTIFY that
wakes subscribers (`recall_live`, payload `workspace:position`, ids only) is sent by PostgreSQL
at commit, and never for a transaction that rolls back.

Every statement names its workspace as `workspace_id = $1` (Citus routes it to one shard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.data.executor import Executor

CHANNEL = "recall_live"

# What happened: a message posted, edited or deleted, or a change of who may read what.
POST, EDIT, DELETE, ACCESS = "post", "edit", "delete", "access"


@dataclass(frozen=True, slots=True)
class LiveEvent:
    position: int
    # None for an ACCESS event.
    message_id: int | None
    kind: str


async def record(
    db: Executor,
    workspace_id: int,
    events: Sequence[tuple[int | None, str]],
) -> int | None:
    """Append `events` (message id or None, kind) to the workspace's log inside the caller's
    transaction, and notify subscribers at its commit. Returns the last position (None when
    there was nothing to record)."""
    if not events:
        return None
    n = len(events)
    last: int = await db.fetchval(
        "insert into live_positions as lp (workspace_id, position) values ($1, $2)"
        " on conflict (workspace_id) do update set position = lp.position + $2"
        " returning position",
        workspace_id,
        n,
    )
    await db.execute(
        "insert into live_events (workspace_id, position, message_id, kind)"
        " select $1, $2 + t.ord, t.message_id, t.kind"
        " from unnest($3::bigint[], $4::text[]) with ordinality as t(message_id, kind, ord)",
        workspace_id,
        last - n,
        [e[0] for e in events],
        [e[1] for e in events],
    )
    await db.execute("select pg_notify($1, $2)", CHANNEL, f"{workspace_id}:{last}")
    return last


async def prune(db: Executor, retention_seconds: float) -> int:
    """Forget every workspace's events older than the retention (a resume from before them is
    refused: app.live.updates), one workspace per statement. Returns how many went. The
    workspaces are listed from workspace_keys, a reference table on Citus (one task, never a
    fan-out); each delete is routed to its workspace's shard."""
    workspaces = await db.fetch("select workspace_id from workspace_keys order by workspace_id")
    removed = 0
    for w in workspaces:
        status = await db.execute(
            "delete from live_events where workspace_id = $1"
            " and at < now() - make_interval(secs => $2)",
            w["workspace_id"],
            float(retention_seconds),
        )
        removed += int(status.split()[-1])
    return removed


@dataclass(frozen=True, slots=True)
class LogBounds:
    # The last position given out (0: none yet).
    head: int
    # The oldest position still kept (None: none kept).
    oldest: int | None


async def bounds(db: Executor, workspace_id: int) -> LogBounds:
    row = await db.fetchrow(
        "select coalesce((select position from live_positions where workspace_id = $1), 0)"
        " as head,"
        " (select min(position) from live_events where workspace_id = $1) as oldest",
        workspace_id,
    )
    assert row is not None
    return LogBounds(int(row["head"]), row["oldest"])


async def head(db: Executor, workspace_id: int) -> int:
    """The last position given out (0: none yet). Every event up to it is committed: a writer
    holds the live_positions row's lock until it commits, and the row shows only committed
    positions."""
    value = await db.fetchval(
        "select position from live_positions where workspace_id = $1", workspace_id
    )
    return int(value) if value is not None else 0


async def events_after(
    db: Executor, workspace_id: int, position: int, limit: int
) -> tuple[list[LiveEvent], int]:
    """The next `limit` events after `position`, in order, and the log's head (how far behind
    `position` is)."""
    rows = await db.fetch(
        "select e.position, e.message_id, e.kind, h.head"
        " from (select coalesce((select position from live_positions where workspace_id = $1),"
        " 0) as head) h"
        " left join lateral (select position, message_id, kind from live_events"
        " where workspace_id = $1 and position > $2 order by position limit $3) e on true"
        " order by e.position",
        workspace_id,
        position,
        limit,
    )
    events = [
        LiveEvent(int(r["position"]), r["message_id"], r["kind"])
        for r in rows
        if r["position"] is not None
    ]
    return events, int(rows[0]["head"])
