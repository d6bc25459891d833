"""The schema: root types assembled from each API area, plus limits and the ID scalar."""

from __future__ import annotations

import strawberry
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)
from strawberry.tools import merge_types

import app.api.ids  # noqa: F401  (installs the strict ID parsing)
from app.api.changes.schema import ChangesMutation
from app.api.directory.types import Agent, Member, Message, Scope, Workspace
from app.api.history.schema import HistoryMutation, HistoryQuery
from app.api.history.types import Turn
from app.api.message_search.schema import MessageSearchQuery
from app.api.viewer.schema import CoreQuery

# Each API area contributes its root fields here.
QUERY_PARTS: tuple[type, ...] = (CoreQuery, MessageSearchQuery, HistoryQuery)
MUTATION_PARTS: tuple[type, ...] = (HistoryMutation, ChangesMutation)


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
    "(connector tokens).",
)


class RequestLimits(AddValidationRules):
    """Depth and alias limits as validation rules built once. The stock limiters build a new
    rule class per request, which made every request a miss in ValidationCache (whose key
    includes the rules): ~3 ms of validation per request, more than a rare term's SQL."""

    RULES = (
        *QueryDepthLimiter(max_depth=12).validation_rules,
        *MaxAliasesLimiter(max_alias_count=50).validation_rules,
    )

    def __init__(self) -> None:
        super().__init__(list(self.RULES))


schema = strawberry.Schema(
    query=Query,
    mutation=Mutation,
    types=[Workspace, Scope, Member, Agent, Message, Turn],
    extensions=[
        RequestLimits,
        lambda: MaxTokensLimiter(max_token_count=4000),
        # Clients send the same few documents over and over; parsing and validating one costs
        # several milliseconds, more than a search's SQL. Bounded, keyed by the document text.
        lambda: ParserCache(maxsize=256),
        lambda: ValidationCache(maxsize=256),
    ],
)


def schema_sdl() -> str:
    return schema.as_str() + "\n"
