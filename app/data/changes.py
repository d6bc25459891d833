"""The statements of live changes (docs/changes.md). app.changes decides; this module writes.

Written to stay distributable (docs/design.md, Scale): every statement names its workspace as
`workspace_id = $1` on every table it touches, inserts are INSERT ... SELECT, and no function
that reads tables runs inside another statement (the lineage cache is filled by a statement of
its own).

Every writer of a workspace's messages takes the workspace row lock first (`lock_workspace`,
or postReply's counter update), then scope rows: one order, so concurrent connectors and
replies queue instead of deadlocking, and `seq` / `global_seq` are handed out under the lock.
The lock is FOR NO KEY UPDATE, never FOR UPDATE: every row a search writes (its audit row, a
turn's evidence) has a foreign key to the workspace, whose check takes FOR KEY SHARE on its
row, which FOR UPDATE blocks and FOR NO KEY UPDATE does not. So writers queue behind each other
and readers never queue behind a writer (tests/test_writers_and_readers.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.data import lineage, term_stats
from app.data.audiences import AudienceSpec
from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class LockedWorkspace:
    id: int
    namespace_id: int
    last_global_seq: int


async def lock_workspace(db: Executor, workspace_id: int) -> LockedWorkspace:
    row = await db.fetchrow(
        "select id, default_namespace_id, last_global_seq from workspaces where id = $1"
        " for no key update",
        workspace_id,
    )
    assert row is not None
    return LockedWorkspace(row["id"], row["default_namespace_id"], row["last_global_seq"])


# --- actors --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ActorState:
    id: int
    key: str
    kind: str
    name: str
    owner_id: int | None
    deactivated: bool
    archived: bool
    deleted: bool


async def actors_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, ActorState]:
    rows = await db.fetch(
        """
        select id, key, kind, name, owner_id, deactivated_at is not null as deactivated,
               archived_at is not null as archived, deleted_at is not null as deleted
        from actors where workspace_id = $1 and key = any($2::text[])
        """,
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: ActorState(**dict(r)) for r in rows}


async def insert_actor(
    db: Executor, workspace_id: int, key: str, kind: str, name: str, owner_id: int | None
) -> int:
    actor_id: int = await db.fetchval(
        "insert into actors (workspace_id, key, kind, name, owner_id)"
        " select $1, $2, $3, $4, $5 returning id",
        workspace_id,
        key,
        kind,
        name,
        owner_id,
    )
    return actor_id


async def update_actor(
    db: Executor, workspace_id: int, actor_id: int, name: str, owner_id: int | None
) -> None:
    await db.execute(
        "update actors set name = $3, owner_id = $4 where workspace_id = $1 and id = $2",
        workspace_id,
        actor_id,
        name,
        owner_id,
    )


async def deactivate_member(db: Executor, workspace_id: int, member_id: int) -> None:
    """The person reads nothing from now on: their member tokens are revoked in the same
    transaction (tokens of agents they own are the agents' and keep working)."""
    await db.execute(
        "update actors set deactivated_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        member_id,
    )
    await db.execute(
        "update tokens set revoked_at = now() where workspace_id = $1 and actor_id = $2"
        " and kind = 'member' and revoked_at is null",
        workspace_id,
        member_id,
    )


async def archive_agent(db: Executor, workspace_id: int, agent_id: int) -> None:
    await db.execute(
        "update actors set archived_at = now() where workspace_id = $1 and id = $2",
        workspace_id,
        agent_id,
    )


async def delete_agent(db: Executor, workspace_id: int, agent_id: int) -> None:
    """What made the actor someone goes: name, owner, memberships (its perspective), tokens.
    The row stays as the author of its messages, marked deleted."""
    await db.execute(
        "update actors set deleted_at = now(), name = '', owner_id = null"
        " where workspace_id = $1 and id = $2",
        workspace_id,
        agent_id,
    )
    await db.execute(
        "delete from scope_members where workspace_id = $1 and actor_id = $2",
        workspace_id,
        agent_id,
    )
    await db.execute(
        "delete from tokens where workspace_id = $1 and actor_id = $2", workspace_id, agent_id
    )


# --- audiences and scopes ------------------------------------------------------------------


async def audience_id(
    db: Executor, workspace_id: int, namespace_id: int, spec: AudienceSpec
) -> int:
    """The id of the audience row for `spec`, created if this workspace has none yet (audiences
    are stored once: audiences_identity)."""
    ns = None if spec.kind == "public" else namespace_id
    found: int = await db.fetchval(
        """
        with created as (
            insert into audiences (workspace_id, kind, namespace_id, readers)
            select $1, $2, $3, $4::bigint[]
            on conflict do nothing
            returning id
        )
        select id from created
        union all
        select id from audiences
        where workspace_id = $1 and kind = $2 and coalesce(namespace_id, 0) = coalesce($3, 0)
          and readers = $4::bigint[]
        limit 1
        """,
        workspace_id,
        spec.kind,
        ns,
        list(spec.readers),
    )
    return found


@dataclass(frozen=True, slots=True)
class ScopeState:
    id: int
    key: str
    kind: str
    visibility: str | None
    parent_id: int | None
    origin_audience_id: int
    last_seq: int
    made_private: bool


async def scopes_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, ScopeState]:
    rows = await db.fetch(
        """
        select id, key, kind, visibility, parent_id, origin_audience_id, last_seq,
               made_private_at is not null as made_private
        from scopes where workspace_id = $1 and key = any($2::text[])
        """,
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: ScopeState(**dict(r)) for r in rows}


