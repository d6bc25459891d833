"""Text a client sends must be text PostgreSQL can hold: no NUL, no lone surrogate.

The built-in String scalar's input parsing is wrapped (as app.api.ids does for ID), so such a
value — in a literal or a variable, in any argument — is a request error with BAD_USER_INPUT
before anything executes, instead of an encoding or DataError deep in a statement.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError, GraphQLString

_parse_value = GraphQLString.parse_value
_parse_literal = GraphQLString.parse_literal


def check_text(value: str) -> str:
    if "\x00" in value:
        raise GraphQLError("a string must not contain a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise GraphQLError("a string must be valid Unicode (it has a lone surrogate)") from None
    return value


def _strict_value(value: Any) -> str:
    return check_text(_parse_value(value))


def _strict_literal(node: Any, variables: Any = None) -> str:
    return check_text(_parse_literal(node, variables))


GraphQLString.parse_value = _strict_value  # type: ignore[method-assign]
GraphQLString.coerce_input_value = _strict_value
GraphQLString.parse_literal = _strict_literal  # type: ignore[method-assign]
GraphQLString.coerce_input_literal = _strict_literal
