"""On Citus every statement of a request runs on one shard (docs/scale.md, Router plans).

Each test drives a surface over GraphQL with every statement the app sends recorded (asyncpg's
query logger on the app's own pool), then EXPLAINs each recorded statement with its own
arguments and asserts that every distributed job in its plan is one task: a router query on
the workspace's shard group. A statement that starts fanning out to several shards fails here.
A statement that only reads, and every search statement (one that matches documents, `@@`),
must also be one job, with no subplans: Citus splits a statement it cannot route whole into
subplans, each a round trip to the shard (the audit row's INSERT ... SELECT inside the page's
statement did: 17 round trips for a messageSearch page). Writes with data-modifying CTEs (a
turn, the ledger, an audience) may take a few.

While the surface runs, the app's sessions also have `citus.multi_task_query_log_level =
error`, so a multi-task statement run inside a function (which EXPLAIN cannot see into) fails
the request itself, and `citus.log_remote_commands = on`: every command the coordinator sends
names its node, and all of a surface's go to one worker, the one holding the workspace's shard
group. One task per job is not enough for that: a statement split into subplans (an INSERT
inside a CTE) sends each subplan's result to every worker that may read it, and commits on
all of them, so that with any worker down the surface failed for every workspace (issue 37).

Only on Citus (RECALL_TEST_CITUS): on plain PostgreSQL there are no shards to route to.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest

from app.data.tokens import issue_connector_token
from tests.changes_support import Connector, every_kind_of_change, keyed, post
from tests.client import GraphQLClient
from tests.conftest import on_citus
from tests.history_support import REPLY, gid, load_history_personas, start_turn
from tests.history_support import search as history_search
from tests.identity_support import (
    CONFIRM_LINK,
    LINKS_OF,
    approve,
    confirm,
    link,
    linked_acme,
    revoke,
    start_code,
)
from tests.message_search_support import author, search
from tests.personas import load, load_personas
from tests.recording import Recorder, recording_client

pytestmark = [
    pytest.mark.skipif(not on_citus(), reason="router plans are a Citus property"),
    # The listener that collects the nodes (Servers) stays for the pooled connection's life.
    pytest.mark.filterwarnings("ignore:.*released to the pool but has 1 active log listener"),
]


# The node a command went to, as citus.log_remote_commands tells it ("on server user@host:port").
_SERVER = re.compile(r"on server \S+@(\S+:\d+)")


class Servers:
    """The nodes the coordinator sent commands to for the app's statements."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, conn: Any, message: asyncpg.PostgresLogMessage) -> None:
        found = _SERVER.search(str(message.detail or ""))
        if found:
            self.seen.add(found.group(1))

    def take(self) -> set[str]:
        taken, self.seen = self.seen, set()
        return taken


_servers = Servers()


def _forget(recorder: Recorder) -> None:
    """Drop what the set-up sent: its statements are not the surface's."""
    recorder.take()
    _servers.take()


async def _guard(conn: asyncpg.Connection) -> None:
    await conn.execute("set citus.multi_task_query_log_level = error")
    # Every command the coordinator sends to a node is reported (at LOG level, with the node).
    await conn.execute("set citus.log_remote_commands = on")
    await conn.execute("set client_min_messages = log")


@pytest.fixture
async def recorded(
    monkeypatch: pytest.MonkeyPatch, dsn: str, settings: Any
) -> AsyncIterator[tuple[GraphQLClient, Recorder]]:
    """A client of the app whose every pooled connection reports its statements and the nodes
    they reach, and refuses to run one that is planned as several tasks."""
    _servers.take()
    async with recording_client(
        monkeypatch, settings, dsn, _guard, log_listener=_servers
    ) as recorded:
        yield recorded


_WRITES = re.compile(r"\b(insert\s+into|update\s+\w+\s+\w*\s*set|delete\s+from)\b", re.I)