async def audiences_of(db: Executor, workspace_id: int, scope_id: int) -> tuple[int, int]:
    """A conversation's (origin, destination) audience ids now: a new thread takes them."""
    row = await db.fetchrow(
        "select origin_audience_id, destination_audience_id from scopes"
        " where workspace_id = $1 and id = $2",
        workspace_id,
        scope_id,
    )
    assert row is not None
    return row["origin_audience_id"], row["destination_audience_id"]


async def insert_scope(
    db: Executor,
    workspace_id: int,
    namespace_id: int,
    *,
    key: str,
    kind: str,
    visibility: str | None,
    name: str | None,
    parent_id: int | None,
    root_message_id: int | None,
    origin_audience_id: int,
    destination_audience_id: int,
    member_ids: Sequence[int],
) -> int:
    scope_id: int = await db.fetchval(
        """
        insert into scopes (workspace_id, key, kind, visibility, name, namespace_id, parent_id,
                            root_message_id, origin_audience_id, destination_audience_id)
        select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10
        returning id
        """,
        workspace_id,
        key,
        kind,
        visibility,
        name,
        namespace_id,
        parent_id,
        root_message_id,
        origin_audience_id,
        destination_audience_id,
    )
    await add_members(db, workspace_id, scope_id, member_ids)
    return scope_id


async def add_members(
    db: Executor, workspace_id: int, scope_id: int, actor_ids: Sequence[int]
) -> int:
    """Add actors to a channel or DM; how many were not members yet (counted from RETURNING:
    on Citus the command tag of an INSERT ... SELECT that the coordinator runs counts the rows
    it selected, those ON CONFLICT skipped included)."""
    added = await db.fetch(
        """
        insert into scope_members (workspace_id, scope_id, actor_id)
        select $1, $2, a from unnest($3::bigint[]) as a
        on conflict do nothing
        returning actor_id
        """,
        workspace_id,
        scope_id,
        list(actor_ids),
    )
    return len(added)


async def remove_members(
    db: Executor, workspace_id: int, scope_id: int, actor_ids: Sequence[int]
) -> int:
    status = await db.execute(
        "delete from scope_members where workspace_id = $1 and scope_id = $2"
        " and actor_id = any($3::bigint[])",
        workspace_id,
        scope_id,
        list(actor_ids),
    )
    return _count(status)


