"""Deleting messages (docs/changes.md): hidden at once, their text removed in bounded chunks.

A deletion (deleteMessage, eraseMemberMessages) sets `deleted` in its batch's transaction: one
cheap update that every surface honours from the next request on, because the evidence rule
of eligibility is `evidence and not deleted` (app.data.eligibility). What is expensive — the
text itself, its search document and the document's place in the term statistics — goes
afterwards in chunks of CHUNK messages, each its own short transaction (app.changes.erasure),
found again through a partial index (migrations/023) if anything interrupts them: erasing a
person's thousands of long messages never holds a statement, a transaction or a lock that a
reader needs, and resumes where it stopped.

What lineage needs of a deleted message (its row, audience, evidence flag and provenance
edges) stays: a reply built on it is judged exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.data import term_stats
from app.data.executor import Executor

# Messages whose text one chunk removes: a few MB of 100 KB bodies, well under a second.
CHUNK = 100


async def hide_messages(db: Executor, workspace_id: int, message_ids: Sequence[int]) -> int:
    """Mark messages deleted; how many were not deleted yet."""
    hidden = await db.fetch(
        "update messages set deleted = true where workspace_id = $1"
        " and id = any($2::bigint[]) and not deleted returning id",
        workspace_id,
        list(message_ids),
    )
    return len(hidden)


async def hide_authored_by(db: Executor, workspace_id: int, author_id: int) -> int:
    """Mark every message `author_id` wrote deleted; how many were not deleted yet."""
    hidden = await db.fetch(
        "update messages set deleted = true where workspace_id = $1"
        " and author_id = $2 and not deleted returning id",
        workspace_id,
        author_id,
    )
    return len(hidden)


async def text_pending_removal(db: Executor, workspace_id: int, limit: int = CHUNK) -> list[int]:
    """Up to `limit` deleted messages that still have their text, oldest id first, locked for
    this transaction: two removers at once take different messages (SKIP LOCKED), so none is
    counted out of the statistics twice. FOR NO KEY UPDATE, which no reader's foreign-key
    check waits on."""
    rows = await db.fetch(
        "select id from messages where workspace_id = $1 and deleted and body <> ''"
        " order by id limit $2 for no key update skip locked",
        workspace_id,
        limit,
    )
    return [r["id"] for r in rows]


async def workspaces_with_text_pending(db: Executor) -> list[int]:
    """The workspaces that have deleted messages still holding their text, for the background
    removal (app.changes.erasure_worker). The one statement here of no single workspace: on
    Citus it visits every shard, once per interval, and reads a partial index that is normally
    empty (migrations/023), as the operator commands do (docs/scale.md)."""
    rows = await db.fetch(
        "select distinct workspace_id from messages where deleted and body <> ''"
        " order by workspace_id"
    )
    return [r["workspace_id"] for r in rows]


# The advisory lock class of a workspace's text removal (its key: the workspace id's hash).
_REMOVER_LOCK = 0x5245_5458  # "RETX"


async def claim_text_removal(db: Executor, workspace_id: int) -> bool:
    """Whether this transaction is the workspace's one background remover: a transaction-scoped
    advisory lock, so several `recall serve` processes (or workers) sharing the database take
    turns instead of each adding its load, and a lock dies with its transaction. Two workspaces
    whose hashes collide only take turns too."""
    claimed: bool = await db.fetchval(
        "select pg_try_advisory_xact_lock($1, hashint8($2))", _REMOVER_LOCK, workspace_id
    )
    return claimed


async def text_removal_pending(db: Executor, workspace_id: int) -> int:
    """How many deleted messages still have their text (normally 0: one index probe)."""
    found: int = await db.fetchval(
        "select count(*) from messages where workspace_id = $1 and deleted and body <> ''",
        workspace_id,
    )
    return found


async def remove_text(db: Executor, workspace_id: int, message_ids: Sequence[int]) -> None:
    """Remove the text and the search documents of deleted messages (inside a transaction):
    their documents counted out of the term statistics first, once for all of them."""
    ids = list(message_ids)
    if not ids:
        return
    async with term_stats.deferred(db):
        await term_stats.count_documents(db, workspace_id, ids, -1)
        await db.execute(
            "delete from search_documents where workspace_id = $1"
            " and message_id = any($2::bigint[])",
            workspace_id,
            ids,
        )
    # Deleted rows are not re-indexed (the body trigger skips them: migrations/010).
    await db.execute(
        "update messages set body = '' where workspace_id = $1 and id = any($2::bigint[])"
        " and deleted",
        workspace_id,
        ids,
    )
