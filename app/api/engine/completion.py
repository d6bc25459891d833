"""graphql-core's execution, with a fast path for the parts of a result that are only data.

A page of 20 messageSearch hits executes ~270 fields over ~100 objects and lists, and most are
plain data: leaves read straight from a dataclass (an edge's cursor, a message's key and body,
a highlight's start and end) and objects or lists of objects held in an attribute (an edge's
node, its highlights). graphql-core builds a resolve-info object and a path for each field,
looks for arguments, and takes every value through five or six levels of completion (non-null,
list, list item, object, sub-field collection) before it reaches the next field: completing
the result of one page took ~4 ms of the gateway's Python. Here:

- a field without arguments whose resolver is strawberry's default one (`_is_default`: no
  resolver, permission classes or field extensions, so its value is the source's attribute,
  read with getattr) is answered in the loop over an object's fields: a leaf by the scalar's
  serializer, a non-null object (or list of non-null objects) by executing its sub-fields
  directly, after its `is_type_of` as graphql-core checks it (strawberry's also refuses a
  value cast to another type); a union or interface takes the object type of the value's
  strawberry type, if it is one of the abstract type's;
- a resolver marked `without_info` (Message.scope and author, which a hydrated message
  carries, and Message.body, a leaf, when the row holds all of it) is answered from its
  value_of(source) where that is not None, without building the resolver's info or calling
  it (a leaf through its scalar's serializer);
- a list of non-null objects is completed item by item the same way, and the fields or items
  still running (async resolvers, loaders) are gathered as graphql-core gathers them; an
  error completing a field is handled by graphql-core's handle_field_error, as it would be.

Anything unusual goes the normal way, which then reports it exactly as before: a null where
the schema forbids one, a value the scalar refuses, an exception while reading, a value of the
wrong type, other resolvers, arguments, middleware, incremental delivery. The fast path only
reads the source (value_of is a read too), so reading it again on the normal path costs
nothing else. tests/api/test_engine_completion.py compares both with graphql-core's own execution. What it
reads of the libraries, and why: app/api/engine/__init__.py.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLUnionType,
    Undefined,
)
from graphql.pyutils import Path, gather_with_cancel
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types.field import StrawberryField

from app.api.engine.internals import DEFINITION_BACKREF, generated_is_type_of


@dataclass(frozen=True, slots=True)
class _Read:
    """A field whose value is its source's attribute: strawberry's resolver of a basic field (no
    resolver, permission or extension), which reads it with the default resolver, getattr."""

    attribute: str
    # A leaf's serializer; None for a non-null object or list of non-null objects, completed
    # by the fast path (`type`, unwrapped).
    serialize: Callable[[Any], Any] | None
    type: Any
    non_null: bool
    # The field's own type (`type`, wrapped), for handle_field_error.
    field_type: Any
    # Instead of the attribute: a resolver's value_of (without_info); None means "call it".
    value_of: Callable[[Any], Any] | None = None


# id(field definition) -> how to read it, or None: the normal path. Field definitions live as
# long as the schema.
_READS: dict[int, _Read | None] = {}

_WITHOUT_INFO = "__recall_without_info__"


def without_info(value_of: Callable[[Any], Any]) -> Callable[[Callable[..., Any]], Any]:
    """Marks a resolver whose value, wherever `value_of(source)` is not None, is that: the
    executor's fast path takes it so, without building the resolver's info or calling it (its
    object is completed like any other). The resolver must return the same there; it still
    answers everywhere else (`value_of` None, or the normal path)."""

    def mark(resolver: Callable[..., Any]) -> Callable[..., Any]:
        setattr(resolver, _WITHOUT_INFO, value_of)
        return resolver

    return mark


def _completable(named: Any) -> bool:
    """An object type, a union or interface (whose object types the fast path checks when it
    meets them), or a list of non-null ones, that the fast path completes without info."""
    if isinstance(named, GraphQLList):
        item = named.of_type
        if not isinstance(item, GraphQLNonNull):
            return False
        named = item.of_type
    return isinstance(named, GraphQLUnionType | GraphQLInterfaceType) or (
        type(named) is GraphQLObjectType and generated_is_type_of(named)
    )


def _without_info(definition: Any, field: GraphQLField) -> Callable[[Any], Any] | None:
    """The value_of of a plain synchronous resolver marked `without_info` (no permission,
    extension or argument), if the field has one."""
    if (
        isinstance(definition, StrawberryField)
        and definition.base_resolver is not None
        and not definition.base_resolver.is_async
        and not definition.permission_classes
        and not definition.extensions
        and not field.args
    ):
        value_of: Callable[[Any], Any] | None = getattr(
            definition.base_resolver.wrapped_func, _WITHOUT_INFO, None
        )
        return value_of
    return None


def _read(field: GraphQLField) -> _Read | None:
    key = id(field)
    if key in _READS:
        return _READS[key]
    found: _Read | None = None
    definition = (field.extensions or {}).get(DEFINITION_BACKREF)
    non_null = isinstance(field.type, GraphQLNonNull)
    named: Any = field.type.of_type if isinstance(field.type, GraphQLNonNull) else field.type
    if (
        field.resolve is not None
        and getattr(field.resolve, "_is_default", False)
        and isinstance(definition, StrawberryField)
        and definition.default_resolver is getattr
        and definition.python_name
        and not field.args
    ):
        if isinstance(named, GraphQLScalarType | GraphQLEnumType):
            found = _Read(definition.python_name, named.serialize, named, non_null, field.type)
        # Non-null only: a nullable field's error would be recorded and nulled there, which
        # is the normal path's to do.
        elif non_null and _completable(named):
            found = _Read(definition.python_name, None, named, non_null, field.type)
    elif (value_of := _without_info(definition, field)) is not None:
        assert isinstance(definition, StrawberryField)
        if non_null and _completable(named):
            found = _Read(definition.python_name, None, named, non_null, field.type, value_of)
        elif isinstance(named, GraphQLScalarType | GraphQLEnumType):
            # A leaf (Message.body): value_of's value through the scalar's serializer, as
            # complete_leaf_value would take the resolver's.
            found = _Read(
                definition.python_name, named.serialize, named, non_null, field.type, value_of
            )
    _READS[key] = found
    return found


# What a fast path returns when the normal path must take the value.
_NORMAL: Any = object()


# One object type's selected fields: (response name, how to read it or None, the field's
# details).
_Plan = list[tuple[str, _Read | None, Any]]


class RecallExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Per request, like graphql-core's own memo of collected sub-fields: keyed by the
        # identity of the grouped field set, which the entry keeps alive.
        self._plans: dict[tuple[int, int], tuple[Any, _Plan]] = {}
        # Strawberry always passes a manager; it wraps resolvers only if it has middleware (a
        # schema extension with a `resolve` hook: none here). With one, every field goes the
        # normal way.
        manager = self.middleware_manager
        self._fast = manager is None or not manager.middlewares

    def build_per_event_executor(self, payload: Any) -> Any:
        """A subscription event's executor: graphql-core's copy, with memos of its own. The
        copy is shallow, so it would share this subscription's memo of collected sub-fields
        (and of plans, and of stream usages), keyed by the identity of field lists that are
        collected anew for every event: shared, they grew by every event for the whole life of
        the subscription (~5 entries an event, each keeping its field lists alive)."""
        executor: Any = super().build_per_event_executor(payload)
        executor._plans = {}
        executor._relevant_sub_fields = {}
        executor._stream_usages = type(self._stream_usages)()
        return executor

    def _plan(self, parent_type: GraphQLObjectType, grouped_field_set: Any) -> _Plan:
        key = (id(parent_type), id(grouped_field_set))
        cached = self._plans.get(key)
        if cached is not None:
            return cached[1]
        plan: _Plan = []
        for name, field_details_list in grouped_field_set.items():
            node = field_details_list[0].node
            field = self.schema.get_field(parent_type, node.name.value)
            read = _read(field) if field is not None and not node.arguments else None
            plan.append((name, read, field_details_list))
        self._plans[key] = (grouped_field_set, plan)
        return plan

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: Any,
        position_context: Any,
    ) -> Any:
        """graphql-core's loop over an object's fields, with data fields answered inline."""
        if not self._fast or position_context is not None:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        results: dict[str, Any] = {}
        awaitable_fields: list[str] = []
        is_awaitable = self.is_awaitable
        try:
            for name, read, field_details_list in self._plan(parent_type, grouped_field_set):
                result = (
                    self._read_field(
                        parent_type, source_value, path, name, read, field_details_list
                    )
                    if read is not None
                    else _NORMAL
                )
                if result is _NORMAL:
                    result = self.execute_field(
                        parent_type,
                        source_value,
                        field_details_list,
                        Path(path, name, parent_type.name),
                        position_context,
                    )
                    if result is Undefined:
                        continue
                results[name] = result
                if is_awaitable(result):
                    awaitable_fields.append(name)
        except Exception:
            self._settle_in_background(results, awaitable_fields)
            raise
        return _InPlace(results, awaitable_fields) if awaitable_fields else results

    def _read_field(
        self, parent_type: GraphQLObjectType, source: Any, path: Path | None, name: str,
        read: _Read, field_details_list: Any,
    ) -> Any:  # fmt: skip
        """The field's completed value, or _NORMAL where graphql-core must decide (null in a
        non-null field, a value the scalar refuses, an exception while reading)."""
        try:
            if read.value_of is not None:
                value = read.value_of(source)
                if value is None:
                    return _NORMAL  # the resolver's to answer
            else:
                value = getattr(source, read.attribute)
            if value is None:
                return _NORMAL if read.non_null else None
            if read.serialize is not None:
                serialized = read.serialize(value)
                return _NORMAL if serialized is None or serialized is Undefined else serialized
        except Exception:  # the normal path reports it
            return _NORMAL
        field_path = Path(path, name, parent_type.name)
        # An error completing it is handled as execute_field handles one (located, then raised
        # on or recorded), now or when its awaitable part settles.
        try:
            if isinstance(read.type, GraphQLList):
                completed = self._complete_list(
                    read.type, field_details_list, None, field_path, value
                )
            else:
                completed = self._complete_object(
                    read.type, field_details_list, None, field_path, value
                )
        except Exception as e:
            self.handle_field_error(e, read.field_type, field_details_list, field_path)
            return None
        if completed is _NORMAL or not self.is_awaitable(completed):
            return completed

        async def settled() -> Any:
            try:
                return await completed
            except Exception as e:
                self.handle_field_error(e, read.field_type, field_details_list, field_path)
                return None

        return settled()

    def complete_value(
        self,
        return_type: Any,
        field_details_list: Any,
        info: Any,
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        if self._fast and position_context is None and result is not None:
            named = return_type.of_type if isinstance(return_type, GraphQLNonNull) else return_type
            if type(named) is GraphQLObjectType or isinstance(
                named, GraphQLUnionType | GraphQLInterfaceType
            ):
                completed = self._complete_object(named, field_details_list, info, path, result)
            elif isinstance(named, GraphQLList):
                completed = self._complete_list(named, field_details_list, info, path, result)
            else:
                completed = _NORMAL
            if completed is not _NORMAL:
                return completed
        return super().complete_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def _complete_object(
        self, object_type: GraphQLObjectType | GraphQLUnionType | GraphQLInterfaceType,
        field_details_list: Any, info: Any, path: Path, value: Any,
    ) -> Any:  # fmt: skip
        """complete_object_value without its levels: is_type_of, then the sub-fields. For a
        union or interface, the object type strawberry's resolve_type would name (the value's
        strawberry type), if it is one of the abstract type's."""
        if isinstance(value, Exception):
            return _NORMAL
        if not isinstance(object_type, GraphQLObjectType):
            definition = getattr(type(value), "__strawberry_definition__", None)
            runtime = self.schema.get_type(definition.name) if definition is not None else None
            if (
                type(runtime) is not GraphQLObjectType
                or not generated_is_type_of(runtime)
                or not self.schema.is_sub_type(object_type, runtime)
            ):
                return _NORMAL
            object_type = runtime
        is_type_of = object_type.is_type_of
        # Strawberry's is_type_of is an isinstance check; anything but True (False, or an
        # awaitable one) takes the normal path, which raises the proper error.
        if is_type_of is not None and is_type_of(value, info) is not True:
            return _NORMAL
        grouped_field_set, new_defer_usages, *_ = self.collect_subfields(
            object_type, field_details_list
        )
        if new_defer_usages:
            return _NORMAL
        return self.execute_fields(object_type, value, path, grouped_field_set, None)

    def _complete_list(
        self, list_type: GraphQLList[Any], field_details_list: Any, info: Any, path: Path,
        items: Any,
    ) -> Any:  # fmt: skip
        """A list of non-null objects, item by item as complete_iterable_value does it; any
        other list, and a list holding a null or awaitable item, the normal way."""
        item_type = list_type.of_type
        if not isinstance(item_type, GraphQLNonNull) or not isinstance(items, list):
            return _NORMAL
        object_type = item_type.of_type
        if type(object_type) is not GraphQLObjectType and not isinstance(
            object_type, GraphQLUnionType | GraphQLInterfaceType
        ):
            return _NORMAL
        is_awaitable = self.is_awaitable
        if any(item is None or is_awaitable(item) for item in items):
            return _NORMAL
        if self.get_stream_usage(field_details_list, path) is not None:
            return _NORMAL
        completed: list[Any] = []
        awaitable_indices: list[int] = []
        try:
            for index, item in enumerate(items):
                value = self._complete_object(
                    object_type, field_details_list, info, path.add_key(index, None), item
                )
                if value is _NORMAL:
                    # An item of another type (is_type_of refused it): the normal path reports
                    # it; what the items before it started is settled.
                    self._settle_in_background(completed, awaitable_indices)
                    return _NORMAL
                completed.append(value)
                if is_awaitable(value):
                    awaitable_indices.append(index)
        except Exception:
            self._settle_in_background(completed, awaitable_indices)
            raise
        return _InPlace(completed, awaitable_indices) if awaitable_indices else completed

    def _settle_in_background(self, values: Any, keys: list[Any]) -> None:
        """As graphql-core does when a synchronous error bubbles past pending siblings."""
        if keys:
            self.settle_in_background([values[key] for key in keys])


