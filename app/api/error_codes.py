"""What a client is shown of a GraphQL error, over HTTP (app.api.view) and over WebSocket
(app.api.live.transport) alike: the closed set of codes (app.errors), nothing else unmasked."""

from __future__ import annotations

from typing import Any, NamedTuple

from graphql import GraphQLError

from app.errors import RecallError

INTERNAL = "Internal server error"


class Shown(NamedTuple):
    message: str
    code: str
    extensions: dict[str, Any]
    # Neither Recall's own error nor the client's malformed request: masked, and worth a
    # traceback in the log.
    unexpected: bool


def shown(error: GraphQLError, request_error: bool) -> Shown:
    """A RecallError keeps its message and code. A request error (nothing executed: syntax,
    validation, a variable a scalar refused, which carries that scalar's error) or an error of
    graphql-core's own is BAD_USER_INPUT with graphql-core's message. Anything else is masked."""
    original = error.original_error
    if isinstance(original, RecallError):
        return Shown(original.message, original.code, original.extensions, False)
    if request_error or original is None:
        return Shown(error.message, "BAD_USER_INPUT", {}, False)
    return Shown(INTERNAL, "INTERNAL_SERVER_ERROR", {}, True)
