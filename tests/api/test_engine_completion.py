"""app.api.engine.completion's fast path answers exactly what graphql-core's own execution
answers: the same data, the same errors at the same paths, for plain data (leaves, enums,
custom scalars, objects, lists), resolvers, unions, interfaces and lists of them, nulls where
the schema forbids them, values of the wrong type, exceptions while reading or resolving (now
or awaited), aliases, fragments and directives, and with a middleware (which turns it off)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from enum import Enum
from types import SimpleNamespace
from typing import Any, TypeVar

import pytest
import strawberry
from strawberry.extensions import SchemaExtension
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types import ExecutionResult

from app.api.engine.completion import RecallExecutionContext, without_info

CALLS: list[str] = []


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Person(Named):
    age: int


@strawberry.type
class Robot(Named):
    model: str


@strawberry.enum
class Mood(Enum):
    CALM = "calm"
    LOUD = "loud"


@strawberry.type
class Span:
    start: int
    end: int

    @strawberry.field
    async def width(self) -> int | None:
        if self.end < self.start:
            raise ValueError("negative width")
        return self.end - self.start


@strawberry.type
class Item:
    key: str
    spans: list[Span]
    nullable_span: Span | None
    # A plain field of a type with an is_type_of (it implements an interface).
    boss: Person
    mood: Mood
    created: datetime
    crowd: list[Named]
    maybe_spans: list[Span | None] | None
    maker: strawberry.Private[Any]
    twin: strawberry.Private[Any] = None
    # What `label` answers without being called, where it is not None.
    known_label: strawberry.Private[Any] = None

    def _hydrated_maker(self) -> Person | Robot | None:
        maker: Person | Robot | None = self.maker if not isinstance(self.maker, str) else None
        return maker

    @strawberry.field
    @without_info(_hydrated_maker)
    def made_by(self) -> Person | Robot:
        CALLS.append("made_by")
        return self._hydrated_maker() or Person(name=self.maker, age=0)

    @strawberry.field
    def named(self) -> Named:
        CALLS.append("named")
        return self.maker if not isinstance(self.maker, str) else Person(name=self.maker, age=0)

    @strawberry.field
    async def later(self) -> Span:
        return Span(start=1, end=2)

    @strawberry.field
    def broken(self) -> Span:
        raise ValueError("broken resolver")

    @strawberry.field
    @without_info(lambda self: self.twin)
    def twin_of(self) -> Span:
        return Span(start=-1, end=-1)

    @strawberry.field
    @without_info(lambda self: self.known_label)
    def label(self) -> str:
        CALLS.append("label")
        return self.known_label if self.known_label is not None else f"loaded {self.key}"


ROWS: dict[str, list[Any]] = {}


class _Raising:
    """An Item (by strawberry.cast) whose key and spans raise when read."""

    nullable_span = None
    boss = Person(name="Bo", age=50)
    mood = Mood.LOUD
    created = datetime(2024, 5, 1, tzinfo=UTC)
    crowd = ()
    maybe_spans = None
    maker = "Eve"
    twin = None
    known_label = None

    @property
    def key(self) -> str:
        raise RuntimeError("key unreadable")

    @property
    def spans(self) -> list[Span]:
        raise RuntimeError("spans unreadable")


@strawberry.type
class Query:
    @strawberry.field
    def items(self, case: str) -> list[Item]:
        return ROWS[case]


def _item(key: str = "a", **changes: Any) -> Any:
    fields: dict[str, Any] = {
        "key": key,
        "spans": [Span(start=0, end=3), Span(start=5, end=9)],
        "nullable_span": None,
        "boss": Person(name="Bo", age=50),
        "mood": Mood.CALM,
        "created": datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        "crowd": [Person(name="Cy", age=9), Robot(name="K9", model="dog")],
        "maybe_spans": [Span(start=1, end=1), None],
        "maker": Person(name="Ada", age=36),
        "known_label": f"label {key}",
    }
    fields.update(changes)
    return Item(**fields)


T = TypeVar("T")


def _unchecked(kind: type[T], **fields: Any) -> T:
    """A `kind` with fields of the wrong type, as a faulty resolver returns: the point of the
    case, so built where the type checker does not look."""
    return kind(**fields)


ROWS.update(
    {
        "plain": [_item("a"), _item("b", maker=Robot(name="R2", model="astromech"))],
        "unhydrated": [_item("c", maker="Grace", known_label=None)],
        "twin": [_item("d", twin=Span(start=7, end=8))],
        "null_leaf": [
            _item("e"),
            _unchecked(
                Item,
                key=None,
                spans=[],
                nullable_span=None,
                boss=None,
                mood=None,
                created=None,
                crowd=[],
                maybe_spans=None,
                maker="x",
            ),
        ],
        "null_item": [_item("f", spans=[Span(start=1, end=2), None])],
        "wrong_leaf": [_item("g", spans=[_unchecked(Span, start="not a number", end=1)])],
        "wrong_object": [_item("h", spans=[Person(name="not a span", age=1)])],
        "wrong_union": [_item("i", maker=Span(start=0, end=0))],
        "wrong_type_of": [_item("j"), _item("k", boss=Span(start=1, end=2))],
        # Not a strawberry object, cast to one: resolve_type's to place.
        "cast": [_item("l", maker=strawberry.cast(Robot, SimpleNamespace(name="C3", model="p")))],
        "cast_object": [_item("m", maker=strawberry.cast(Robot, Person(name="P", age=2)))],
        "empty": [],
        "null_in_nullable": [_item("n", nullable_span=_unchecked(Span, start=None, end=1))],
        "awaited_error": [_item("o", spans=[Span(start=0, end=1), Span(start=5, end=2)])],
        "wrong_enum": [_item("p", mood="sleepy")],
        "wrong_scalar": [_item("q", created="yesterday")],
        "wrong_label": [_item("t", known_label=["not", "a", "string"])],
        "wrong_in_interface_list": [
            _item("r", crowd=[Person(name="Ok", age=1), Span(start=0, end=0)])
        ],
        "null_in_interface_list": [_item("s", crowd=[Robot(name="Ok", model="m"), None])],
        "raising_read": [strawberry.cast(Item, _Raising())],
    }
)

QUERY = """
query($case: String!, $broken: Boolean!) {
  items(case: $case) {
    key
    spans { __typename start end width }
    first: spans { start }
    ...More
    nullableSpan { start }
    boss @skip(if: $broken) { name age }
    mood
    created
    crowd { __typename name ... on Person { age } ...RobotModel }
    maybeSpans { start end }
    madeBy { __typename ... on Person { name age } ... on Robot { name model } }
    named { __typename name ... on Robot { model } }
    later { start end }
    twinOf { start end }
    label
    broken @include(if: $broken) { start }
    alias: key
  }
}
fragment More on Item { spans { end } boss { name } }
fragment RobotModel on Robot { model }
"""


class _ResolveHook(SchemaExtension):
    """A middleware (an extension with a resolve hook): the fast path steps aside for it."""

    def resolve(
        self, _next: Callable[..., Any], root: Any, info: Any, *args: Any, **kwargs: Any
    ) -> Any:
        return _next(root, info, *args, **kwargs)


def _schema(context_class: type, *extensions: type[SchemaExtension]) -> strawberry.Schema:
    return strawberry.Schema(
        query=Query, execution_context_class=context_class, extensions=list(extensions)
    )


FAST = _schema(RecallExecutionContext)
STOCK = _schema(StrawberryGraphQLCoreExecutionContext)
WITH_MIDDLEWARE = _schema(RecallExecutionContext, _ResolveHook)


async def _run(schema: strawberry.Schema, case: str, broken: bool) -> tuple[Any, Any]:
    result = await schema.execute(QUERY, variable_values={"case": case, "broken": broken})
    errors = sorted(
        (e.message, tuple(e.path or ()), tuple((loc.line, loc.column) for loc in e.locations or ()))
        for e in result.errors or ()
    )
    return result.data, errors


# "twin" breaks without_info's contract on purpose (its resolver answers otherwise): below.
@pytest.mark.parametrize("case", sorted(set(ROWS) - {"twin"}))
@pytest.mark.parametrize("broken", [False, True])
async def test_the_fast_path_answers_what_graphql_core_answers(case: str, broken: bool) -> None:
    fast = await _run(FAST, case, broken)
    stock = await _run(STOCK, case, broken)
    assert fast == stock
    assert await _run(WITH_MIDDLEWARE, case, broken) == stock
    if case == "plain" and not broken:
        assert fast[1] == [] and fast[0]["items"][1]["madeBy"]["model"] == "astromech"


async def test_a_resolver_marked_without_info_is_not_called_where_its_value_is_known() -> None:
    CALLS.clear()
    await _run(FAST, "plain", False)
    assert CALLS.count("made_by") == 0 and CALLS.count("named") == 2
    # A leaf too (Message.body): its value_of, serialized.
    assert CALLS.count("label") == 0
    CALLS.clear()
    data, errors = await _run(FAST, "unhydrated", False)
    # value_of is None there: the resolver answers.
    assert CALLS.count("made_by") == 1 and CALLS.count("label") == 1 and not errors
    assert data["items"][0]["madeBy"] == {"__typename": "Person", "name": "Grace", "age": 0}
    assert data["items"][0]["label"] == "loaded c"


async def test_without_info_answers_with_its_value_not_the_resolvers() -> None:
    data, _ = await _run(FAST, "twin", False)
    assert data["items"][0]["twinOf"] == {"start": 7, "end": 8}
    # Elsewhere the resolver's own value (its contract: the same where value_of is known).
    data, _ = await _run(FAST, "plain", False)
    assert data["items"][0]["twinOf"] == {"start": -1, "end": -1}


NESTED = '{ items(case: "plain") { key later { width } spans { width start } } }'


async def test_a_request_cancelled_at_any_step_leaves_no_coroutine_unawaited() -> None:
    """A subscription's client that leaves mid-event cancels the execution wherever it is; the
    awaitables the fast path had created for fields still pending must be closed, not left for
    the garbage collector to report as never awaited (a RuntimeWarning, an error in tests)."""
    for steps in range(40):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            task = asyncio.ensure_future(FAST.execute(NESTED))
            for _ in range(steps):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            del task
            gc.collect()
        unawaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
        assert unawaited == [], (steps, unawaited)


@strawberry.type
class Ticks:
    @strawberry.subscription
    async def items(self, count: int) -> AsyncGenerator[Item, None]:
        for i in range(count):
            yield _item(f"t{i}")


async def test_a_subscriptions_memos_do_not_grow_with_its_events() -> None:
    """Each event's executor is graphql-core's shallow copy of the subscription's: the memos it
    shared were keyed by field lists collected anew for each event, so they grew by every event
    for as long as the subscription lived."""

    def live_contexts() -> list[RecallExecutionContext]:
        # By type(), not isinstance(): another test's dead weak proxy among the objects
        # raises ReferenceError on isinstance.
        return [o for o in gc.get_objects() if issubclass(type(o), RecallExecutionContext)]

    # Only this subscription's: other tests in the same process may leave contexts behind.
    # Held, so that no new context takes an old one's id.
    earlier = live_contexts()
    earlier_ids = {id(o) for o in earlier}
    schema = strawberry.Schema(
        query=Query, subscription=Ticks, execution_context_class=RecallExecutionContext
    )
    events = await schema.subscribe("subscription { items(count: 60) { key spans { start } } }")
    assert not isinstance(events, ExecutionResult)
    got = [result.data async for result in events]
    assert len(got) == 60 and all(d is not None for d in got)
    contexts = [o for o in live_contexts() if id(o) not in earlier_ids]
    assert contexts
    assert max(len(c._plans) + len(c._relevant_sub_fields) for c in contexts) < 20
