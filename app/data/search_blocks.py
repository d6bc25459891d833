"""Block summaries of the search documents (migrations/036): for each block of BLOCK
consecutive documents in recency order (global_seq), the union of their lexemes, so a walk of
the newest documents for a query of several lexemes reads only the blocks that hold all of
them (app.data.message_search.scan).

The row triggers of migrations/036 keep them as documents are written, edited and deleted;
the importer, which skips those triggers (recall.bulk_import), summarizes its new workspace
here in one statement.
"""

from __future__ import annotations

from app.data.executor import Executor

# Documents per block: global_seq / BLOCK. Written as 16 in migrations/036 too (its triggers
# and recall_summarize_search_block); tests/data/test_search_blocks.py holds them together.
# Measured at 1M messages (docs/performance.md): blocks of 8, 16 and 32 take about the same
# room (~85 MB: a block's words are mostly its own), and 16 found a page of a pair of words,
# one of them in 1% of the documents, fastest: 1.6 ms, against 2.3 for 8 (twice the block rows
# to read) and 3.8 for 32 (more blocks hold both words by chance).
BLOCK = 16

_SUMMARIZE_WORKSPACE = f"""
    insert into search_blocks (workspace_id, block, tsv)
    select d.workspace_id, d.global_seq / {BLOCK}, recall_tsvector_union(strip(d.tsv))
    from search_documents d
    where d.workspace_id = $1
    group by d.workspace_id, d.global_seq / {BLOCK}
"""


async def summarize_workspace(db: Executor, workspace_id: int) -> None:
    """The blocks of a workspace that has none yet (an import), from all its documents."""
    await db.execute(_SUMMARIZE_WORKSPACE, workspace_id)