def _jobs(node: Any) -> Iterator[dict[str, Any]]:
    """Every distributed job of a Citus plan (JSON), subplans included."""
    if isinstance(node, dict):
        job = node.get("Job")
        if isinstance(job, dict) and "Task Count" in job:
            yield job
        for value in node.values():
            yield from _jobs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _jobs(value)


async def _task_counts(db: asyncpg.Connection, query: str, args: tuple[Any, ...]) -> list[int]:
    """The task count of every distributed job of `query`'s plan with these arguments, its
    subplans' included (no job: the statement only calls a function, e.g. `select * from
    recall_token_reader(…)`, whose own statements the multi-task guard covers)."""
    raw = await db.fetchval(f"explain (format json) {query}", *args)
    plan = json.loads(raw) if isinstance(raw, str) else raw
    return [job["Task Count"] for job in _jobs(plan)]


async def assert_router_plans(
    db: asyncpg.Connection, statements: list[tuple[str, tuple[Any, ...]]], surface: str
) -> None:
    assert statements, f"{surface}: no statement was recorded"
    distributed = 0
    for query, args in statements:
        try:
            counts = await _task_counts(db, query, args)
        except asyncpg.PostgresError as e:
            raise AssertionError(f"{surface}: cannot plan {query}\nargs: {args!r}: {e}") from e
        distributed += bool(counts)
        assert all(c == 1 for c in counts), (
            f"{surface}: a statement is planned as {counts} tasks (one per job expected):\n"
            f"{query}\nargs: {args!r}"
        )
        if "@@" in query or not _WRITES.search(query):
            assert len(counts) <= 1, (
                f"{surface}: a search or read is planned as {len(counts)} jobs (one router query"
                f" expected):\n{query}\nargs: {args!r}"
            )
    assert distributed, f"{surface}: no recorded statement reads a distributed table"
    # One worker: the one holding the workspace's shard group. A statement Citus split into
    # subplans sends their results to every worker (and commits on all of them): with any
    # worker down, the surface would fail for every workspace (docs/scale.md, A worker lost).
    workers = await _workers(db)
    reached = _servers.take() & workers
    assert len(reached) == 1, f"{surface}: the statements reached the workers {sorted(reached)}"


async def _workers(db: asyncpg.Connection) -> set[str]:
    """host:port of every worker (the coordinator's own connections to itself are not)."""
    rows = await db.fetch("select nodename, nodeport from pg_dist_node where groupid > 0")
    return {f"{r['nodename']}:{r['nodeport']}" for r in rows}


async def test_every_statement_of_message_search_is_a_router_query(
    db: asyncpg.Connection, recorded: tuple[GraphQLClient, Recorder], issue_token: Any
) -> None:
    client, recorder = recorded
    await load_personas(db)
    alice = await issue_token("member", "acme", "alice")
    carol = await issue_token("member", "acme", "carol")
    _forget(recorder)  # the set-up's statements are not the surface's
    first = await search(client, alice, "Acme", first=2)
    assert first["edges"] and first["pageInfo"]["hasNextPage"]
    await search(client, alice, "Acme", first=2, after=first["pageInfo"]["endCursor"])
    await search(client, alice, '"Acme migration"')
    await search(client, alice, "Friday", scope=await gid(db, "Scope", "general"))
    await search(client, alice, "Acme", author=author("MEMBER", await gid(db, "Member", "bob")))
    await search(client, alice, "Acme", since="2026-03-01T00:00:00Z", until="2026-04-01T00:00:00Z")
    await search(client, carol, "Acme")  # a reader who may see little: the low-visibility walk
    # Operators: their values' lookups (people, conversations, the viewer's DMs) and a query
    # of operators only.
    await search(client, alice, 'Acme from:@bob from:"Sam" -in:#secret in:@helper')
    await search(client, alice, "from:me in:#general since:2026-03-01 -agents-of:me")
    await assert_router_plans(db, recorder.take(), "messageSearch")


