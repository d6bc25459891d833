"""applyChanges: a workspace's connector applies live changes (docs/changes.md).

The inputs mirror the NDJSON lines of `recall apply`; both are checked by the same models
(app.changes.model) and applied by the same applier, in one transaction per call.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import strawberry

from app.api.context import Info
from app.changes.apply import apply_changes
from app.changes.model import parse_change
from app.errors import BadUserInput, Forbidden

MAX_CHANGES = 1000


@strawberry.input(description="A person: `name` defaults to the key.")
class MemberInput:
    key: str
    name: str | None = None


@strawberry.input
class KeyInput:
    key: str


@strawberry.input(description="An agent, owned by a member (its key).")
class AgentInput:
    key: str
    owner: str
    name: str | None = None


@strawberry.input(
    description="A conversation, as in a fixture: a channel (with a visibility), a dm, or a "
    "thread (with its parent and root message, and no members)."
)
class ScopeInput:
    key: str
    kind: str
    visibility: str | None = None
    name: str | None = None
    members: list[str] | None = None
    parent: str | None = None
    root: str | None = None


@strawberry.input
class ScopeMembersInput:
    scope: str
    members: list[str]


@strawberry.input(description="members (with readers), workspace, or public.")
class MemoryAudienceInput:
    kind: str
    readers: list[str] | None = None


@strawberry.input
class MemoryInput:
    key: str
    audience: MemoryAudienceInput


@strawberry.input(
    description="A message as it was posted; `sources` make an agent reply's lineage."
)
class MessageInput:
    key: str
    scope: str
    author: str
    at: datetime
    body: str
    evidence: bool = True
    sources: list[str] | None = None
    memory_sources: list[str] | None = None


@strawberry.input
class EditMessageInput:
    key: str
    body: str


@strawberry.input(one_of=True, description="One change: exactly one field is set.")
class ChangeInput:
    upsert_member: MemberInput | None = strawberry.UNSET
    deactivate_member: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="The person's tokens stop working at once; their messages stay.",
    )
    upsert_agent: AgentInput | None = strawberry.UNSET
    archive_agent: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Still matches author filters; no longer listed for pickers.",
    )
    delete_agent: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Its name, owner, memberships and tokens go; its messages stay, and no "
        "author filter reaches them any more.",
    )
    create_scope: ScopeInput | None = strawberry.UNSET
    add_scope_members: ScopeMembersInput | None = strawberry.UNSET
    remove_scope_members: ScopeMembersInput | None = strawberry.UNSET
    make_scope_private: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="A public channel becomes private, its whole history (threads included) "
        "narrowed to its people now.",
    )
    create_memory: MemoryInput | None = strawberry.UNSET
    post_message: MessageInput | None = strawberry.UNSET
    edit_message: EditMessageInput | None = strawberry.UNSET
    delete_message: KeyInput | None = strawberry.UNSET
    erase_member_messages: KeyInput | None = strawberry.field(
        default=strawberry.UNSET, description="Delete every message that person wrote."
    )


@strawberry.type
class ApplyChangesResult:
    applied: int = strawberry.field(description="Changes that changed something.")
    unchanged: int = strawberry.field(
        description="Changes that were already true (replays): nothing was written for them."
    )
    erased_messages: int = strawberry.field(
        description="Messages deleted by eraseMemberMessages changes."
    )


def _as_dict(change: ChangeInput) -> dict[str, Any]:
    """The change as the NDJSON object `recall apply` reads (camelCase kind, payload fields)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(change):
        value = getattr(change, f.name)
        if value is strawberry.UNSET or value is None:
            continue
        kind = _CAMEL[f.name]
        out[kind] = {k: v for k, v in dataclasses.asdict(value).items() if v is not None}
    return out


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
}


@strawberry.type
class ChangesMutation:
    @strawberry.mutation(
        description="Apply a connector's changes in order, in one transaction: all or nothing. "
        "A bad change fails the batch with BAD_USER_INPUT naming its index in "
        "extensions.change. Connector tokens only."
    )
    async def apply_changes(self, info: Info, changes: list[ChangeInput]) -> ApplyChangesResult:
        reader = info.context.reader
        if reader.kind != "connector":
            raise Forbidden("applyChanges needs a connector token")
        if len(changes) > MAX_CHANGES:
            raise BadUserInput(f"applyChanges takes at most {MAX_CHANGES} changes per call")
        parsed = [parse_change(i, _as_dict(c)) for i, c in enumerate(changes)]
        db = info.context.db
        async with db.transaction():
            result = await apply_changes(db, reader.workspace_id, parsed)
        return ApplyChangesResult(
            applied=result.applied,
            unchanged=result.unchanged,
            erased_messages=result.erased_messages,
        )