async def people_of(db: Executor, workspace_id: int, scope_id: int) -> list[int]:
    """The human members of a channel or DM (agents are never readers)."""
    rows = await db.fetch(
        """
        select sm.actor_id from scope_members sm
        join actors a on a.workspace_id = sm.workspace_id and a.id = sm.actor_id
        where sm.workspace_id = $1 and a.workspace_id = $1 and sm.scope_id = $2
          and a.kind = 'member'
        order by sm.actor_id
        """,
        workspace_id,
        scope_id,
    )
    return [r["actor_id"] for r in rows]


async def set_conversation_audiences(
    db: Executor,
    workspace_id: int,
    scope_id: int,
    *,
    visibility: str | None,
    origin_audience_id: int,
    destination_audience_id: int,
) -> None:
    """The audiences later messages of a conversation (and of its threads) are written with
    and shown to. Earlier messages keep theirs: membership is a set of intervals."""
    # `(select now())`, not now(): Citus refuses a non-immutable function inside CASE or
    # COALESCE of an UPDATE; as an InitPlan it is the same value on plain PostgreSQL.
    await db.execute(
        """
        update scopes set origin_audience_id = $3, destination_audience_id = $4,
                          visibility = case when id = $2 then coalesce($5, visibility)
                                            else visibility end,
                          made_private_at = case when id = $2 and $5 = 'private'
                                                 then coalesce(made_private_at, (select now()))
                                                 else made_private_at end
        where workspace_id = $1 and (id = $2 or parent_id = $2)
        """,
        workspace_id,
        scope_id,
        origin_audience_id,
        destination_audience_id,
        visibility,
    )


async def narrow_history(
    db: Executor, workspace_id: int, scope_id: int, audience_id: int
) -> list[int]:
    """Give every message of a conversation and its threads the audience `audience_id`; the
    ids of the messages whose audience changed.

    The per-row trigger of migrations/004 forgets the cached lineage of each such message and
    of everything built from it, so a reply elsewhere that quoted this history is walked
    again (and hidden where the narrower audience no longer allows it)."""
    rows = await db.fetch(
        """
        update messages m set audience_id = $3
        where m.workspace_id = $1 and m.audience_id <> $3
          and m.scope_id in (select s.id from scopes s
                             where s.workspace_id = $1 and (s.id = $2 or s.parent_id = $2))
        returning m.id
        """,
        workspace_id,
        scope_id,
        audience_id,
    )
    return [r["id"] for r in rows]


async def cache_missing_lineage(db: Executor, workspace_id: int) -> None:
    """Fill the lineage cache where a change made it forget (a statement of its own)."""
    await lineage.cache_missing_summaries(db, workspace_id)


# --- memories ------------------------------------------------------------------------------


async def memories_by_keys(db: Executor, workspace_id: int, keys: Sequence[str]) -> dict[str, int]:
    rows = await db.fetch(
        "select id, key from memories where workspace_id = $1 and key = any($2::text[])",
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: r["id"] for r in rows}


async def insert_memory(db: Executor, workspace_id: int, key: str, audience_id: int) -> None:
    await db.execute(
        "insert into memories (workspace_id, key, audience_id) select $1, $2, $3",
        workspace_id,
        key,
        audience_id,
    )


# --- messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageState:
    id: int
    key: str
    scope_id: int
    author_id: int
    body: str
    deleted: bool


async def messages_by_keys(
    db: Executor, workspace_id: int, keys: Sequence[str]
) -> dict[str, MessageState]:
    rows = await db.fetch(
        "select id, key, scope_id, author_id, body, deleted from messages"
        " where workspace_id = $1 and key = any($2::text[])",
        workspace_id,
        list(set(keys)),
    )
    return {r["key"]: MessageState(**dict(r)) for r in rows}


