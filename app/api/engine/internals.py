"""The private names of strawberry-graphql and graphql-core that Recall reads, read and checked
here (the list and why: app/api/engine/__init__.py).

pyproject.toml pins both libraries to the releases in TESTED; when an upgrade changes one of
these names, `verify()` says which — when the schema is built, so `recall serve` refuses to
start, and in tests/api/test_engine_internals.py — instead of a fast path that silently turns
itself off or an AttributeError on every request.
"""

from __future__ import annotations

import dataclasses
import inspect
from importlib.metadata import version
from typing import Any

import graphql
import graphql.pyutils
from graphql import GraphQLID, GraphQLString
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.execution import ExecutionContext
from strawberry.types.field import StrawberryField
from strawberry.types.info import Info

# The releases the engine was checked against (pyproject.toml pins these; tests fail otherwise).
TESTED = {"graphql-core": "3.3.2", "strawberry-graphql": "0.341.2"}

# The key under which a graphql-core field carries its StrawberryField.
DEFINITION_BACKREF: str = GraphQLCoreConverter.DEFINITION_BACKREF


class LibraryChanged(RuntimeError):
    """An installed strawberry-graphql or graphql-core no longer has what Recall reads."""


def generated_is_type_of(object_type: Any) -> bool:
    """Whether a graphql-core object type's is_type_of is none or strawberry's own, an
    isinstance check that ignores its info argument (the fast path has none to give)."""
    is_type_of = object_type.is_type_of
    return is_type_of is None or getattr(is_type_of, "__qualname__", "").endswith(
        "_get_is_type_of.<locals>.is_type_of"
    )


def provided_operation_name(execution_context: ExecutionContext) -> str | None:
    """The operation name the client sent: `operation_name` falls back to the document's first
    operation."""
    name: str | None = execution_context._provided_operation_name
    return name


def resolve_info(info: Any) -> Any:
    """graphql-core's GraphQLResolveInfo behind a strawberry Info (app.api.context.selects
    reads the field's nodes in the document)."""
    return info._raw_info


def untested_versions() -> list[str]:
    """The installed libraries that are not the releases in TESTED, one sentence each."""
    return [
        f"{package} {version(package)} is installed; the engine was tested with {tested}"
        for package, tested in TESTED.items()
        if version(package) != tested
    ]


# graphql-core's execution-context methods the executor overrides or calls, with the
# parameters it passes (in order).
_EXECUTION_METHODS: dict[str, tuple[str, ...]] = {
    "execute_fields": (
        "parent_type",
        "source_value",
        "path",
        "grouped_field_set",
        "position_context",
    ),
    "execute_field": (
        "parent_type",
        "source",
        "field_details_list",
        "path",
        "position_context",
    ),
    "complete_value": (
        "return_type",
        "field_details_list",
        "info",
        "path",
        "result",
        "position_context",
    ),
    "collect_subfields": ("return_type", "field_details_list"),
    "build_per_event_executor": ("payload",),
    "handle_field_error": ("raw_error", "return_type", "field_details_list", "path"),
    "settle_in_background": (),
    "get_stream_usage": (),
    "is_awaitable": (),
}


def problems() -> list[str]:
    """What is missing or changed, one sentence each; empty when everything is as checked."""
    found: list[str] = []

    def need(ok: bool, what: str) -> None:
        if not ok:
            found.append(what)

    for name, parameters in _EXECUTION_METHODS.items():
        method = getattr(StrawberryGraphQLCoreExecutionContext, name, None)
        if method is None:
            found.append(f"graphql-core's ExecutionContext has no {name}()")
            continue
        if parameters:
            actual = tuple(inspect.signature(method).parameters)[1 : 1 + len(parameters)]
            need(
                actual == parameters,
                f"graphql-core's ExecutionContext.{name}{actual} is not {name}{parameters}",
            )
    inits = "".join(
        inspect.getsource(vars(c)["__init__"])
        for c in StrawberryGraphQLCoreExecutionContext.__mro__
        if c.__module__.startswith("graphql.") and "__init__" in vars(c)
    )
    need(
        "self._relevant_sub_fields" in inits and "self._stream_usages" in inits,
        "graphql-core's ExecutionContext no longer memoizes in _relevant_sub_fields and"
        " _stream_usages (build_per_event_executor gives each event its own)",
    )
    need(
        hasattr(graphql.pyutils, "gather_with_cancel"),
        "graphql.pyutils.gather_with_cancel is gone",
    )
    need(
        isinstance(getattr(GraphQLCoreConverter, "DEFINITION_BACKREF", None), str),
        "strawberry's GraphQLCoreConverter.DEFINITION_BACKREF is gone",
    )
    need(
        StrawberryField().default_resolver is getattr,
        "strawberry's fields no longer read their value with getattr by default",
    )
    need(
        "provided_operation_name" in inspect.signature(ExecutionContext).parameters,
        "strawberry's ExecutionContext no longer takes provided_operation_name "
        "(provided_operation_name reads _provided_operation_name)",
    )
    need(
        "_raw_info" in {f.name for f in dataclasses.fields(Info)},
        "strawberry's Info no longer holds graphql-core's resolve info as _raw_info",
    )
    for scalar in (GraphQLID, GraphQLString):
        for attribute in ("coerce_input_value", "coerce_input_literal"):
            need(
                callable(getattr(scalar, attribute, None)),
                f"graphql-core's {scalar.name} scalar has no {attribute}",
            )
    return found


def schema_problems(schema: Any) -> list[str]:
    """What the fast path needs of a built schema (a strawberry.Schema): strawberry's default
    resolver marks itself `_is_default`, and its generated is_type_of is recognisable."""
    found: list[str] = []
    message = schema._schema.type_map.get("Message")
    field = message.fields.get("key") if message is not None else None
    if field is None or getattr(field.resolve, "_is_default", None) is not True:
        found.append("strawberry's default resolver is no longer marked _is_default")
    if message is None or message.is_type_of is None or not generated_is_type_of(message):
        found.append("strawberry's generated is_type_of changed (_get_is_type_of)")
    return found


def verify(schema: Any) -> None:
    """Raise LibraryChanged naming every change, with the installed versions."""
    found = problems() + schema_problems(schema)
    if found:
        raise LibraryChanged(
            f"strawberry-graphql {version('strawberry-graphql')} / graphql-core "
            f"{graphql.__version__} changed what Recall reads (the versions pyproject.toml "
            "allows were checked): " + "; ".join(found)
        )
