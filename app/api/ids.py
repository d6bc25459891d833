"""Opaque relay global ids: base64url("Type:number").

The `ID` scalar's input parsing is replaced so that an id that does not parse is rejected while the request
is validated (a literal) or its variables are coerced (a variable): a request error with code
BAD_USER_INPUT, before anything executes.
"""

from __future__ import annotations

import base64
import binascii

import strawberry
from graphql import GraphQLError, GraphQLID, StringValueNode, ValueNode

NODE_TYPES = frozenset({"Workspace", "Scope", "Member", "Agent", "Message", "Turn"})


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


def _parse_value(value: object) -> str:
    if not isinstance(value, str):
        raise GraphQLError("an ID must be a string")
    try:
        decode_id(value)
    except ValueError as e:
        raise GraphQLError(str(e)) from None
    return value


def _parse_literal(node: ValueNode, _variables: object = None) -> str:
    if not isinstance(node, StringValueNode):
        raise GraphQLError("an ID must be a string")
    return _parse_value(node.value)


# graphql-core forbids redefining the built-in ID scalar, so its parsers are replaced instead.
# Only input coercion changes (output still serializes as a string), and Recall is the only
# schema in the process.
# graphql-core 3.3 reads the coerce_* names; older code paths the parse_* ones.
GraphQLID.parse_value = _parse_value  # type: ignore[method-assign]
GraphQLID.coerce_input_value = _parse_value
GraphQLID.parse_literal = _parse_literal  # type: ignore[method-assign,assignment]
GraphQLID.coerce_input_literal = _parse_literal


def expect_id(value: str, *type_names: str) -> int | None:
    """The primary key if `value` names one of `type_names`; None for another type (a
    well-formed id of something else matches nothing)."""
    type_name, pk = decode_id(value)
    return pk if type_name in type_names else None
