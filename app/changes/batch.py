"""One batch of live changes, as every path applies it (applyChanges, `recall apply`, the
demo's live stream): one transaction through the applier (app.changes.apply), then the text of
the messages it deleted removed in chunks (app.changes.erasure)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from app.changes.apply import ApplyResult, apply_changes
from app.changes.erasure import remove_deleted_text
from app.changes.model import Change
from app.data.executor import Transactional
from app.data.retry import in_transaction
from app.errors import RecallError
from app.observability.metrics import observe_applied

_log = logging.getLogger("recall.changes")


async def apply_batch(
    db: Transactional,
    workspace_id: int,
    changes: Sequence[Change],
    *,
    text_removal_seconds: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ApplyResult:
    """Apply `changes` in one transaction (ChangeRejected: none of them), then remove the text
    the workspace's deletions left, for up to `text_removal_seconds` (None: all of it).

    The batch has committed by the time the text goes, and its deletions already hide their
    messages everywhere: a failure removing text is logged, not the batch's failure, and the
    server's background removal (app.changes.erasure_worker) or the next batch picks up what
    is left."""
    result = await in_transaction(db, lambda: apply_changes(db, workspace_id, changes))
    observe_applied(result.applied, result.unchanged)
    try:
        await remove_deleted_text(db, workspace_id, seconds=text_removal_seconds, progress=progress)
    except RecallError as e:
        _log.warning("removing deleted text stopped: %s (resumed in the background)", e.code)
    return result
