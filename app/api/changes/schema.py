"""applyChanges: a workspace's connector applies live changes (docs/changes.md)."""

from __future__ import annotations

from typing import Annotated, cast

import strawberry

from app import access
from app.api.changes.resolvers import resolve_apply_changes
from app.api.changes.types import ApplyChangesResult, ChangeInput, ChangeObject
from app.api.context import Info
from app.api.policies import guarded


@strawberry.type
class ChangesMutation:
    @guarded(
        "Apply a connector's changes in order, in one transaction: all or nothing. A bad "
        "change fails the batch with BAD_USER_INPUT naming its index in extensions.change. At "
        "most 1,000 changes per call.",
        access=access.APPLY_CHANGES,
    )
    async def apply_changes(
        self,
        info: Info,
        changes: Annotated[
            list[ChangeInput],
            strawberry.argument(description="The changes, applied in this order; at most 1,000."),
        ],
    ) -> ApplyChangesResult:
        # ChangeInput builds ChangeObjects (its from_input hook, app.api.changes.types).
        objects = cast(list[ChangeObject], changes)
        return ApplyChangesResult.of(await resolve_apply_changes(info, objects))
