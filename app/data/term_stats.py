"""The search term statistics (migrations/014, 017, 022), counted once per statement by the
writers of many documents.

The row triggers of migration 017 count each document as it is written: one upsert per
lexeme, and one update of the workspace's corpus row. In one transaction every such update of
a row that transaction already updated leaves a row version the next update must walk past, so
a batch of posts sharing words cost its length times its lexemes, squared in effect.
`deferred()` turns those triggers off for the statements inside it (the transaction-local
`recall.term_stats`, migrations/022), and `count_documents` adds the same numbers once: one
upsert per distinct lexeme, in lexeme order (writers of a workspace already queue on its lock;
one order rules out a deadlock regardless). Deferral always ends with the count: a statement
that failed in between fails its transaction, so nothing is half-counted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from app.data.executor import Executor

# SET LOCAL, not set_config(): on Citus the triggers run on the workers, and Citus hands a SET
# LOCAL (not a function call) on to the transaction's worker connections once
# citus.propagate_set_commands is 'local' (as the importer does for recall.bulk_import). On
# plain PostgreSQL that setting is an unused placeholder.
_DEFER = (
    "set local citus.propagate_set_commands = 'local'; set local recall.term_stats = 'deferred'"
)
_RESUME = "set local recall.term_stats = ''"

# +1 (or -1) per lexeme of each listed document, added to the workspace's counts. The rows
# written take their workspace from the documents' own column (grouped by it), not from the
# parameter: Citus pushes an INSERT ... SELECT down to the shard only when the target's
# distribution column comes from the source's (docs/scale.md).
_COUNT_TERMS = """
    insert into search_term_stats as s (workspace_id, lexeme, documents)
    select d.workspace_id, l.lexeme, $3 * count(*)
    from search_documents d cross join unnest(tsvector_to_array(d.tsv)) as l(lexeme)
    where d.workspace_id = $1 and d.message_id = any($2::bigint[])
    group by d.workspace_id, l.lexeme
    order by l.lexeme
    on conflict (workspace_id, lexeme) do update set documents = s.documents + excluded.documents
"""
_COUNT_CORPUS = """
    insert into search_corpus_stats as c (workspace_id, documents, lexemes)
    select d.workspace_id, $3 * count(*), $3 * coalesce(sum(length(d.tsv)), 0)
    from search_documents d
    where d.workspace_id = $1 and d.message_id = any($2::bigint[])
    group by d.workspace_id
    on conflict (workspace_id) do update
        set documents = c.documents + excluded.documents, lexemes = c.lexemes + excluded.lexemes
"""


@asynccontextmanager
async def deferred(db: Executor) -> AsyncIterator[None]:
    """Document writes inside are not counted by the row triggers: count them before leaving
    (count_documents), in the same transaction."""
    await db.execute(_DEFER)
    yield
    await db.execute(_RESUME)


_COUNT_WORKSPACE_TERMS = """
    insert into search_term_stats (workspace_id, lexeme, documents)
    select d.workspace_id, l.lexeme, count(*)
    from search_documents d cross join unnest(tsvector_to_array(d.tsv)) as l(lexeme)
    where d.workspace_id = $1
    group by 1, 2
"""
# The same counts by ts_stat (count_workspace, local): one C function's pass over the vectors,
# about half the CPU of unnesting every vector into rows and grouping them (1M documents: 1.3 s
# against 2.3 s). It runs its query itself, on this node: not for Citus, where the documents
# are on the workers.
_COUNT_WORKSPACE_TERMS_LOCAL = """
    insert into search_term_stats (workspace_id, lexeme, documents)
    select $1, s.word, s.ndoc
    from ts_stat(format('select tsv from search_documents where workspace_id = %s', $1::bigint)) s
"""
_COUNT_WORKSPACE_CORPUS = """
    insert into search_corpus_stats (workspace_id, documents, lexemes)
    select d.workspace_id, count(*), coalesce(sum(length(d.tsv)), 0)
    from search_documents d
    where d.workspace_id = $1
    group by 1
"""


async def count_workspace(db: Executor, workspace_id: int, *, local: bool = False) -> None:
    """The statistics of a workspace that has none yet (an import), from all its documents.
    `local`: the documents are on this server (not Citus)."""
    terms = _COUNT_WORKSPACE_TERMS_LOCAL if local else _COUNT_WORKSPACE_TERMS
    await db.execute(terms, workspace_id)
    await db.execute(_COUNT_WORKSPACE_CORPUS, workspace_id)


async def count_documents(
    db: Executor, workspace_id: int, message_ids: Sequence[int], sign: int
) -> None:
    """Count the current documents of `message_ids` in (sign +1: just written) or out (sign
    -1: about to be deleted) of the workspace's statistics."""
    if not message_ids:
        return
    ids = list(message_ids)
    await db.execute(_COUNT_TERMS, workspace_id, ids, sign)
    await db.execute(_COUNT_CORPUS, workspace_id, ids, sign)
