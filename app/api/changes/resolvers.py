"""applyChanges as data: GraphQL inputs become the change objects `recall apply` reads, and
go through the same applier in one transaction."""

from __future__ import annotations

from collections.abc import Sequence

from app import access
from app.api.changes.types import ChangeObject
from app.api.context import Info
from app.changes.apply import ApplyResult
from app.changes.batch import apply_batch
from app.changes.model import parse_change
from app.errors import BadUserInput

MAX_CHANGES = 1000
# How long a request spends removing deleted messages' text after its batch committed; what is
# left `recall serve` removes in the background (app.changes.erasure_worker). The messages are
# hidden from every surface already.
TEXT_REMOVAL_SECONDS = 2.0


async def resolve_apply_changes(info: Info, changes: Sequence[ChangeObject]) -> ApplyResult:
    reader = info.context.reader
    access.APPLY_CHANGES.check(reader)
    if len(changes) > MAX_CHANGES:
        raise BadUserInput(f"applyChanges takes at most {MAX_CHANGES} changes per call")
    parsed = [parse_change(i, c) for i, c in enumerate(changes)]
    return await apply_batch(
        info.context.db, reader.workspace_id, parsed, text_removal_seconds=TEXT_REMOVAL_SECONDS
    )
