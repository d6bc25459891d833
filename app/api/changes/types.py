"""applyChanges' inputs and result. The inputs mirror the NDJSON lines of `recall apply`
(docs/changes.md); both are checked by the same models (app.changes.model)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import strawberry

from app.changes.apply import ApplyResult


@strawberry.input(description="A person: `name` defaults to the key.")
class MemberInput:
    key: str = strawberry.field(description="The person's key (the connector's id).")
    name: str | None = strawberry.field(
        default=None, description="Display name; null means the key."
    )
    namespace: str | None = strawberry.field(
        default=None,
        description="The connector namespace of this identity (`type:name`); null means the workspace's. A member cannot move to another namespace (docs/identity.md).",
    )


@strawberry.input(description="The key of the member, agent, scope or message a change names.")
class KeyInput:
    key: str = strawberry.field(description="The connector's key of the object.")


@strawberry.input(description="An agent, owned by a member (its key).")
class AgentInput:
    key: str = strawberry.field(description="The agent's key (shares one key space with people).")
    owner: str = strawberry.field(description="The key of the member who owns it.")
    name: str | None = strawberry.field(
        default=None, description="Display name; null means the key."
    )


@strawberry.input(
    description="A conversation, as in a fixture: a channel (with a visibility), a dm, or a "
    "thread (with its parent and root message, and no members)."
)
class ScopeInput:
    key: str = strawberry.field(description="The scope's key.")
    kind: str = strawberry.field(description="`channel`, `dm` or `thread`.")
    visibility: str | None = strawberry.field(
        default=None,
        description="Channels only, required there: `public`, `private`, `shared` or `open`.",
    )
    name: str | None = strawberry.field(default=None, description="Optional display name.")
    members: list[str] | None = strawberry.field(
        default=None,
        description="Keys of member people and agents (channels and dms; none for threads).",
    )
    parent: str | None = strawberry.field(
        default=None, description="Threads only: the key of their channel or dm."
    )
    root: str | None = strawberry.field(
        default=None, description="Threads only: the key of the parent's message they answer."
    )
    namespace: str | None = strawberry.field(
        default=None,
        description="The scope's connector namespace; null means the workspace's (a thread: its parent's). Its people must be members of it; agents may be in scopes of any namespace.",
    )


@strawberry.input(description="People or agents joining or leaving a channel or dm.")
class ScopeMembersInput:
    scope: str = strawberry.field(description="The scope's key.")
    members: list[str] = strawberry.field(description="Keys of the people and agents.")


@strawberry.input(description="members (with readers), workspace, or public.")
class MemoryAudienceInput:
    kind: str = strawberry.field(description="`members`, `workspace` or `public`.")
    readers: list[str] | None = strawberry.field(
        default=None,
        description="For `members`: the keys of the people (not agents) who may read it.",
    )
    namespace: str | None = strawberry.field(
        default=None,
        description="The audience's namespace (not for `public`); null means the workspace's. Its readers must be members of it.",
    )


@strawberry.input(description="A memory an agent may cite as a source of its replies.")
class MemoryInput:
    key: str = strawberry.field(description="The memory's key.")
    audience: MemoryAudienceInput = strawberry.field(description="Who may read it.")


@strawberry.input(
    description="A message as it was posted; `sources` make an agent reply's lineage."
)
class MessageInput:
    key: str = strawberry.field(description="The message's key, unique in the workspace.")
    scope: str = strawberry.field(description="The key of the scope it is posted in.")
    author: str = strawberry.field(description="The key of the member or agent who wrote it.")
    at: datetime = strawberry.field(
        description="When it was posted, ISO 8601 with a time zone (required)."
    )
    body: str = strawberry.field(description="The text.")
    evidence: bool = strawberry.field(
        default=True, description="Source evidence exists; false hides the message everywhere."
    )
    sources: list[str] | None = strawberry.field(
        default=None, description="Keys of the messages an agent reply was built from."
    )
    memory_sources: list[str] | None = strawberry.field(
        default=None, description="Keys of the memories an agent reply was built from."
    )


@strawberry.input(description="A new body for a message.")
class EditMessageInput:
    key: str = strawberry.field(description="The message's key.")
    body: str = strawberry.field(description="The new text; it replaces the old everywhere.")


@strawberry.input(one_of=True, description="One change: exactly one field is set.")
class ChangeInput:
    upsert_member: MemberInput | None = strawberry.field(
        default=strawberry.UNSET, description="Create a person, or rename one."
    )
    deactivate_member: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="The person's tokens stop working at once and their identity links are "
        "revoked; their messages stay.",
    )
    upsert_agent: AgentInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Create an agent, or rename it / change its owner.",
    )
    archive_agent: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Still matches author filters; no longer listed for pickers.",
    )
    delete_agent: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Its name, owner, memberships and tokens go; its messages stay, and no "
        "author filter reaches them any more.",
    )
    create_scope: ScopeInput | None = strawberry.field(
        default=strawberry.UNSET, description="A channel, dm or thread, as in a fixture."
    )
    add_scope_members: ScopeMembersInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="People and agents join; in a private conversation they read what is "
        "posted from now on.",
    )
    remove_scope_members: ScopeMembersInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="They leave; they keep what was posted while they were members.",
    )
    make_scope_private: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="A public channel becomes private, its whole history (threads included) "
        "narrowed to its people now.",
    )
    create_memory: MemoryInput | None = strawberry.field(
        default=strawberry.UNSET, description="A memory an agent may cite."
    )
    post_message: MessageInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="A new message; searchable when the batch commits. A replay is unchanged.",
    )
    edit_message: EditMessageInput | None = strawberry.field(
        default=strawberry.UNSET, description="Replace a message's body."
    )
    delete_message: KeyInput | None = strawberry.field(
        default=strawberry.UNSET, description="Remove a message from every surface."
    )
    erase_member_messages: KeyInput | None = strawberry.field(
        default=strawberry.UNSET, description="Delete every message that person wrote."
    )
    revoke_identity_links: KeyInput | None = strawberry.field(
        default=strawberry.UNSET,
        description="Revoke every live or pending identity link of that person "
        "(docs/identity.md); what a link opened is closed from the next request on.",
    )


# A change as `recall apply` reads it from a line of NDJSON: {"postMessage": {...}}.
ChangeObject = dict[str, Any]


def _change_object(_cls: type, value: Mapping[str, Any], _context: Any) -> ChangeObject:
    """A ChangeInput as the change object app.changes.model checks, straight from the value
    graphql-core coerced (already validated against the schema, keyed by GraphQL names, which
    are the change file's). Strawberry would first build an instance of each input class,
    which the resolver then took apart again: 72 us a change, 3.6 ms of a 50-post request.
    With this, 51 changes take 0.42 ms, the model's checks included (docs/performance.md,
    "applyChanges' input read once"). A null is an absent field, as in a file."""
    return {
        kind: {
            field: {k: v for k, v in given.items() if v is not None}
            if isinstance(given, Mapping)
            else given
            for field, given in payload.items()
            if given is not None
        }
        for kind, payload in value.items()
        if payload is not None
    }


# Strawberry's documented hook for a type that builds its own value from the input
# (StrawberryObjectDefinition.from_input): the resolver gets ChangeObjects, not ChangeInputs.
ChangeInput.__strawberry_definition__.from_input = _change_object  # type: ignore[attr-defined]


@strawberry.type(description="What a batch of changes did.")
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
