"""The schema: root types assembled from each API area, plus limits (strict ID and String input
are app.api.scalars, installed by the app factory)."""

from __future__ import annotations

from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.extensions import MaxTokensLimiter, ParserCache, ValidationCache
from strawberry.tools import merge_types

from app.api.changes.schema import ChangesMutation
from app.api.directory.types import Agent, Message, Scope, Workspace
from app.api.engine.completion import RecallExecutionContext
from app.api.engine.internals import verify
from app.api.history_search.schema import HistoryMutation, HistoryQuery
from app.api.history_search.types import Turn
from app.api.identity.schema import IdentityMutation, IdentityQuery
from app.api.identity.types import IdentityLink, Member
from app.api.limits import RequestLimits
from app.api.live.schema import LiveSubscription
from app.api.message_search.schema import MessageSearchQuery
from app.api.viewer.schema import CoreQuery

# Each API area contributes its root fields here.
QUERY_PARTS: tuple[type, ...] = (CoreQuery, MessageSearchQuery, HistoryQuery, IdentityQuery)
MUTATION_PARTS: tuple[type, ...] = (HistoryMutation, ChangesMutation, IdentityMutation)
SUBSCRIPTION_PARTS: tuple[type, ...] = (LiveSubscription,)


def _root(name: str, parts: tuple[type, ...], description: str) -> type:
    """The root type merged from the areas' parts, described for the explorer."""
    merged = merge_types(name, parts)
    merged.__strawberry_definition__.description = description  # type: ignore[attr-defined]
    return merged


Query = _root(
    "Query",
    QUERY_PARTS,
    "Reads. Every request needs `Authorization: Bearer TOKEN`; each field says which token "
    "kinds (member rcm_, agent rca_, turn rct_, connector) may call it.",
)
Mutation = _root(
    "Mutation",
    MUTATION_PARTS,
    "Writes: agent turns and replies (agent and turn tokens) and connector changes "
    "(connector tokens), and linking a person's identities (member tokens).",
)
Subscription = _root(
    "Subscription",
    SUBSCRIPTION_PARTS,
    "Live push (docs/live.md): over WebSocket at /graphql, the graphql-transport-ws "
    'subprotocol, with {"Authorization": "Bearer TOKEN"} as connection_init\'s payload. '
    "Member tokens.",
)


class RecallSchema(strawberry.Schema):
    def process_errors(self, errors: list[GraphQLError], execution_context: Any = None) -> None:
        """Strawberry logs every error with its traceback and the document; expected errors
        are outcomes, and the view logs the unexpected ones (app/api/view.py) without the
        request's text."""


schema = RecallSchema(
    query=Query,
    # Leaf fields that are only an attribute skip graphql-core's per-field machinery.
    execution_context_class=RecallExecutionContext,
    mutation=Mutation,
    subscription=Subscription,
    types=[Workspace, Scope, Member, Agent, Message, Turn, IdentityLink],
    extensions=[
        lambda: MaxTokensLimiter(max_token_count=4000),
        # Clients send the same few documents over and over; parsing and validating one costs
        # several milliseconds, more than a search's SQL. Bounded, keyed by the document text.
        lambda: ParserCache(maxsize=256),
        lambda: ValidationCache(maxsize=256),
        # Depth, aliases and cost, in one walk linear in the document (app/api/limits.py).
        RequestLimits,
    ],
)

# Refuse to serve on a strawberry-graphql or graphql-core that changed what Recall reads.
verify(schema)


def schema_sdl() -> str:
    return schema.as_str() + "\n"
