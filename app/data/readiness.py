"""Statements of search readiness: the search_readiness row and the sidecar's health."""

from __future__ import annotations

from dataclasses import dataclass

import asyncpg

from app.data.executor import Executor


@dataclass(frozen=True, slots=True)
class ReadinessRow:
    migrated: bool
    backfilled: bool
    finalized: bool
    read_ready: bool

    @property
    def ready(self) -> bool:
        return self.migrated and self.backfilled and self.finalized and self.read_ready


_NOT_READY = ReadinessRow(False, False, False, False)


async def workspaces_in_order(db: Executor, key: str | None) -> list[tuple[int, str]]:
    """Workspaces in deterministic (created_at, id) order; one, or none, when `key` is given."""
    rows = await db.fetch(
        "select id, key from workspaces where ($1::text is null or key = $1)"
        " order by created_at, id",
        key,
    )
    return [(int(r["id"]), str(r["key"])) for r in rows]


async def readiness_of(db: Executor, workspace_id: int) -> ReadinessRow:
    row = await db.fetchrow(
        "select migrated, backfilled, finalized, read_ready from search_readiness"
        " where workspace_id = $1",
        workspace_id,
    )
    return _readiness(row)


def _readiness(row: asyncpg.Record | None) -> ReadinessRow:
    if row is None:
        return _NOT_READY
    return ReadinessRow(
        bool(row["migrated"]),
        bool(row["backfilled"]),
        bool(row["finalized"]),
        bool(row["read_ready"]),
    )


async def set_flags(
    db: Executor,
    workspace_id: int,
    *,
    migrated: bool = False,
    backfilled: bool = False,
    finalized: bool = False,
    read_ready: bool = False,
) -> None:
    """Turn the given flags on. Flags are only ever OR-ed in, so no command downgrades a
    workspace (a rerun after promotion leaves it read-ready)."""
    # The row first (a workspace that lost its row starts from nothing), then the flags: an
    # INSERT ... ON CONFLICT would check the constraint against the proposed row, which may
    # claim read_ready alone.
    await db.execute(
        "insert into search_readiness (workspace_id) values ($1) on conflict do nothing",
        workspace_id,
    )
    await db.execute(
        """
        update search_readiness set
            migrated = migrated or $2,
            backfilled = backfilled or $3,
            finalized = finalized or $4,
            read_ready = read_ready or $5,
            updated_at = now()
        where workspace_id = $1
        """,
        workspace_id,
        migrated,
        backfilled,
        finalized,
        read_ready,
    )


async def backfill_batch(db: Executor, workspace_id: int, limit: int) -> int:
    """Index up to `limit` messages that have no search document; returns how many."""
    status = await db.execute(
        """
        insert into search_documents
            (workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq,
             created_at, tsv)
        select m.workspace_id, m.id, m.scope_id, coalesce(s.parent_id, s.id), m.author_id,
               m.global_seq, m.seq, m.created_at, recall_document_tsvector(m.body)
        from messages m
        join scopes s on s.workspace_id = $1 and s.id = m.scope_id
        where m.workspace_id = $1
          and not exists (select 1 from search_documents d
                          where d.workspace_id = $1 and d.message_id = m.id)
        order by m.id
        limit $2
        on conflict (workspace_id, message_id) do nothing
        """,
        workspace_id,
        limit,
    )
    return int(status.rsplit(" ", 1)[-1])


async def missing_documents(db: Executor, workspace_id: int) -> int:
    count: int = await db.fetchval(
        """
        select count(*) from messages m
        where m.workspace_id = $1
          and not exists (select 1 from search_documents d
                          where d.workspace_id = $1 and d.message_id = m.id)
        """,
        workspace_id,
    )
    return count


async def index_is_valid(db: Executor) -> bool:
    """The GIN index exists, is a GIN index on search_documents, and is valid and ready (an
    interrupted CREATE INDEX CONCURRENTLY leaves an invalid one)."""
    ok: bool | None = await db.fetchval(
        """
        select i.indisvalid and i.indisready and am.amname = 'gin'
               and i.indrelid = 'search_documents'::regclass
        from pg_class c
        join pg_index i on i.indexrelid = c.oid
        join pg_am am on am.oid = c.relam
        where c.relname = 'search_documents_tsv' and c.relnamespace = current_schema()::regnamespace
        """
    )
    return bool(ok)


async def triggers_enabled(db: Executor) -> bool:
    """The triggers that keep search current exist and are not disabled ('D'): both indexing
    triggers on messages, and the three that keep the block summaries on search_documents
    (migrations/036: without them a search of several words misses what was written since)."""
    enabled: int = await db.fetchval(
        """
        select count(*) from pg_trigger
        where tgenabled <> 'D'
          and ((tgrelid = 'messages'::regclass
                and tgname in ('messages_index_insert', 'messages_index_body_update'))
               or (tgrelid = 'search_documents'::regclass
                   and tgname in ('search_documents_block_insert',
                                  'search_documents_block_update',
                                  'search_documents_block_delete')))
        """
    )
    return enabled == 5
