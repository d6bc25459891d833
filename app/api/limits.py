"""What one request may ask for, decided before anything executes, in time linear in the document.

Depth, aliases and an estimated **cost** (the number of objects and fields the response could
hold: each list field multiplies what is below it by its page size or id count) are computed in
one walk of the operation in which each fragment is analysed once per type it is spread on and
the result reused at every spread. The stock depth and alias limiters re-walk a fragment at
every spread, so `fragment L0 {...L1 ...L1}` nested 20 deep took seconds to validate and froze
every request of the process; here it costs microseconds and is refused for its cost.

Runs as the request's last step before execution (it needs the variables for page sizes), on
documents that passed validation; unknown fields and types would count as leaves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
)
from strawberry.extensions import SchemaExtension

from app.api.engine.internals import provided_operation_name
from app.api.policies import IDS, FieldPolicy, Fixed, Page, definition_of, policy_of
from app.errors import BadUserInput, RecallError

MAX_DEPTH = 12
MAX_ALIASES = 50
# A page of 100 messageSearch hits, each opened around with 20 lines of context and their
# authors and scopes, is ~15,000; the fan-out that once took 66 s and 921 MB was ~10^7.
MAX_COST = 50_000
MAX_INTROSPECTION = 1_000_000

# What a list field without a declared size counts (every list declares one:
# tests/api/test_policies.py), and what a field that runs a statement of its own adds per call:
# a statement costs about as much as a hundred fields of data.
_UNDECLARED_LIST = 100
STATEMENT_COST = 100
_META_FIELDS = {"__schema": "__Schema", "__type": "__Type"}
# Fields, arguments, enum values... of one type, in Recall's schema: a generous average.
_INTROSPECTION_LIST = 10


class QueryTooComplex(RecallError):
    code = "QUERY_TOO_COMPLEX"

    def __init__(self, message: str, **measures: int) -> None:
        super().__init__(message)
        self.measures = measures

    @property
    def extensions(self) -> dict[str, object]:
        return dict(self.measures)


@dataclass(frozen=True, slots=True)
class Shape:
    depth: int
    aliases: int
    cost: int
    # The estimated size of introspection answers, kept apart: GraphiQL's schema fetch alone
    # estimates at ~270k with generous per-type sizes, far above any data query's budget.
    introspection: int = 0


def measure(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
) -> Shape:
    """The shape of the operation the request runs; BadUserInput when it names none."""
    return _walk(schema, document, operation_name, variables or {})[0]


# Per process, keyed by the document's text and the operation's name: a shape is a pure
# function of them and of the values of the variables the walk read (page sizes and id lists),
# which each entry keeps. Nothing about who asks or what the database holds. Clients send the
# same few documents over and over, and the walk of a page's document cost ~0.2 ms a request.
_SHAPES: dict[
    tuple[int, str, str | None], tuple[tuple[str, ...], dict[tuple[Any, ...], Shape]]
] = {}
_MAX_SHAPES = 256
# Per document, the variable values remembered (a client paging with ever new sizes).
_MAX_SIZES = 64


def measure_text(
    schema: GraphQLSchema,
    document: DocumentNode,
    text: str,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
) -> Shape:
    """measure() of the document parsed from `text`, remembered for the next request that
    sends the same text, operation name and sizes."""
    variables = variables or {}
    key = (id(schema), text, operation_name)
    entry = _SHAPES.get(key)
    if entry is not None:
        names, shapes = entry
        sizes = tuple(_size_key(variables.get(n)) for n in names)
        shape = shapes.get(sizes)
        if shape is not None:
            return shape
    shape, read = _walk(schema, document, operation_name, variables)
    names = tuple(sorted(read))
    if entry is None or entry[0] != names:
        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        entry = _SHAPES[key] = (names, {})
    if len(entry[1]) >= _MAX_SIZES:
        entry[1].clear()
    entry[1][tuple(_size_key(variables.get(n)) for n in names)] = shape
    return shape


def _size_key(value: Any) -> tuple[Any, ...]:
    """What the walk makes of a variable's value (_Walker._int and _length): an int, a list's
    length, or nothing (the default)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", value)
    if isinstance(value, list):
        return ("list", len(value))
    return ("other",)


