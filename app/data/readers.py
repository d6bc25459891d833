"""Who is reading: the reader behind a bearer token, and which scopes and messages it may see.

A person reads as the destination members(ns, [person]). An agent reads only inside its
perspective (scopes it is a member of); with a turn, also only what the turn's destination
allows. An agent token without a turn reads no message bodies at all: disclosure needs a
destination, and only a turn binds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.data.eligibility import (
    ALLOWED_FROM_CTE,
    Destination,
    eligible,
    in_perspective,
    person_destination,
)
from app.data.executor import Executor
from app.data.params import Params
from app.data.tokens import hash_token, token_workspace


def cursor_context(workspace_id: int, kind: str, actor_id: int, turn_id: int | None) -> str:
    """Who a cursor is sealed for (app.message_search.opaque): the same person, or the same turn, with
    any of its tokens; nobody else."""
    return f"{workspace_id}:{kind}:{actor_id}:{turn_id or 0}"


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a turn token's turn binds, read with the token: a turn is created once and never
    changes (app.data.turns); `conversations` is the agent's membership now (it only narrows
    historySearch's scan: the perspective is decided per row)."""

    scope_id: int
    # The scope's conversation: a thread's parent, else the scope itself.
    conversation_id: int
    requester_id: int
    trigger_message_id: int | None
    created_at: datetime
    conversations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Reader:
    """Who a request speaks for (a token's workspace, kind and actor; `turn_id` only for turn
    tokens) and the destination it reads as."""

    workspace_id: int
    kind: str  # member | agent | turn | connector
    # A connector speaks for no actor: 0, which no actor has (ids start at 1).
    actor_id: int
    destination: Destination | None
    turn_id: int | None = None
    # The workspace's search readiness (docs/design.md, Readiness), read with the token.
    search_ready: bool = False
    # Turn tokens: the turn, read with the token.
    turn: TurnContext | None = None
    # No message of the workspace with provenance had a missing lineage summary when the token
    # was read: this request's statements deny a missing one instead of walking its lineage
    # (eligibility.lineage_allows). False walks, as every statement did before.
    lineage_complete: bool = False

    @property
    def agent_id(self) -> int | None:
        return self.actor_id if self.kind in ("agent", "turn") else None

    @property
    def cursor_context(self) -> str:
        return cursor_context(self.workspace_id, self.kind, self.actor_id, self.turn_id)

    def message_predicate(self, m: str, p: Params) -> str | None:
        """WHERE conjuncts for messages this reader may read (their parameters added to `p`),
        or None when it may read none. Parameters $1-$4 are the destination; the statement
        defines the allowed_audiences CTE (eligibility.allowed_audiences_cte)."""
        if self.destination is None:
            return None
        sql = eligible(m, ALLOWED_FROM_CTE, complete=self.lineage_complete)
        if self.agent_id is not None:
            sql += " and " + in_perspective(f"{m}.scope_id", p.add(self.agent_id))
        return sql

    def scope_predicate(self, s: str, param: str) -> str:
        """A WHERE conjunct for scopes this reader may list; `param` binds `actor_id`, and the
        statement's $1 is the reader's workspace (every table is filtered by it explicitly:
        Citus does not carry a.workspace_id = b.workspace_id into a correlated subquery)."""
        membership = (
            "exists (select 1 from scope_members rm where rm.workspace_id = $1"
            f" and rm.scope_id = coalesce({s}.parent_id, {s}.id)"
            f" and rm.actor_id = {param})"
        )
        if self.kind == "member":
            # Public and truly open channels are fair game, as are their threads (a thread has
            # its parent's visibility and namespace) — a public one only in the person's own
            # namespace: another namespace's public channel is a room they cannot read (its
            # audience is workspace(that namespace)), so it is neither listed nor found by an
            # in: operator. An open one is readable from anywhere.
            assert self.destination is not None
            visibility = (
                f"coalesce((select rp.visibility from scopes rp where rp.workspace_id = $1"
                f" and rp.id = {s}.parent_id), {s}.visibility)"
            )
            public = (
                f"(case {visibility} when 'open' then true when 'public'"
                f" then {s}.namespace_id = {int(self.destination.namespace_id)} else false end)"
            )
            return f"({public} or {membership})"
        return membership


