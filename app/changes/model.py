"""One live change (docs/changes.md): the shapes a connector may send, checked before any write.

The same models read a `recall apply` NDJSON line and an `applyChanges` input (converted to the
same dict), so both paths accept and reject exactly the same changes. Field shapes reuse the
fixture's (keys, text without NUL, ISO 8601 times with a zone): a change is a fixture's entry
arriving later.
"""

from __future__ import annotations

from typing import Any, ClassVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.errors import BadUserInput
from app.workspace_import.model import (
    Agent,
    Body,
    Key,
    Keys,
    Member,
    Memory,
    Message,
    Scope,
    first_error_line,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# A change is a fixture's entry arriving later: members, agents, scopes, memories and posts
# are the fixture's own models (docs/fixtures.md), so both paths check them alike. Each kind is
# a class of its own (CHANGE: its CONTRACT name), so the applier dispatches on the type.
class UpsertMember(Member):
    CHANGE: ClassVar[str] = "upsertMember"


class UpsertAgent(Agent):
    CHANGE: ClassVar[str] = "upsertAgent"


class CreateScope(Scope):
    CHANGE: ClassVar[str] = "createScope"


class CreateMemory(Memory):
    CHANGE: ClassVar[str] = "createMemory"


class PostMessage(Message):
    CHANGE: ClassVar[str] = "postMessage"


class KeyOnly(_Model):
    key: Key


class DeactivateMember(KeyOnly):
    CHANGE: ClassVar[str] = "deactivateMember"


class ArchiveAgent(KeyOnly):
    CHANGE: ClassVar[str] = "archiveAgent"


class DeleteAgent(KeyOnly):
    CHANGE: ClassVar[str] = "deleteAgent"


class MakeScopePrivate(KeyOnly):
    CHANGE: ClassVar[str] = "makeScopePrivate"


class DeleteMessage(KeyOnly):
    CHANGE: ClassVar[str] = "deleteMessage"


class EraseMemberMessages(KeyOnly):
    CHANGE: ClassVar[str] = "eraseMemberMessages"


class RevokeIdentityLinks(KeyOnly):
    """Every live identity link of that member is revoked (docs/identity.md)."""

    CHANGE: ClassVar[str] = "revokeIdentityLinks"


class ScopeMembers(_Model):
    scope: Key
    members: Keys = Field(min_length=1)


class AddScopeMembers(ScopeMembers):
    CHANGE: ClassVar[str] = "addScopeMembers"


class RemoveScopeMembers(ScopeMembers):
    CHANGE: ClassVar[str] = "removeScopeMembers"


class EditMessage(_Model):
    CHANGE: ClassVar[str] = "editMessage"

    key: Key
    body: Body


Change = (
    UpsertMember | DeactivateMember | UpsertAgent | ArchiveAgent | DeleteAgent | CreateScope
    | AddScopeMembers | RemoveScopeMembers | MakeScopePrivate | CreateMemory | PostMessage
    | EditMessage | DeleteMessage | EraseMemberMessages | RevokeIdentityLinks
)  # fmt: skip

# The change kinds by their CONTRACT name.
KINDS: dict[str, type[BaseModel]] = {model.CHANGE: model for model in get_args(Change)}


class ChangeRejected(BadUserInput):
    """A change that cannot be applied; `index` is its position in the batch."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(f"change {index}: {message}")
        self.index = index
        self.reason = message

    @property
    def extensions(self) -> dict[str, object]:
        return {"change": self.index}


def parse_change(index: int, data: Any) -> Change:
    """A decoded change object ({"postMessage": {...}}) as a Change, or ChangeRejected."""
    if not isinstance(data, dict):
        raise ChangeRejected(index, "expected a JSON object with exactly one change field")
    given = [k for k, v in data.items() if v is not None]
    if len(given) != 1:
        raise ChangeRejected(
            index,
            f"exactly one change field must be set, got {len(given)}"
            + (f" ({', '.join(sorted(given))})" if given else ""),
        )
    kind = given[0]
    model = KINDS.get(kind)
    if model is None:
        raise ChangeRejected(index, f"unknown change '{kind[:60]}'")
    try:
        change: Change = model.model_validate(data[kind])  # type: ignore[assignment]
    except ValidationError as e:
        raise ChangeRejected(index, f"{kind}.{first_error_line(e)}") from None
    return change
