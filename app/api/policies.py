"""Each field's policy, declared where the field is: who may call it, and what a list costs.

Every GraphQL field that runs code (a resolver) is declared with `guarded(...)`, naming
- its **access**: a Policy of app.access (the token kinds that may call it: checked by a
  permission class before the resolver runs, and stated at the end of its description), or
  PARENT: a relation of an object the request already read and authorized (a message's
  scope, a turn's requester), readable by whoever could read that object;
- for a list, its **size** as the request's cost model counts it (app.api.limits): Page (its
  `first`/`last` arguments, or the default page), IDS (the length of its `ids` argument), or
  Fixed(n), the most it returns;
- whether each call runs a statement of its own (`statement=True`), which the cost model
  charges per call.
Every plain list attribute declares its size with `sized(...)`. tests/api/test_policies.py walks
the schema and fails on any field missing what it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import strawberry
from strawberry.permission import BasePermission

from app.access import Policy, TokenKind
from app.api.engine.internals import DEFINITION_BACKREF
from app.errors import Forbidden


@dataclass(frozen=True, slots=True)
class Fixed:
    """A list of at most `n` items."""

    n: int


@dataclass(frozen=True, slots=True)
class Page:
    """A list sized by the field's `first` / `last` arguments; `default` when neither is
    given and the `first` argument has no default of its own."""

    default: int


class _Ids:
    """A list as long as the field's `ids` argument."""


class _Parent:
    """A relation of an object the request already read and authorized."""


IDS: Final = _Ids()
PARENT: Final = _Parent()
# A list sized like its parent's page (an edge's highlights, a hit's neighbors): counted once.
PER_ITEM: Final = Fixed(1)

Size = Fixed | Page | _Ids
Access = Policy | _Parent


@dataclass(frozen=True, slots=True)
class FieldPolicy:
    """What a field declares (strawberry keeps it in the field's metadata)."""

    access: Access | None
    size: Size | None
    # Each call runs a statement of its own: the cost model charges it per call.
    statement: bool = False


_KEY = "recall_policy"


class _TokenPermission(BasePermission):
    """Refuses the field unless the request's token kind is one its Policy allows."""

    policy: Policy

    def has_permission(self, source: Any, info: strawberry.Info, **kwargs: Any) -> bool:
        return self.policy.allows(info.context.reader.kind)

    def on_unauthorized(self) -> None:
        raise Forbidden(f"{self.policy.operation} needs {self.policy.wording()}")


def _permission(policy: Policy) -> type[BasePermission]:
    name = "Allow_" + "".join(part.capitalize() for part in policy.operation.split())
    return type(name, (_TokenPermission,), {"policy": policy, "message": policy.wording()})


def guarded(
    description: str,
    *,
    access: Access,
    size: Size | None = None,
    statement: bool = False,
    **options: Any,
) -> Any:
    """A field with a resolver (use as a decorator): its access and, for a list, its size."""
    permission_classes = []
    if isinstance(access, Policy):
        permission_classes.append(_permission(access))
        if access.kinds == frozenset(TokenKind):
            description = f"{description} Any token."
        else:
            description = f"{description} Token: {access.wording()} (FORBIDDEN otherwise)."
    return strawberry.field(
        description=description,
        permission_classes=permission_classes,
        metadata={_KEY: FieldPolicy(access, size, statement)},
        **options,
    )


def sized(description: str, size: Size, **options: Any) -> Any:
    """A plain list attribute and its size."""
    return strawberry.field(
        description=description, metadata={_KEY: FieldPolicy(None, size)}, **options
    )


def definition_of(parent: Any, name: str) -> Any:
    """The strawberry field behind a GraphQL type's field, if it has one."""
    fields = getattr(parent, "fields", None)
    field = fields.get(name) if fields is not None else None
    return (field.extensions or {}).get(DEFINITION_BACKREF) if field is not None else None


def policy_of(definition: Any) -> FieldPolicy | None:
    """The policy a strawberry field declared, if any."""
    metadata = getattr(definition, "metadata", None) or {}
    found = metadata.get(_KEY)
    return found if isinstance(found, FieldPolicy) else None
