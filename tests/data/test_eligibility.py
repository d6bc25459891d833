"""The rules of app.data.eligibility (their one definition) at the SQL level: the audience
truth table and the lineage walk with its caps (501 inputs, 5,000 nodes, 500 history ids per
node), each of which must deny the whole read on overflow; and that the database holds no
second copy of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import pytest

from app.data.eligibility import (
    ALLOWED_AUDIENCE_IDS,
    allows,
    lineage_summary,
    lineage_walk_allows,
)
from app.data.lineage import _fill, cache_summaries
from tests.message_search_support import keys, workspace
from tests.personas import load
from tests.rows import one

NS, OTHER_NS = 1, 2
A, B, C = 10, 11, 12


TRUTH_TABLE: list[tuple[tuple[Any, Any, Any], tuple[Any, Any, Any], bool]] = [
    # public: anywhere, even another namespace or an external room with no readers.
    (("public", None, []), ("workspace", NS, []), True),
    (("public", None, []), ("members", OTHER_NS, [A]), True),
    (("public", None, []), ("external", NS, []), True),
    # workspace(ns): its namespace's workspace and member audiences only.
    (("workspace", NS, []), ("workspace", NS, []), True),
    (("workspace", NS, []), ("members", NS, [A]), True),
    (("workspace", NS, []), ("external", NS, [A]), False),
    (("workspace", NS, []), ("workspace", OTHER_NS, []), False),
    (("workspace", NS, []), ("members", OTHER_NS, [A]), False),
    # members(ns, R): non-empty D ⊆ R, same namespace, members or external.
    (("members", NS, [A, B]), ("members", NS, [A]), True),
    (("members", NS, [A, B]), ("members", NS, [A, B]), True),
    (("members", NS, [A, B]), ("external", NS, [B]), True),
    (("members", NS, [A, B]), ("members", NS, [A, C]), False),
    (("members", NS, [A, B]), ("members", NS, []), False),
    (("members", NS, [A, B]), ("external", NS, []), False),
    (("members", NS, [A, B]), ("workspace", NS, []), False),
    (("members", NS, [A, B]), ("members", OTHER_NS, [A]), False),
    # Unknown or missing facts fail closed.
    (("external", NS, [A]), ("members", NS, [A]), False),
    ((None, NS, [A]), ("members", NS, [A]), False),
    (("workspace", NS, []), ("members", None, [A]), False),
    (("members", NS, [A]), ("members", NS, None), False),
    (("members", NS, None), ("members", NS, [A]), False),
    (("workspace", NS, []), ("nowhere", NS, [A]), False),
]


async def test_audience_truth_table(db: asyncpg.Connection) -> None:
    wrong = []
    for origin, destination, allowed in TRUTH_TABLE:
        result = await db.fetchval(
            f"select {allows('o', '$4::text', '$5::bigint', '$6::bigint[]')} from (select $1::text as kind,"
            " $2::bigint as namespace_id, $3::bigint[] as readers) o",
            *origin,
            *destination,
        )
        if result is not allowed:
            wrong.append((origin, destination, result))
    assert wrong == []


@dataclass
class Lab:
    ws: int
    ns: int
    scope: int
    author: int
    ann: int
    ben: int
    public_audience: int
    ben_audience: int
    next_seq: int = 1_000_000

    def destination(self, who: int) -> tuple[str, int, list[int]]:
        return ("members", self.ns, [who])


@pytest.fixture
async def lab(db: asyncpg.Connection) -> Lab:
    await load(db, workspace([("m1", "room", "ann", "hello"), ("d1", "dm-ben", "ben", "hi")]))
    row = one(
        await db.fetchrow(
            """
        select w.id as ws, w.default_namespace_id as ns, s.id as scope,
               s.origin_audience_id as public_audience, d.origin_audience_id as ben_audience,
               ann.id as ann, ben.id as ben
        from workspaces w
        join scopes s on s.workspace_id = w.id and s.key = 'room'
        join scopes d on d.workspace_id = w.id and d.key = 'dm-ben'
        join actors ann on ann.workspace_id = w.id and ann.key = 'ann'
        join actors ben on ben.workspace_id = w.id and ben.key = 'ben'
        where w.key = 'lab'
        """
        )
    )
    return Lab(
        row["ws"],
        row["ns"],
        row["scope"],
        row["ann"],
        row["ann"],
        row["ben"],
        row["public_audience"],
        row["ben_audience"],
    )


async def _messages(
    db: asyncpg.Connection, lab: Lab, n: int, *, audience: int | None = None
) -> list[int]:
    """n new messages in the public room (or with the given audience), by direct insert."""
    start = lab.next_seq
    lab.next_seq += n
    rows = await db.fetch(
        """
        insert into messages (workspace_id, key, scope_id, seq, global_seq, author_id, body,
                              created_at, audience_id)
        select $1, 'bulk-' || i, $2, i, i, $3, 'bulk lineage node ' || i, now(), $4
        from generate_series($5::int, $6::int) as i
        returning id
        """,
        lab.ws,
        lab.scope,
        lab.author,
        audience or lab.public_audience,
        start,
        start + n - 1,
    )
    return [r["id"] for r in rows]


async def _cite(db: asyncpg.Connection, lab: Lab, message: int, sources: list[int]) -> None:
    await db.execute(
        "insert into message_sources (workspace_id, message_id, source_message_id)"
        " select $1, $2, unnest($3::bigint[])",
        lab.ws,
        message,
        sources,
    )
    await db.execute(
        "update messages set has_provenance = true where workspace_id = $1 and id = $2",
        lab.ws,
        message,
    )


async def _allowed(db: asyncpg.Connection, lab: Lab, ids: list[int] | None, who: int) -> bool:
    result: bool = await db.fetchval(
        f"select {lineage_walk_allows('$5::bigint[]', ALLOWED_AUDIENCE_IDS)}",
        lab.ws,
        *lab.destination(who),
        ids,
    )
    return result


async def test_lineage_input_cap_is_501(db: asyncpg.Connection, lab: Lab) -> None:
    ids = await _messages(db, lab, 502)
    assert await _allowed(db, lab, ids[:501], lab.ann) is True
    assert await _allowed(db, lab, ids, lab.ann) is False
    assert await _allowed(db, lab, [], lab.ann) is True
    assert await _allowed(db, lab, None, lab.ann) is False


async def test_lineage_node_cap_is_5000(db: asyncpg.Connection, lab: Lab) -> None:
    # root → 10 branches → 4,989 leaves: exactly 5,000 nodes.
    root, *branches = await _messages(db, lab, 11)
    leaves = await _messages(db, lab, 4_990)
    await _cite(db, lab, root, branches)
    for i, branch in enumerate(branches):
        await _cite(db, lab, branch, leaves[i * 499 : (i + 1) * 499 - (1 if i == 9 else 0)])
    assert await _allowed(db, lab, [root], lab.ann) is True
    # One more leaf: 5,001 nodes, and the whole read is denied.
    await _cite(db, lab, branches[9], [leaves[-1]])
    assert await _allowed(db, lab, [root], lab.ann) is False


async def test_lineage_memories_count_toward_the_node_cap(db: asyncpg.Connection, lab: Lab) -> None:
    root, *branches = await _messages(db, lab, 11)
    leaves = await _messages(db, lab, 4_989)
    await _cite(db, lab, root, branches)
    for i, branch in enumerate(branches):
        await _cite(db, lab, branch, leaves[i * 499 : (i + 1) * 499])
    assert await _allowed(db, lab, [root], lab.ann) is True
    memory = await db.fetchval(
        "insert into memories (workspace_id, key, audience_id) values ($1, 'mem', $2) returning id",
        lab.ws,
        lab.public_audience,
    )
    await db.execute(
        "insert into message_memory_sources (workspace_id, message_id, memory_id)"
        " values ($1, $2, $3)",
        lab.ws,
        leaves[0],
        memory,
    )
    assert await _allowed(db, lab, [root], lab.ann) is False


async def test_lineage_history_cap_is_500_per_node(db: asyncpg.Connection, lab: Lab) -> None:
    root, *sources = await _messages(db, lab, 502)
    await _cite(db, lab, root, sources[:500])
    assert await _allowed(db, lab, [root], lab.ann) is True
    await _cite(db, lab, root, sources[500:])
    assert await _allowed(db, lab, [root], lab.ann) is False


async def test_a_walk_reads_its_own_edges_not_the_workspaces(
    db: asyncpg.Connection, lab: Lab
) -> None:
    """Summarising N replies reads O(N) edges. The per-node cap check once joined `nodes` to
    every edge of the workspace, per walk: quadratic in the workspace's replies (an import of
    200k messages spent 6.4 s there, 1M messages minutes)."""
    replies = await _messages(db, lab, 600)
    sources = await _messages(db, lab, 600)
    for reply, source in zip(replies, sources, strict=True):
        await _cite(db, lab, reply, [source])
    await db.execute("analyze messages, message_sources")
    edges_read = await _rows_read_by_walks(db, lab, replies, "message_sources")
    # Each walk: its root's one edge, its source's none, and the cap's probe of both nodes.
    assert edges_read <= 4 * len(replies)


async def test_a_walk_reads_its_own_memory_edges_not_the_workspaces(
    db: asyncpg.Connection, lab: Lab
) -> None:
    """The memories a lineage used are probed per node. Joined to every memory edge of the
    workspace instead, the planner hashed them all once per walk: at 1M messages (1,263 memory
    edges) that was 0.14 of each walk's 0.17 ms, 3.5 s of the importer's summaries."""
    replies = await _messages(db, lab, 600)
    memories = await db.fetch(
        "insert into memories (workspace_id, key, audience_id)"
        " select $1, 'mem-' || i, $2 from generate_series(1, 600) as i returning id",
        lab.ws,
        lab.public_audience,
    )
    await db.execute(
        "insert into message_memory_sources (workspace_id, message_id, memory_id)"
        " select $1, unnest($2::bigint[]), unnest($3::bigint[])",
        lab.ws,
        replies,
        [m["id"] for m in memories],
    )
    await db.execute("update messages set has_provenance = true where id = any($1)", replies)
    await db.execute("analyze messages, memories, message_memory_sources")
    edges_read = await _rows_read_by_walks(db, lab, replies, "message_memory_sources")
    assert edges_read <= 2 * len(replies)


async def _rows_read_by_walks(
    db: asyncpg.Connection, lab: Lab, roots: list[int], table: str
) -> int:
    """Rows of `table` the importer's summaries of `roots` read (EXPLAIN ANALYZE, summed over
    every node that scans the table)."""
    plan = await db.fetchval(
        "explain (analyze, format json) " + _fill("unnest($2::bigint[]) as r(id)"),
        lab.ws,
        roots,
    )
    explained = json.loads(plan) if isinstance(plan, str) else plan
    return sum(
        node["Actual Rows"] * node["Actual Loops"]
        for node in _plan_nodes(explained[0]["Plan"])
        if node.get("Relation Name") == table
    )


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


async def test_a_private_source_deep_in_the_lineage_denies(
    db: asyncpg.Connection, lab: Lab
) -> None:
    (secret,) = await _messages(db, lab, 1, audience=lab.ben_audience)
    a, b, c = await _messages(db, lab, 3)
    await _cite(db, lab, a, [b])
    await _cite(db, lab, b, [c])
    await _cite(db, lab, c, [secret])
    assert await _allowed(db, lab, [a], lab.ben) is True
    assert await _allowed(db, lab, [a], lab.ann) is False


async def test_unknown_provenance_denies(db: asyncpg.Connection, lab: Lab) -> None:
    assert await _allowed(db, lab, [987_654_321], lab.ann) is False


async def test_search_hides_a_reply_whose_lineage_overflows(
    client: Any, db: asyncpg.Connection, lab: Lab, issue_token: Any
) -> None:
    bounded, overflowing, *sources = await _messages(db, lab, 503)
    for pk, body in ((bounded, "bounded summary"), (overflowing, "overflowing summary")):
        await db.execute(
            "update messages set body = $3 where workspace_id = $1 and id = $2", lab.ws, pk, body
        )
    await _cite(db, lab, bounded, sources[:500])
    await _cite(db, lab, overflowing, sources)
    token = await issue_token("member", "lab", "ann")
    assert await keys(client, token, "summary") == [f"bulk-{lab.next_seq - 503}"]


async def test_cached_summaries_equal_the_live_walk_at_every_cap(
    db: asyncpg.Connection, lab: Lab
) -> None:
    """The cache fill (app.data.lineage) must store exactly what the live walk says, the caps
    included."""
    root, *branches = await _messages(db, lab, 11)
    leaves = await _messages(db, lab, 4_990)
    await _cite(db, lab, root, branches)
    for i, branch in enumerate(branches):
        await _cite(db, lab, branch, leaves[i * 499 : (i + 1) * 499 - (1 if i == 9 else 0)])
    over_the_node_cap, wide, deep_a, deep_b = await _messages(db, lab, 4)
    await _cite(db, lab, over_the_node_cap, [root, leaves[-1]])  # 5,001 nodes
    await _cite(db, lab, wide, leaves[:501])  # one node citing 501
    (secret,) = await _messages(db, lab, 1, audience=lab.ben_audience)
    await _cite(db, lab, deep_a, [deep_b])
    await _cite(db, lab, deep_b, [secret])
    memory = await db.fetchval(
        "insert into memories (workspace_id, key, audience_id) values ($1, 'mem', $2) returning id",
        lab.ws,
        lab.ben_audience,
    )
    await db.execute(
        "insert into message_memory_sources (workspace_id, message_id, memory_id)"
        " values ($1, $2, $3)",
        lab.ws,
        deep_b,
        memory,
    )
    cited = [root, *branches, over_the_node_cap, wide, deep_a, deep_b]
    await cache_summaries(db, lab.ws, cited)
    rows = await db.fetch(
        "select id, lineage_audience_ids as cached, lineage_denied as denied from messages"
        " where workspace_id = $1 and id = any($2::bigint[])",
        lab.ws,
        cited,
    )
    assert len(rows) == len(cited)
    for r in rows:
        # The live walk, one statement per message.
        live = await db.fetchrow(
            f"select * from {lineage_summary('array[$2::bigint]')} s", lab.ws, r["id"]
        )
        assert live is not None
        assert sorted(r["cached"]) == sorted(live["audience_ids"]), r
        assert r["denied"] == live["denied"], r
    denied = {r["id"] for r in rows if r["denied"]}
    assert denied == {over_the_node_cap, wide}
    audiences = {r["id"]: set(r["cached"]) for r in rows}
    assert lab.ben_audience in audiences[deep_a] and lab.ben_audience not in audiences[root]


async def test_a_request_reuses_exactly_the_allowed_audiences_it_computed(
    dsn: str, db: asyncpg.Connection, lab: Lab
) -> None:
    """The first eligibility statement of a request reports the destination's allowed
    audiences and later statements of the same request take them as a parameter: what they
    take must be exactly the allowed audiences, for that destination only, for that request
    only (the session is the request's)."""
    from app.data.audit import SearchAudit
    from app.data.message_search.inputs import CandidateQuery
    from app.data.message_search.statement import search_page
    from app.data.session import Session
    from app.db import create_pool

    await _messages(db, lab, 3)
    ben = (lab.ws, "members", lab.ns, [lab.ben])
    ann = (lab.ws, "members", lab.ns, [lab.ann])
    audit = SearchAudit("message_search", lab.ben, None, "", {}, {})
    pool = await create_pool(dsn, min_size=1, max_size=1)
    try:
        session = Session(pool)
        assert session.allowed_audiences(ben) is None

        async def search() -> list[int]:
            page = await search_page(
                session,
                CandidateQuery(ben, ["bulk"], []),
                after=None,
                first=10,
                budget=10,
                audit=audit,
            )
            return [h.candidate.message_id for h in page.hits]

        computed = await search()
        expected = await db.fetchval(f"select {ALLOWED_AUDIENCE_IDS}", *ben)
        assert sorted(session.allowed_audiences(ben) or []) == sorted(expected)
        assert lab.ben_audience in expected
        assert session.allowed_audiences(ann) is None  # another destination: nothing reused
        # The next statement takes them as its parameter and decides exactly as computing them.
        assert await search() == computed
        assert sorted(session.allowed_audiences(ben) or []) == sorted(expected)
        await session.close()
        assert Session(pool).allowed_audiences(ben) is None  # another request: nothing kept
    finally:
        await pool.close()


async def test_the_database_holds_no_second_copy_of_the_rules(db: asyncpg.Connection) -> None:
    """app.data.eligibility is the only text of eligibility: the SQL functions that copied it
    (migrations/002, 008, 019) were dropped by migrations/027, and none may come back beside
    it — a rule written twice is fixed one day in only one copy. (schema.sql, drift-checked,
    shows every function the database holds.)"""
    copies = await db.fetch(
        "select proname from pg_proc where pronamespace = 'public'::regnamespace and (proname"
        " ~ '^recall_(audience_allows|allowed_audiences|lineage_(allowed|summary)|cache_lineage)'"
        " or (prorettype <> 'trigger'::regtype and prosrc ~ 'from audiences'))"
    )
    assert [r["proname"] for r in copies] == []