async def new_ids(db: Executor, n: int) -> list[int]:
    ids: list[int] = await db.fetchval(
        "select array(select nextval('recall_ids') from generate_series(1, $1))", n
    )
    return ids


@dataclass(frozen=True, slots=True)
class NewMessage:
    id: int
    key: str
    scope_id: int
    seq: int
    global_seq: int
    author_id: int
    body: str
    created_at: datetime
    audience_id: int
    evidence: bool
    source_ids: tuple[int, ...]
    memory_ids: tuple[int, ...]


async def insert_messages(
    db: Executor, workspace_id: int, messages: Sequence[NewMessage], last_global_seq: int
) -> None:
    """Write posted messages with their provenance, advance the scope and workspace counters,
    and cache the new replies' lineage. The insert trigger (migrations/016) indexes them in the
    same statement, so they are searchable when the transaction commits; their documents are
    counted into the term statistics once for the whole run (app.data.term_stats)."""
    async with term_stats.deferred(db):
        await _insert_rows(db, workspace_id, messages)
        await term_stats.count_documents(db, workspace_id, [m.id for m in messages], +1)
    edges = [(m.id, s) for m in messages for s in m.source_ids]
    if edges:
        await db.execute(
            "insert into message_sources (workspace_id, message_id, source_message_id)"
            " select $1, t.* from unnest($2::bigint[], $3::bigint[]) as t",
            workspace_id,
            [e[0] for e in edges],
            [e[1] for e in edges],
        )
    memory_edges = [(m.id, s) for m in messages for s in m.memory_ids]
    if memory_edges:
        await db.execute(
            "insert into message_memory_sources (workspace_id, message_id, memory_id)"
            " select $1, t.* from unnest($2::bigint[], $3::bigint[]) as t",
            workspace_id,
            [e[0] for e in memory_edges],
            [e[1] for e in memory_edges],
        )
    last_seq: dict[int, int] = {}
    for m in messages:
        last_seq[m.scope_id] = max(last_seq.get(m.scope_id, 0), m.seq)
    await db.execute(
        """
        update scopes s set last_seq = t.seq
        from unnest($2::bigint[], $3::int[]) as t(id, seq)
        where s.workspace_id = $1 and s.id = t.id
        """,
        workspace_id,
        list(last_seq),
        list(last_seq.values()),
    )
    await db.execute(
        "update workspaces set last_global_seq = $2 where id = $1", workspace_id, last_global_seq
    )
    replies = [m.id for m in messages if m.source_ids or m.memory_ids]
    if replies:
        await lineage.cache_summaries(db, workspace_id, replies)


async def _insert_rows(db: Executor, workspace_id: int, messages: Sequence[NewMessage]) -> None:
    await db.execute(
        """
        insert into messages (workspace_id, id, key, scope_id, seq, global_seq, author_id, body,
                              created_at, audience_id, evidence, has_provenance)
        select $1, t.* from unnest($2::bigint[], $3::text[], $4::bigint[], $5::int[],
                                   $6::bigint[], $7::bigint[], $8::text[], $9::timestamptz[],
                                   $10::bigint[], $11::boolean[], $12::boolean[]) as t
        """,
        workspace_id,
        [m.id for m in messages],
        [m.key for m in messages],
        [m.scope_id for m in messages],
        [m.seq for m in messages],
        [m.global_seq for m in messages],
        [m.author_id for m in messages],
        [m.body for m in messages],
        [m.created_at for m in messages],
        [m.audience_id for m in messages],
        [m.evidence for m in messages],
        [bool(m.source_ids or m.memory_ids) for m in messages],
    )


async def edit_message(db: Executor, workspace_id: int, message_id: int, body: str) -> None:
    """A new body; the update trigger (migrations/007) re-indexes it in the same statement."""
    await db.execute(
        "update messages set body = $3 where workspace_id = $1 and id = $2",
        workspace_id,
        message_id,
        body,
    )


def _count(status: str) -> int:
    return int(status.rsplit(" ", 1)[-1])
