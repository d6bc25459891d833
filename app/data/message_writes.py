"""Messages as live changes write them: posts (with their provenance), edits, lookups by key.
Deletions are app.data.deletions; the importer's bulk path is app.data.bulk_load.

Written to stay distributable (docs/design.md, Scale): every statement names its workspace as
`workspace_id = $1` on every table it touches, inserts are INSERT ... SELECT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.data import lineage, term_stats
from app.data.executor import Executor


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
