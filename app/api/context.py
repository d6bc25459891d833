"""The typed per-request context: exactly what resolvers read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import strawberry
from graphql import (
    BooleanValueNode,
    FieldNode,
    FragmentSpreadNode,
    InlineFragmentNode,
    SelectionNode,
    SelectionSetNode,
    VariableNode,
)

from app.api.engine.internals import resolve_info
from app.data.readers import Reader
from app.data.session import Session
from app.history_search.ledger import Ledger
from app.message_search.keys import Keys
from app.request.loaders import Loaders
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    keys: Keys
    reader: Reader
    db: Session
    loaders: Loaders
    # The provenance ledger of the token's turn (turn tokens only): every historySearch and
    # postReply of the request shares it.
    ledger: Ledger | None


Info = strawberry.Info[Context, None]


def selects(info: Info, name: str) -> bool:
    """Whether the field being resolved asks for its field `name` (directly, or through a
    fragment; `@include(if: false)` and `@skip(if: true)` honoured): for a value that must be
    read before the field's own work, only when asked.

    Read from the field's nodes in the document: strawberry's `info.selected_fields` builds an
    object for every field and argument below this one first (~0.1 ms for a search page)."""
    raw = resolve_info(info)
    fragments = raw.fragments
    # The coerced values (graphql-core's VariableValues, or the dict strawberry hands on).
    given: Any = raw.variable_values
    variables: Mapping[str, Any] = getattr(given, "coerced", given) or {}

    def among(selection_set: SelectionSetNode | None) -> bool:
        if selection_set is None:
            return False
        for s in selection_set.selections:
            if s.directives and not _included(s, variables):
                continue
            if isinstance(s, FieldNode):
                if s.name.value == name:
                    return True
            elif isinstance(s, InlineFragmentNode):
                if among(s.selection_set):
                    return True
            elif isinstance(s, FragmentSpreadNode):
                fragment = fragments.get(s.name.value)
                if fragment is not None and among(fragment.selection_set):
                    return True
        return False

    return any(among(node.selection_set) for node in raw.field_nodes)


def _included(node: SelectionNode, variables: Mapping[str, Any]) -> bool:
    return _if(node, "skip", variables) is not True and _if(node, "include", variables) is not False


def _if(node: SelectionNode, directive: str, variables: Mapping[str, Any]) -> Any:
    """The `if` of the node's @skip or @include (a literal, or a variable's coerced value);
    None without the directive. The document was validated: `if` is a Boolean."""
    for d in node.directives or ():
        if d.name.value == directive:
            for argument in d.arguments or ():
                if argument.name.value == "if":
                    value = argument.value
                    if isinstance(value, VariableNode):
                        return variables.get(value.name.value)
                    return value.value if isinstance(value, BooleanValueNode) else None
    return None
