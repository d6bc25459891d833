"""The statements of importing a whole workspace (app.workspace_import.importer decides every
row in Python first, then writes them here, in one transaction): the key claimed, the rows COPYed,
then the per-row triggers' work done once over the new workspace — its search documents,
their term statistics — and the lineage cache filled (app.data.lineage). bulk_load has what
makes that cheap where the database allows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg

from app.data import bulk_load, search_blocks, term_stats

# The columns each table is COPYed with.
COLUMNS: dict[str, tuple[str, ...]] = {
    "namespaces": ("workspace_id", "id", "name"),
    "actors": ("workspace_id", "id", "key", "kind", "name", "owner_id", "namespace_id"),
    "audiences": ("workspace_id", "id", "kind", "namespace_id", "readers"),
    "scopes": (
        "workspace_id", "id", "key", "kind", "visibility", "name", "namespace_id", "parent_id",
        "root_message_id", "origin_audience_id", "destination_audience_id", "last_seq",
    ),
    "scope_members": ("workspace_id", "scope_id", "actor_id"),
    "memories": ("workspace_id", "id", "key", "audience_id"),
    "messages": (
        "workspace_id", "id", "key", "scope_id", "seq", "global_seq", "author_id", "body",
        "created_at", "audience_id", "evidence", "has_provenance",
    ),
    "message_sources": ("workspace_id", "message_id", "source_message_id"),
    "message_memory_sources": ("workspace_id", "message_id", "memory_id"),
    "search_documents": (
        "workspace_id", "message_id", "scope_id", "root_scope_id", "author_id", "global_seq",
        "seq", "created_at", "tsv",
    ),
}  # fmt: skip

# What an import writes, in order (the first seven before the documents): the foreign keys
# of all of them are checked at the end when defer_row_checks turned the per-row checks off.
WRITTEN_TABLES = (
    "namespaces", "actors", "audiences", "scopes", "scope_members", "memories", "messages",
    "search_documents", "search_term_stats", "search_corpus_stats", "search_blocks",
    "message_sources", "message_memory_sources",
)  # fmt: skip


async def is_citus(conn: asyncpg.Connection) -> bool:
    found: bool = await conn.fetchval(
        "select exists (select 1 from pg_extension where extname = 'citus')"
    )
    return found


async def claim_workspace(conn: asyncpg.Connection, workspace: Sequence[Any]) -> bool:
    """Claim the key in workspace_keys (unique across a Citus cluster, where workspaces.key
    cannot be: migrations/015) and write the workspace row; False if the key is taken.
    `workspace`: (id, key, name, last_global_seq, default_namespace_id)."""
    claimed = await conn.fetchval(
        """
        insert into workspace_keys (key, workspace_id) values ($2, $1)
        on conflict (key) do nothing
        returning workspace_id
        """,
        *workspace[:2],
    )
    if claimed is None:
        return False
    await conn.execute(
        """
        insert into workspaces (id, key, name, last_global_seq, default_namespace_id)
        values ($1, $2, $3, $4, $5)
        """,
        *workspace,
    )
    return True


async def skip_row_triggers(conn: asyncpg.Connection, citus: bool, *, on: bool) -> None:
    """The row triggers of migrations/016, 017 and 022 are skipped in the import's transaction
    (recall.bulk_import): their work is done here once over the workspace, or not needed (no
    lineage summary of a new workspace can be cached yet). On Citus the setting must reach the
    shards' triggers."""
    if citus and on:
        await conn.execute("set local citus.propagate_set_commands = 'local'")
    await conn.execute(f"set local recall.bulk_import = '{'on' if on else 'off'}'")


async def copy_rows(
    conn: asyncpg.Connection, table: str, records: Iterable[tuple[Any, ...]]
) -> None:
    """COPY the rows (a list, or an iterator whose rows are made as COPY sends them)."""
    if not isinstance(records, Sequence) or records:
        await conn.copy_records_to_table(table, records=records, columns=list(COLUMNS[table]))


async def analyze(conn: asyncpg.Connection, tables: Sequence[str]) -> None:
    """Fresh statistics: without them the planner takes a bulk load's new rows for a handful."""
    await conn.execute(f"analyze {', '.join(tables)}")


# Every document of the new workspace in one statement (the row trigger's work, set-based).
_DOCUMENTS = """
    select m.workspace_id, m.id as message_id, m.scope_id,
           coalesce(s.parent_id, s.id) as root_scope_id, m.author_id, m.global_seq, m.seq,
           m.created_at, recall_document_tsvector(m.body) as tsv
    from messages m
    join scopes s on s.workspace_id = m.workspace_id and s.id = m.scope_id
    where m.workspace_id = $1 and s.workspace_id = $1
"""
_INDEX_WORKSPACE = """
    insert into search_documents
        (workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq,
         created_at, tsv)
    select workspace_id, message_id, scope_id, root_scope_id, author_id, global_seq, seq,
           created_at, tsv
    from ({source}) d
    where workspace_id = $1
"""


