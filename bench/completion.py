"""What the engine's fast path buys: a page of 20 messageSearch hits, built in memory, completed
by graphql-core with strawberry's execution context and with Recall's, in alternating rounds.

    python -m bench.completion --rounds 7

No database and no HTTP: only the result's completion (the part app/api/engine/completion.py
replaces), over the fields bench.harness's MESSAGE_SEARCH selects. Prints, per context, the
median of each round's median milliseconds; both must answer the same data.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import statistics
import time
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import strawberry
from graphql import parse
from strawberry.execution import optimized_is_awaitable
from strawberry.schema._graphql_core import execute, execution_context_class_kwargs
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from app.api.directory.types import Agent
from app.api.engine.completion import RecallExecutionContext
from app.api.identity.types import Member
from app.api.message_search.types import MessageSearchConnection, MessageSearchEdge
from app.api.pagination import PageInfo
from app.data.rows import ActorRow, MessageRow, ScopeRow
from app.message_search.excerpts import Excerpt
from app.message_search.search import MessageHit
from bench.harness import MESSAGE_SEARCH


def _page() -> MessageSearchConnection:
    """20 hits as the resolver hands them over: hydrated messages (author and scope read)."""
    edges = []
    for i in range(20):
        kind = "agent" if i % 3 == 0 else "member"
        author = ActorRow(i, f"actor-{i}", kind, f"Actor {i}", 1 if kind == "agent" else None)
        scope = ScopeRow(i, f"channel-{i}", "channel", "public", f"channel {i}", None, None, 1)
        body = "a message about the orbit of the moon, " * 5
        row = MessageRow(
            i, f"msg-{i}", i, i, i, i, body, datetime(2024, 1, 1, tzinfo=UTC), True, author, scope
        )
        ranges = [(15, 20), (55, 60)]
        excerpt = Excerpt(
            text=body, start=0, end=len(body), highlights=ranges, more_before=False,
            more_after=False,
        )  # fmt: skip
        # A hit whose parts are made already (app.message_search.search.MessageHit makes
        # them when first asked for; here only the completion is measured).
        hit = SimpleNamespace(cursor=f"cursor-{i}", message=row, highlights=ranges, excerpt=excerpt)
        edges.append(MessageSearchEdge.of(cast(MessageHit, hit)))
    return MessageSearchConnection(
        edges=edges,
        page_info=PageInfo(has_next_page=True, end_cursor="cursor-19"),
        candidate_budget_exhausted=False,
        interpretation=None,  # type: ignore[arg-type]  # not selected
        live_event=None,
    )


PAGE = _page()


@strawberry.type
class _Query:
    @strawberry.field
    def message_search(self, query: str, first: int, author: str | None = None) -> (
        MessageSearchConnection
    ):  # fmt: skip
        return PAGE


# The harness's document, its AuthorFilter variable typed as this schema has it.
DOCUMENT = parse(MESSAGE_SEARCH.replace("$author: AuthorFilter", "$author: String"))


def _schema(context_class: type) -> strawberry.Schema:
    return strawberry.Schema(
        query=_Query, types=[Member, Agent], execution_context_class=context_class
    )


def _complete(schema: strawberry.Schema, loop: asyncio.AbstractEventLoop) -> Any:
    result = execute(
        schema._schema,
        DOCUMENT,
        variable_values={"q": "orbit"},
        is_awaitable=optimized_is_awaitable,  # type: ignore[arg-type]  # as strawberry passes it
        **execution_context_class_kwargs(schema.execution_context_class),
    )
    if inspect.isawaitable(result):
        result = loop.run_until_complete(result)
    assert not result.errors, result.errors
    return result.data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pages", type=int, default=200, help="pages completed per round")
    args = parser.parse_args()
    schemas = {
        "graphql-core": _schema(StrawberryGraphQLCoreExecutionContext),
        "fast path": _schema(RecallExecutionContext),
    }
    loop = asyncio.new_event_loop()
    answers = [_complete(s, loop) for s in schemas.values()]
    assert answers[0] == answers[1], "the two contexts answered differently"
    medians: dict[str, list[float]] = {name: [] for name in schemas}
    for _ in range(args.rounds):
        for name, schema in schemas.items():
            times = []
            for _ in range(args.pages):
                start = time.perf_counter()
                _complete(schema, loop)
                times.append((time.perf_counter() - start) * 1000)
            medians[name].append(statistics.median(times))
    for name, values in medians.items():
        rounds = " ".join(f"{v:.3f}" for v in values)
        print(f"{name}: {statistics.median(values):.3f} ms per page (rounds: {rounds})")


if __name__ == "__main__":
    main()
