"""Opaque relay global ids: base64url("Type:number").

An id that does not parse is rejected while the request is validated (a literal) or its
variables are coerced (a variable): app.api.scalars installs that check on the ID scalar.
"""

from __future__ import annotations

import base64
import binascii

import strawberry

NODE_TYPES = frozenset({"Workspace", "Scope", "Member", "Agent", "Message", "Turn", "IdentityLink"})


def encode_id(type_name: str, pk: int) -> strawberry.ID:
    raw = f"{type_name}:{pk}".encode()
    return strawberry.ID(base64.urlsafe_b64encode(raw).decode().rstrip("="))


def decode_id(value: str) -> tuple[str, int]:
    """(type name, primary key); ValueError for anything that is not one of our ids."""
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        raise ValueError("malformed id")
    try:
        raw = base64.b64decode(
            value + "=" * (-len(value) % 4), altchars=b"-_", validate=True
        ).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError(f"malformed id '{value}'") from None
    type_name, _, number = raw.partition(":")
    # ASCII digits only: str.isdigit() and int() also take other scripts' digits ("٨١" is 81).
    if (
        type_name not in NODE_TYPES
        or not (number.isascii() and number.isdigit())
        or len(number) > 18
    ):
        raise ValueError(f"malformed id '{value}'")
    return type_name, int(number)


def expect_id(value: str, *type_names: str) -> int | None:
    """The primary key if `value` names one of `type_names`; None for another type (a
    well-formed id of something else matches nothing)."""
    type_name, pk = decode_id(value)
    return pk if type_name in type_names else None
