"""Removing deleted messages' text, after the batch that deleted them (app.data.deletions).

Runs after a batch commits, on both paths (applyChanges, `recall apply`): chunk after chunk,
each its own short transaction, until nothing is pending or the time allowed is spent. Whatever
is left — the time ran out, the process died — is finished by `recall serve` on its own
(app.changes.erasure_worker), or by the next batch of the workspace, on either path, so an
erasure always finishes. The messages were hidden from every surface in their batch; this only
removes what no surface shows any more.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.data import deletions
from app.data.executor import Transactional
from app.data.retry import in_transaction
from app.observability.metrics import observe_text_removed


async def remove_chunk(db: Transactional, workspace_id: int, *, when: str = "batch") -> int | None:
    """One chunk of the workspace's pending text removed, in its own transaction: how many
    messages' text went (0: nothing was pending). `when` background: only as the workspace's one
    background remover (deletions.claim_text_removal), None when another one is at work."""

    async def body() -> list[int] | None:
        if when == "background" and not await deletions.claim_text_removal(db, workspace_id):
            return None
        chunk = await deletions.text_pending_removal(db, workspace_id)
        await deletions.remove_text(db, workspace_id, chunk)
        return chunk

    chunk = await in_transaction(db, body)
    if chunk is None:
        return None
    if chunk:
        observe_text_removed(when, len(chunk))
    return len(chunk)


async def remove_deleted_text(
    db: Transactional,
    workspace_id: int,
    *,
    seconds: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Remove pending text chunk by chunk; how many messages' text went. Stops early after
    `seconds` (between chunks); `progress(done, total)` after each chunk."""
    deadline = None if seconds is None else time.monotonic() + seconds
    removed = 0
    pending = await deletions.text_removal_pending(db, workspace_id)
    while pending and (deadline is None or time.monotonic() < deadline):
        chunk = await remove_chunk(db, workspace_id)
        if not chunk:
            break
        removed += chunk
        pending = max(pending - chunk, 0)
        if progress is not None:
            progress(removed, removed + pending)
    return removed
