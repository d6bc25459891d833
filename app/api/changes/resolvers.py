"""applyChanges as data: GraphQL inputs become the change objects `recall apply` reads, and
go through the same applier in one transaction."""

from __future__ import annotations

from typing import Any

import strawberry

from app import access
from app.api.changes.types import ChangeInput
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


async def resolve_apply_changes(info: Info, changes: list[ChangeInput]) -> ApplyResult:
    reader = info.context.reader
    access.APPLY_CHANGES.check(reader)
    if len(changes) > MAX_CHANGES:
        raise BadUserInput(f"applyChanges takes at most {MAX_CHANGES} changes per call")
    parsed = [parse_change(i, _as_dict(c)) for i, c in enumerate(changes)]
    return await apply_batch(
        info.context.db, reader.workspace_id, parsed, text_removal_seconds=TEXT_REMOVAL_SECONDS
    )


def _as_dict(change: ChangeInput) -> dict[str, Any]:
    """The change as the NDJSON object `recall apply` reads (camelCase kind, payload fields).

    Shallow on purpose: dataclasses.asdict deep-copies every value, and this runs for each
    change of a batch (it was 14% of a 100-post request)."""
    for name, kind in _CAMEL.items():
        value = getattr(change, name)
        if value is strawberry.UNSET or value is None:
            continue
        payload = {_FIELD.get(k, k): v for k, v in vars(value).items() if v is not None}
        if "audience" in payload:  # the one nested input (createMemory)
            payload["audience"] = {
                k: v for k, v in vars(payload["audience"]).items() if v is not None
            }
        return {kind: payload}
    return {}


# Input fields whose change-file name is not their Python name.
_FIELD = {"memory_sources": "memorySources"}

_CAMEL = {
    "upsert_member": "upsertMember",
    "deactivate_member": "deactivateMember",
    "upsert_agent": "upsertAgent",
    "archive_agent": "archiveAgent",
    "delete_agent": "deleteAgent",
    "create_scope": "createScope",
    "add_scope_members": "addScopeMembers",
    "remove_scope_members": "removeScopeMembers",
    "make_scope_private": "makeScopePrivate",
    "create_memory": "createMemory",
    "post_message": "postMessage",
    "edit_message": "editMessage",
    "delete_message": "deleteMessage",
    "erase_member_messages": "eraseMemberMessages",
    "revoke_identity_links": "revokeIdentityLinks",
}