class _InPlace:
    """`values` (an object's fields or a list's items) with the awaitables at `keys` awaited
    together and replaced by their results, as graphql-core gathers them.

    An awaitable object rather than a coroutine, because of what it holds: the awaitables of
    fields still pending, created before it is awaited. When the task that would await it is
    cancelled before it starts (a subscription's client leaving mid-event cancels the execution
    wherever it is), a coroutine would never run, and every awaitable it held would be reported
    as never awaited by the garbage collector; this one closes them instead."""

    __slots__ = ("_keys", "_started", "_values")

    def __init__(self, values: Any, keys: list[Any]) -> None:
        self._values, self._keys, self._started = values, keys, False

    def __await__(self) -> Any:
        self._started = True
        return _awaited_in_place(self._values, self._keys).__await__()

    def close(self) -> None:
        """Never to be awaited: what it holds is closed."""
        if not self._started:
            self._started = True
            for key in self._keys:
                _close_unstarted(self._values[key])

    def __del__(self) -> None:
        self.close()


def _close_unstarted(value: Any) -> None:
    """An awaitable that will never be awaited, closed with the awaitables it holds: a
    coroutine that never started (graphql-core's wrapper of a field's result, strawberry's of a
    resolver) holds the coroutine it would have awaited in its frame, and closing only the outer
    one would leave that one to be reported as never awaited."""
    if isinstance(value, _InPlace):
        value.close()
    elif inspect.iscoroutine(value) and inspect.getcoroutinestate(value) == inspect.CORO_CREATED:
        held = _held(value)
        value.close()
        for inner in held:
            _close_unstarted(inner)


def _held(value: Any) -> list[Any]:
    """The awaitables an unstarted coroutine holds (its arguments and closure)."""
    frame = value.cr_frame if inspect.iscoroutine(value) else None
    if frame is None or inspect.getcoroutinestate(value) != inspect.CORO_CREATED:
        return []
    return [v for v in frame.f_locals.values() if inspect.iscoroutine(v) or isinstance(v, _InPlace)]


async def _awaited_in_place(values: Any, keys: list[Any]) -> Any:
    pending = [values[key] for key in keys]
    # What each of them would await first, kept until they are done: cancelled before its
    # first step, a task only throws into its coroutine, which then lets go of the coroutine it
    # held without awaiting it (before this frame sees the cancellation).
    held = [_held(value) for value in pending]
    try:
        awaited = await gather_with_cancel(*pending)
    except asyncio.CancelledError:
        for value, inner in zip(pending, held, strict=True):
            _close_unstarted(value)
            for awaitable in inner:
                _close_unstarted(awaitable)
        raise
    for key, value in zip(keys, awaited, strict=True):
        values[key] = value
    return values
