"""Strict input for the built-in ID and String scalars, installed by the app factory.

graphql-core forbids redefining its built-in scalars, and Recall's schema is the only one in
the process, so their input coercion is replaced on graphql-core's scalar objects — explicitly,
by `install()` (app.server.create_app calls it; `uninstall()` restores graphql-core's own
functions, for tests), never as a side effect of an import:

- an ID that does not parse as one of Recall's global ids (app.request.ids) and
- a String with a NUL character or a lone surrogate (which PostgreSQL text cannot hold)

are then request errors with BAD_USER_INPUT, in a literal or a variable, before anything
executes, instead of an encoding or DataError deep in a statement. Only input coercion
changes; output still serializes as before.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError, GraphQLID, GraphQLScalarType, GraphQLString, StringValueNode

from app.request.ids import decode_id
from app.request.text import text_problem

# graphql-core 3.3 reads the coerce_* names; older code paths the parse_* ones.
_HOOKS = ("parse_value", "coerce_input_value", "parse_literal", "coerce_input_literal")
_ORIGINAL: dict[tuple[str, str], Any] = {
    (scalar.name, hook): getattr(scalar, hook)
    for scalar in (GraphQLID, GraphQLString)
    for hook in _HOOKS
}


def check_text(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise GraphQLError(problem)
    return value


def _id_value(value: object) -> str:
    if not isinstance(value, str):
        raise GraphQLError("an ID must be a string")
    try:
        decode_id(value)
    except ValueError as e:
        raise GraphQLError(str(e)) from None
    return value


def _id_literal(node: Any, _variables: object = None) -> str:
    if not isinstance(node, StringValueNode):
        raise GraphQLError("an ID must be a string")
    return _id_value(node.value)


def _string_value(value: Any) -> str:
    return check_text(_ORIGINAL[("String", "parse_value")](value))


def _string_literal(node: Any, variables: Any = None) -> str:
    return check_text(_ORIGINAL[("String", "parse_literal")](node, variables))


_STRICT: dict[str, tuple[Any, Any]] = {
    "ID": (_id_value, _id_literal),
    "String": (_string_value, _string_literal),
}


def _set(scalar: GraphQLScalarType, value: Any, literal: Any) -> None:
    scalar.parse_value = value  # type: ignore[method-assign]
    scalar.coerce_input_value = value
    scalar.parse_literal = literal  # type: ignore[method-assign]
    scalar.coerce_input_literal = literal


def install() -> None:
    """Strict ID and String input for every request of the process (idempotent)."""
    for scalar in (GraphQLID, GraphQLString):
        _set(scalar, *_STRICT[scalar.name])


def uninstall() -> None:
    """graphql-core's own ID and String input again."""
    for scalar in (GraphQLID, GraphQLString):
        for hook in _HOOKS:
            setattr(scalar, hook, _ORIGINAL[(scalar.name, hook)])


def installed() -> bool:
    return GraphQLID.coerce_input_value is _id_value