async def test_every_statement_of_a_turn_is_a_router_query(
    db: asyncpg.Connection, recorded: tuple[GraphQLClient, Recorder], issue_token: Any
) -> None:
    """startTurn, historySearch (both pages, the ledger and audit writes) and postReply,
    delivered and withheld."""
    client, recorder = recorded
    await load_history_personas(db)
    _forget(recorder)
    turn = await start_turn(client, db, issue_token, scope="dm-alice", requester="alice")
    await assert_router_plans(db, recorder.take(), "startTurn")

    first = await history_search(client, turn, "Acme", first=2)
    assert first["edges"] and first["pageInfo"]["hasNextPage"], first
    await history_search(client, turn, "Acme", first=2, after=first["pageInfo"]["endCursor"])
    await history_search(client, turn, "Friday migration", speaker="REQUESTER")
    await assert_router_plans(db, recorder.take(), "historySearch")

    delivered = await client.gql(REPLY, {"body": "Moving Acme on Friday."}, token=turn)
    assert delivered["postReply"]["delivered"] is True, delivered
    # In bob's DM, a reply after searching what only alice may read is withheld.
    secret_turn = await start_turn(client, db, issue_token, scope="dm-bob", requester="bob")
    await history_search(client, secret_turn, "Acme")
    await client.gql(REPLY, {"body": "Noted."}, token=secret_turn)
    await assert_router_plans(db, recorder.take(), "postReply")


async def test_every_statement_of_the_applier_is_a_router_query(
    db: asyncpg.Connection, recorded: tuple[GraphQLClient, Recorder]
) -> None:
    """applyChanges with a change of every kind, then a batch of posts (the set-based path)."""
    client, recorder = recorded
    await load_personas(db)
    connector = Connector(client, await issue_connector_token(db, "acme"))
    _forget(recorder)
    for change in every_kind_of_change():
        await connector.apply(change)
    await connector.apply(
        *(post(f"batch-{i}", "general", "bob", f"batch note {i}") for i in range(5))
    )
    await assert_router_plans(db, recorder.take(), "applyChanges")


async def test_every_statement_of_linked_identities_is_a_router_query(
    db: asyncpg.Connection, recorded: tuple[GraphQLClient, Recorder], issue_token: Any
) -> None:
    """The link flow (start, a refusal, confirm, approve, list, revoke) and the link check inside the
    allowed audiences: B's messageSearch, a turn in B's DM with speaker REQUESTER, a reply,
    and the connector's revocation (docs/identity.md)."""
    client, recorder = recorded
    await load(db, linked_acme())
    alice = await issue_token("member", "acme", "alice")
    web = await issue_token("member", "acme", "alice-web")
    bob = await issue_token("member", "acme", "bob")
    connector = Connector(client, await issue_connector_token(db, "acme"))
    _forget(recorder)
    code = await start_code(client, alice)
    refused = await client.post(CONFIRM_LINK, {"code": code}, token=bob)
    assert refused.codes == ["BAD_USER_INPUT"], refused.body
    made = await approve(client, alice, (await confirm(client, web, code))["id"])
    await client.gql(LINKS_OF, token=web)
    await assert_router_plans(
        db, recorder.take(), "startIdentityLink/confirmIdentityLink/approveIdentityLink"
    )

    assert "da1" in [e["node"]["key"] for e in (await search(client, web, "zebra"))["edges"]]
    turn = await start_turn(client, db, issue_token, scope="web-dm", requester="alice-web")
    _forget(recorder)
    found = await history_search(client, turn, "zebra", speaker="REQUESTER")
    assert found["edges"], found
    await client.gql(REPLY, {"body": "zebra noted"}, token=turn)
    await assert_router_plans(db, recorder.take(), "the link check")

    await revoke(client, web, made["id"])
    await link(client, alice, web)
    await connector.apply(keyed("revokeIdentityLinks", "alice"))
    await connector.apply({"upsertMember": {"key": "dora", "namespace": "web:acme"}})
    await assert_router_plans(db, recorder.take(), "revocation")