async def reader_for_token(db: Executor, token: str) -> Reader | None:
    """The reader behind a bearer token, in one statement; None for an unknown, revoked or
    expired token, or one whose workspace or turn state is gone."""
    if not token or len(token) > 200:
        return None
    token_hash = hash_token(token)
    workspace_id = token_workspace(token)
    if workspace_id is None:
        # A token minted before migrations/015 names no workspace: find it first, so that the
        # statement below is always one workspace's (on Citus this lookup visits every shard;
        # reissued tokens never take this path). An unknown token ends here.
        workspace_id = await db.fetchval(
            "select workspace_id from tokens where token_hash = $1", token_hash
        )
        if workspace_id is None:
            return None
    # One statement, planned once per session (migrations/021): the token, its workspace's
    # namespace and readiness, whether a lineage summary is missing, and a turn token's turn.
    row = await db.fetchrow("select * from recall_token_reader($1, $2)", token_hash, workspace_id)
    return _reader_of(row)


async def reader_for_turn(
    db: Executor, workspace_id: int, agent_id: int, turn_id: int
) -> Reader | None:
    """The reader a turn token of `turn_id` would have, for the agent that started it (MCP's
    tools name a turn by its id, with the agent's own token): exactly the same reader, read by
    the same function, through one of the turn's live tokens. None when the turn is not this
    agent's, does not exist, or has no live token left (revoked or expired)."""
    # Two statements: on Citus a function that reads distributed tables cannot be called
    # from a query on a shard (as a lateral call beside `tokens` would be).
    token_hash = await db.fetchval(
        "select t.token_hash from tokens t where t.workspace_id = $1 and t.kind = 'turn'"
        " and t.actor_id = $2 and t.turn_id = $3 and t.revoked_at is null"
        " and (t.expires_at is null or t.expires_at > now()) order by t.id limit 1",
        workspace_id,
        agent_id,
        turn_id,
    )
    if token_hash is None:
        return None
    row = await db.fetchrow("select * from recall_token_reader($1, $2)", token_hash, workspace_id)
    reader = _reader_of(row)
    return reader if reader is not None and reader.kind == "turn" else None


def _reader_of(row: Any) -> Reader | None:
    """A row of recall_token_reader as a Reader (None: no reader)."""
    if row is None:
        return None
    ws, kind, actor = row["workspace_id"], row["kind"], row["actor_id"]
    ready, complete = row["search_ready"], row["lineage_complete"]
    if kind == "member":
        ns = row["default_namespace_id"]
        if ns is None:
            return None
        destination = person_destination(ws, ns, actor)
        return Reader(
            ws, "member", actor, destination, search_ready=ready, lineage_complete=complete
        )
    if kind == "agent":
        return Reader(ws, "agent", actor, None, search_ready=ready, lineage_complete=complete)
    if kind == "connector":
        # No destination: a connector reads no message (docs/changes.md).
        return Reader(ws, "connector", 0, None, search_ready=ready, lineage_complete=complete)
    if row["dest_ns"] is None:
        return None
    destination = Destination(ws, row["dest_kind"], row["dest_ns"], tuple(row["dest_readers"]))
    turn = None
    if row["turn_conversation"] is not None:  # else its scope is gone: the surfaces refuse
        turn = TurnContext(
            row["turn_scope_id"],
            row["turn_conversation"],
            row["turn_requester_id"],
            row["turn_trigger_id"],
            row["turn_created_at"],
            tuple(row["turn_conversations"]),
        )
    return Reader(ws, "turn", actor, destination, row["turn_id"], ready, turn, complete)