async def index_workspace(
    conn: asyncpg.Connection, workspace_id: int, citus: bool, *, tsv_indexed: bool = True
) -> None:
    """Every search document of the new workspace, then their term statistics.
    `tsv_indexed`: False when the text index is built after the load (bulk_load)."""
    if citus:
        # On the workspace's shard, beside its messages: one routed INSERT ... SELECT.
        await conn.execute(_INDEX_WORKSPACE.format(source=_DOCUMENTS), workspace_id)
    else:
        # The document vectors are most of an import's work. PostgreSQL runs no INSERT ...
        # SELECT in parallel, but it does run CREATE TABLE AS in parallel (its workers see
        # this transaction's messages), so the vectors are computed on every core first.
        # (A utility statement takes no bind parameters: the id, an int, is written in.)
        await conn.execute(
            "create temp table import_documents on commit drop as "
            + _DOCUMENTS.replace("$1", str(int(workspace_id)))
        )
        insert = _INDEX_WORKSPACE.format(source="select * from import_documents")
        if tsv_indexed:
            async with bulk_load.roomy_pending_list(conn, "search_documents_tsv"):
                await conn.execute(insert, workspace_id)
        else:
            await conn.execute(insert, workspace_id)
    # The rows the per-document triggers of migrations/017 would have added up to.
    await term_stats.count_workspace(conn, workspace_id, local=not citus)
    await search_blocks.summarize_workspace(conn, workspace_id)


# --- the document vectors on a second connection ------------------------------------------
#
# The vectors are most of an import's database work (~15 µs a message, one core), and the
# import's own connection has plenty of other work that needs no vectors (the messages' COPY,
# the lineage summaries). So a second connection computes them from the bodies alone while the
# first checks the fixture and loads, and the first COPYs the finished documents in (on Citus
# the coordinator computes them, and COPY routes each document to its shard). The second
# connection reads no table and writes nothing: the vectors are those of the same function the
# row trigger calls, on the same text. Once the first has loaded everything else it computes
# the batches still left beside the second rather than wait: with the summaries fast, the
# vectors outlast the rest, and one core idled through that wait (~3 s at 1M messages). A third
# connection from the start was no faster: it took a core from the checks and the load instead.

_VECTORS = """
    select recall_document_tsvector(b.body)
    from unnest($1::text[]) with ordinality as b(body, n)
    order by b.n
"""
# Bodies per statement: long enough that a round trip is nothing beside it (~0.3 s of work),
# short enough that the last batch of the two connections ends about together.
VECTOR_BATCH = 25_000


async def _raw_tsvectors(conn: asyncpg.Connection) -> None:
    """tsvector values as PostgreSQL's binary form, untouched: read on one connection, written
    by COPY on another, never looked at in Python."""
    await conn.set_type_codec(
        "tsvector", schema="pg_catalog", format="binary", encoder=bytes, decoder=bytes
    )


class DocumentVectors:
    """recall_document_tsvector of each body, computed in batches: from the start on a
    connection of its own (`beside`), and on the import's connection too once that has nothing
    else to do but wait for them (`join`). Each takes the next batch when done with one."""

    def __init__(self, bodies: Sequence[str], batch: int = VECTOR_BATCH) -> None:
        self._bodies = bodies
        self._batch = batch
        starts = range(0, len(bodies), batch)
        self._parts: list[list[bytes] | None] = [None] * len(starts)
        self._todo = iter(enumerate(starts))  # shared: each batch goes to one connection
        self._stopped = False

    async def beside(self, dsn: str) -> None:
        """Take batches on a new connection until none is left."""
        conn = await asyncpg.connect(dsn)
        try:
            await _raw_tsvectors(conn)
            await self._take(conn)
        finally:
            await conn.close()

    async def join(self, conn: asyncpg.Connection) -> None:
        """Take batches on `conn` until none is left (it reads and writes nothing else)."""
        await _raw_tsvectors(conn)
        try:
            await self._take(conn)
        finally:
            await conn.reset_type_codec("tsvector", schema="pg_catalog")

    def stop(self) -> None:
        """No connection takes another batch; those in flight end as they would."""
        self._stopped = True

    def vectors(self) -> list[bytes] | None:
        """Every body's vector, in order; None while a batch is missing (its connection
        failed, or stopped)."""
        if any(part is None for part in self._parts):
            return None
        return [vector for part in self._parts if part is not None for vector in part]

    async def _take(self, conn: asyncpg.Connection) -> None:
        for i, start in self._todo:
            if self._stopped:
                return
            rows = await conn.fetch(_VECTORS, self._bodies[start : start + self._batch])
            self._parts[i] = [r[0] for r in rows]


async def copy_documents(
    conn: asyncpg.Connection,
    workspace_id: int,
    documents: Iterable[tuple[Any, ...]],
    citus: bool = False,
    *,
    tsv_indexed: bool = True,
) -> None:
    """COPY finished search documents (COLUMNS order, tsv as document_vectors returned it),
    then their term statistics."""

    async def copy() -> None:
        await conn.copy_records_to_table(
            "search_documents", records=documents, columns=list(COLUMNS["search_documents"])
        )

    await _raw_tsvectors(conn)
    try:
        if tsv_indexed:
            async with bulk_load.roomy_pending_list(conn, "search_documents_tsv"):
                await copy()
        else:
            await copy()
    finally:
        await conn.reset_type_codec("tsvector", schema="pg_catalog")
    await term_stats.count_workspace(conn, workspace_id, local=not citus)
    await search_blocks.summarize_workspace(conn, workspace_id)