def _walk(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any],
) -> tuple[Shape, set[str]]:
    """The shape, and the names of the variables whose values it read."""
    operation = _operation(document, operation_name)
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    root = {
        "query": schema.query_type,
        "mutation": schema.mutation_type,
        "subscription": schema.subscription_type,
    }[operation.operation.value]
    walker = _Walker(schema, fragments, variables)
    return walker.selection_set(operation.selection_set, root), walker.read


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        if len(operations) > 1:
            # graphql-core would pick the first; the GraphQL spec requires the name.
            raise BadUserInput("the document has several operations: say which in operationName")
        if operations:
            return operations[0]
        raise BadUserInput("the document has no operation")
    for op in operations:
        if op.name is not None and op.name.value == name:
            return op
    raise BadUserInput("operationName names no operation of the document")


class _Walker:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: Mapping[str, Any],
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.read: set[str] = set()
        self.memo: dict[tuple[str, str, bool], Shape] = {}
        self.in_progress: set[str] = set()
        self.introspecting = False

    def selection_set(
        self, node: SelectionSetNode | None, parent: GraphQLNamedType | None
    ) -> Shape:
        if node is None:
            return Shape(0, 0, 0)
        depth = aliases = cost = introspection = 0
        for shape in self._selections(node, parent):
            depth = max(depth, shape.depth)
            aliases += shape.aliases
            cost += shape.cost
            introspection += shape.introspection
        return Shape(depth, aliases, cost, introspection)

    def _selections(
        self, node: SelectionSetNode, parent: GraphQLNamedType | None
    ) -> Iterator[Shape]:
        for selection in node.selections:
            if isinstance(selection, FieldNode):
                yield self._field(selection, parent)
            elif isinstance(selection, InlineFragmentNode):
                on = (
                    self._type(selection.type_condition.name.value)
                    if selection.type_condition
                    else parent
                )
                yield self.selection_set(selection.selection_set, on)
            elif isinstance(selection, FragmentSpreadNode):
                yield self._spread(selection.name.value)

    def _spread(self, name: str) -> Shape:
        fragment = self.fragments.get(name)
        if fragment is None or name in self.in_progress:
            return Shape(0, 0, 0)  # unknown or cyclic: validation rejects the document
        on = fragment.type_condition.name.value
        key = (name, on, self.introspecting)
        if key not in self.memo:
            self.in_progress.add(name)
            self.memo[key] = self.selection_set(fragment.selection_set, self._type(on))
            self.in_progress.discard(name)
        return self.memo[key]

    def _field(self, node: FieldNode, parent: GraphQLNamedType | None) -> Shape:
        name = node.name.value
        if name in ("__schema", "__type") and not self.introspecting:
            # Introspection (GraphiQL's schema fetch nests TypeRef nine levels deep): counted
            # for its cost with the schema's real sizes, not for its depth, which clients do
            # not choose. A query nesting `fields { type { fields ...` still multiplies out.
            self.introspecting = True
            try:
                inner = self._field(node, parent)
            finally:
                self.introspecting = False
            return Shape(0, inner.aliases, 0, inner.cost)
        field_type: Any = None
        if name in _META_FIELDS:  # not in any type's field map
            field_type = self.schema.type_map.get(_META_FIELDS[name])
        elif isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            definition = parent.fields.get(name)
            field_type = definition.type if definition is not None else None
        child = self.selection_set(node.selection_set, _named(field_type))
        declared = policy_of(definition_of(parent, name)) if not self.introspecting else None
        size = self._list_size(node, parent, field_type, declared)
        statement = STATEMENT_COST if declared is not None and declared.statement else 0
        return Shape(
            depth=1 + child.depth,
            # Aliases are names in the document: a list repeats them, it does not add any.
            aliases=(1 if node.alias is not None else 0) + child.aliases,
            cost=1 + statement + size * child.cost,
            introspection=size * child.introspection,
        )

    def _list_size(
        self,
        node: FieldNode,
        parent: GraphQLNamedType | None,
        field_type: Any,
        declared: FieldPolicy | None,
    ) -> int:
        """How many items the field's value may hold, as its policy declares it
        (app.api.policies); introspection's lists by the schema's real sizes."""
        args = {a.name.value: a.value for a in node.arguments or ()}
        size = declared.size if declared is not None else None
        if isinstance(size, Fixed):
            return size.n
        if size is IDS:
            return max(1, self._length(args.get("ids")))
        if isinstance(size, Page):
            default = _argument_default(parent, node.name.value, "first", size.default)
            first = self._int(args.get("first"), default if "last" not in args else 0)
            last = self._int(args.get("last"), 0)
            around = 1 if "around" in args else 0
            return max(1, first + last + around)
        if not _is_list(field_type):
            return 1
        if self.introspecting:
            return len(self.schema.type_map) if node.name.value == "types" else _INTROSPECTION_LIST
        return _UNDECLARED_LIST

    def _value(self, node: ValueNode | None) -> Any:
        if isinstance(node, VariableNode):
            self.read.add(node.name.value)
            return self.variables.get(node.name.value)
        return node

    def _int(self, node: ValueNode | None, default: int) -> int:
        value = self._value(node)
        if isinstance(value, IntValueNode):
            value = int(value.value)
        # Out-of-range sizes are refused by the fields themselves; here they only must not
        # make the estimate small.
        return (
            value
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0
            else default
        )

    def _length(self, node: ValueNode | None) -> int:
        value = self._value(node)
        if isinstance(value, ListValueNode):
            return len(value.values)
        return len(value) if isinstance(value, list) else 1

    def _type(self, name: str) -> GraphQLNamedType | None:
        return self.schema.type_map.get(name)


