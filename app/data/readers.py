"""Who is reading: the rules that decide which scopes and messages a principal may see.

A person reads as the destination members(ns, [person]). An agent reads only inside its
perspective (scopes it is a member of); with a turn, also only what the turn's destination
allows. An agent token without a turn reads no message bodies at all: disclosure needs a
destination, and only a turn binds one.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.data.eligibility import Destination, eligible, in_perspective, person_destination
from app.data.session import Session
from app.tokens import Principal


@dataclass(frozen=True, slots=True)
class Reader:
    workspace_id: int
    kind: str  # member | agent | turn
    actor_id: int
    destination: Destination | None
    turn_id: int | None = None

    @property
    def agent_id(self) -> int | None:
        return self.actor_id if self.kind in ("agent", "turn") else None

    def message_predicate(self, m: str, next_param: int) -> tuple[str, list[object]] | None:
        """WHERE conjuncts (with their parameters after $1-$4) for messages this reader may
        read, or None when it may read none. Parameters $1-$4 are the destination."""
        if self.destination is None:
            return None
        sql = eligible(m)
        if self.agent_id is not None:
            sql += " and " + in_perspective(f"{m}.scope_id", f"${next_param}")
            return sql, [self.agent_id]
        return sql, []

    def scope_predicate(self, s: str, param: str) -> str:
        """A WHERE conjunct for scopes this reader may list; `param` binds `actor_id`."""
        membership = (
            "exists (select 1 from scope_members rm where rm.workspace_id = "
            f"{s}.workspace_id and rm.scope_id = coalesce({s}.parent_id, {s}.id)"
            f" and rm.actor_id = {param})"
        )
        if self.kind == "member":
            # Public (and truly open) channels are fair game, as are their threads.
            public = (
                f"({s}.visibility in ('public', 'open') or exists (select 1 from scopes rp"
                f" where rp.workspace_id = {s}.workspace_id and rp.id = {s}.parent_id"
                " and rp.visibility in ('public', 'open')))"
            )
            return f"({public} or {membership})"
        return membership


async def build_reader(db: Session, principal: Principal) -> Reader | None:
    """The reader for an authenticated principal, or None if its workspace state is gone."""
    if principal.kind == "member":
        ns = await db.fetchval(
            "select default_namespace_id from workspaces where id = $1", principal.workspace_id
        )
        if ns is None:
            return None
        return Reader(
            principal.workspace_id,
            "member",
            principal.actor_id,
            person_destination(principal.workspace_id, ns, principal.actor_id),
        )
    if principal.kind == "agent":
        return Reader(principal.workspace_id, "agent", principal.actor_id, None)
    row = await db.fetchrow(
        """
        select a.kind, a.namespace_id, a.readers
        from turns t
        join audiences a on a.workspace_id = t.workspace_id and a.id = t.destination_audience_id
        where t.workspace_id = $1 and t.id = $2 and t.agent_id = $3
        """,
        principal.workspace_id,
        principal.turn_id,
        principal.actor_id,
    )
    if row is None or row["namespace_id"] is None:
        return None
    destination = Destination(
        principal.workspace_id, row["kind"], row["namespace_id"], tuple(row["readers"])
    )
    return Reader(
        principal.workspace_id, "turn", principal.actor_id, destination, principal.turn_id
    )
