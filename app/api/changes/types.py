"""applyChanges' inputs and result. The inputs mirror the NDJSON lines of `recall apply`
(docs/changes.md); both are checked by the same models (app.changes.model)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from app.changes.apply import ApplyResult


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

    @classmethod
    def of(cls, result: ApplyResult) -> ApplyChangesResult:
        return cls(
            applied=result.applied,
            unchanged=result.unchanged,
            erased_messages=result.erased_messages,
        )