def _named(t: Any) -> GraphQLNamedType | None:
    while isinstance(t, GraphQLNonNull | GraphQLList):
        t = t.of_type
    return t if isinstance(t, GraphQLNamedType) else None


def _argument_default(parent: Any, field: str, argument: str, fallback: int) -> int:
    """The schema's default of a field's argument (messageSearch's `first` = 20), else
    `fallback` (the field's own page when the argument defaults to null)."""
    fields = getattr(parent, "fields", None)
    definition = fields.get(field) if fields is not None else None
    arg = definition.args.get(argument) if definition is not None else None
    default = arg.default_value if arg is not None else None
    return default if isinstance(default, int) and not isinstance(default, bool) else fallback


def _is_list(t: Any) -> bool:
    if isinstance(t, GraphQLNonNull):
        t = t.of_type
    return isinstance(t, GraphQLList)


def check(shape: Shape) -> None:
    if shape.depth > MAX_DEPTH:
        raise QueryTooComplex(
            f"the query is {shape.depth} levels deep; at most {MAX_DEPTH}",
            depth=shape.depth,
            limit=MAX_DEPTH,
        )
    if shape.aliases > MAX_ALIASES:
        raise QueryTooComplex(
            f"the query has {shape.aliases} aliases; at most {MAX_ALIASES}",
            aliases=shape.aliases,
            limit=MAX_ALIASES,
        )
    if shape.introspection > MAX_INTROSPECTION:
        raise QueryTooComplex(
            f"the introspection query could return about {shape.introspection} values; at"
            f" most {MAX_INTROSPECTION}",
            cost=shape.introspection,
            limit=MAX_INTROSPECTION,
        )
    if shape.cost > MAX_COST:
        raise QueryTooComplex(
            f"the query could return about {shape.cost} objects and fields; at most {MAX_COST}:"
            " ask for smaller pages or fewer aliases",
            cost=shape.cost,
            limit=MAX_COST,
        )


class RequestLimits(SchemaExtension):
    """Measures a validated operation before it executes; a request over a limit is refused
    with QUERY_TOO_COMPLEX (its measure and the limit in extensions), nothing executed. Listed
    after ValidationCache, which validates (linear: graphql-core's rules) in its own hook."""

    def on_validate(self) -> Iterator[None]:
        ctx = self.execution_context
        document = ctx.graphql_document
        if document is not None and not ctx.pre_execution_errors:
            try:
                # The name the client sent: ctx.operation_name falls back to the first operation.
                name = provided_operation_name(ctx)
                schema = ctx.schema._schema
                check(
                    measure_text(schema, document, ctx.query, name, ctx.variables)
                    if isinstance(ctx.query, str)
                    else measure(schema, document, name, ctx.variables)
                )
            except RecallError as e:
                ctx.pre_execution_errors = [GraphQLError(e.message, original_error=e)]
        yield
