"""`recall serve` finishing erasures on its own (docs/changes.md, Deleting).

A deletion hides its messages in its batch; their text and search documents go in chunks right
after (app.changes.erasure), for as long as the request allows. What is left (a large erasure,
a process that died) used to wait for the workspace's next batch: in a quiet workspace the text
stayed stored and indexed, and a search for its words paged through hidden candidates. This
task looks every `RECALL_TEXT_REMOVAL_INTERVAL` seconds for workspaces with text still pending
and removes it, one chunk (deletions.CHUNK messages, one short transaction) at a time with a
pause between chunks, so searches beside it are not slowed.

Nothing is kept in memory: what is pending is the database's state (deleted messages that still
have a body, found through a partial index), so a restart, a crash or a failed chunk resumes
where it stopped. Several processes sharing the database (`--workers`, several hosts) take turns
per workspace (deletions.claim_text_removal), and two removers of one chunk never meet anyway
(SKIP LOCKED).
"""

from __future__ import annotations

import asyncio
import logging

import asyncpg

from app.changes.erasure import remove_chunk
from app.data import deletions

_log = logging.getLogger("recall.changes")

# Between two chunks of one workspace: the database's time goes to requests first.
PAUSE_SECONDS = 0.05


async def remove_pending_text(pool: asyncpg.Pool, *, pause: float = PAUSE_SECONDS) -> int:
    """One pass: every workspace's pending text removed, chunk by chunk; how many messages'
    text went. A workspace another process is removing is left to it."""
    async with pool.acquire() as conn:
        workspaces = await deletions.workspaces_with_text_pending(conn)
    removed = 0
    for workspace_id in workspaces:
        while True:
            async with pool.acquire() as conn:
                chunk = await remove_chunk(conn, workspace_id, when="background")
            if not chunk:
                break
            removed += chunk
            await asyncio.sleep(pause)
    return removed


async def finish_erasures(pool: asyncpg.Pool, interval: float) -> None:
    """remove_pending_text every `interval` seconds until cancelled; a failed pass (the database
    unreachable, a statement timeout, anything else) is logged and the next one resumes it: the
    task must outlive any one failure, or erasures would silently stop finishing."""
    while True:
        try:
            removed = await remove_pending_text(pool)
            if removed:
                _log.info("removed deleted text", extra={"messages": removed})
        except Exception as e:
            _log.warning(
                "removing deleted text stopped (the next pass resumes it)",
                extra={"error": type(e).__name__},
            )
        await asyncio.sleep(interval)
