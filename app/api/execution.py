"""graphql-core's field execution, with a shortcut for the fields that are only an attribute.

A page of 20 messageSearch hits executes ~270 fields, and most are leaves read straight from a
dataclass (an edge's cursor, a message's key and body, a highlight's start and end). graphql-
core builds a resolve-info object for each, looks for arguments, and dispatches its value
through complete_value before serializing it: about two thirds of the request's GraphQL
execution time went there. A leaf field without arguments whose resolver is strawberry's
default one (`_is_default`: no resolver, permission classes or field extensions, so its value
is the source's attribute, read with getattr) is answered here by getattr and the scalar's
serializer.

Anything unusual goes the normal way, which then reports it exactly as before: a null where
the schema forbids one, a value the scalar refuses, an exception. Those are pure reads of a
dataclass, so reading again costs nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    Undefined,
)
from graphql.pyutils import Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

DEFINITION_BACKREF = GraphQLCoreConverter.DEFINITION_BACKREF

# id(field definition) -> (attribute, serializer, non-null) for fields the shortcut answers, or
# None. Field definitions live as long as the schema.
_Shortcut = tuple[str, Callable[[Any], Any], bool]
_SHORTCUTS: dict[int, _Shortcut | None] = {}


def _shortcut(field: GraphQLField) -> _Shortcut | None:
    key = id(field)
    if key in _SHORTCUTS:
        return _SHORTCUTS[key]
    found: _Shortcut | None = None
    resolve = field.resolve
    definition = (field.extensions or {}).get(DEFINITION_BACKREF)
    non_null = isinstance(field.type, GraphQLNonNull)
    named = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    if (
        resolve is not None
        # strawberry's resolver of a basic field (no resolver, permission or extension), which
        # reads the attribute with the configured default resolver: getattr.
        and getattr(resolve, "_is_default", False)
        and isinstance(definition, StrawberryField)
        and definition.default_resolver is getattr
        and definition.python_name
        and not field.args
        and isinstance(named, GraphQLScalarType | GraphQLEnumType)
    ):
        found = (definition.python_name, named.serialize, non_null)
    _SHORTCUTS[key] = found
    return found


class RecallExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def execute_field(
        self,
        parent_type: GraphQLObjectType,
        source: Any,
        field_details_list: Any,
        path: Path,
        position_context: Any,
    ) -> Any:
        node = field_details_list[0].node
        # Strawberry always passes a manager; it wraps resolvers only if it has middleware
        # (a schema extension with a `resolve` hook: none here).
        manager = self.middleware_manager
        if not node.arguments and (manager is None or not manager.middlewares):
            field = self.schema.get_field(parent_type, node.name.value)
            shortcut = _shortcut(field) if field is not None else None
            if shortcut is not None:
                attribute, serialize, non_null = shortcut
                try:
                    value = getattr(source, attribute)
                    if value is None:
                        if not non_null:
                            return None
                    else:
                        serialized = serialize(value)
                        if serialized is not None and serialized is not Undefined:
                            return serialized
                except Exception:  # noqa: S110 - the normal path below reports it
                    pass
        return super().execute_field(
            parent_type, source, field_details_list, path, position_context
        )
