"""The SQL floor and the baselines messageSearch is measured against (bench.run): each with the
app's own eligibility fragment, so it pays for exactly the rule the app applies."""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from app.data.eligibility import eligible
from bench.harness import Stats, stats

# $1-$4 are the destination (app.data.eligibility's convention); eligibility is the app's own
# fragment, so the floor and the baselines pay for exactly the rule the app applies.
ELIGIBLE = eligible("m")
AUTHOR = "and {alias}.author_id = any($6::bigint[])"
FLOOR_SQL = f"""
select d.message_id from search_documents d
join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id
where d.workspace_id = $1 and d.tsv @@ recall_search_tsquery($5::text[], '{{}}', false)
  {{author}} and {ELIGIBLE}
order by d.global_seq desc, d.scope_id, d.seq desc, d.message_id
limit 20"""
RANK_SQL = f"""
select d.message_id, ts_rank_cd(d.tsv, q) as rank
from search_documents d
join messages m on m.workspace_id = d.workspace_id and m.id = d.message_id,
     recall_search_tsquery($5::text[], '{{}}', false) q
where d.workspace_id = $1 and d.tsv @@ q {{author}} and {ELIGIBLE}
order by rank desc, d.global_seq desc
limit 20"""
ILIKE_SQL = f"""
select m.id from messages m
where m.workspace_id = $1 and m.body ilike '%' || $5 || '%' {{author}} and {ELIGIBLE}
order by m.global_seq desc
limit 20"""
EXPR_SQL = f"""
select m.id from messages m
where m.workspace_id = $1
  and recall_document_tsvector(m.body) @@ recall_search_tsquery($5::text[], '{{}}', false)
  {{author}} and {ELIGIBLE}
order by m.global_seq desc
limit 20"""
EXPR_INDEX = (
    "create index if not exists bench_messages_expr_tsv on messages"
    " using gin (recall_document_tsvector(body))"
)
HYDRATE_ONE = "select id, key, body, created_at, scope_id, author_id from messages where workspace_id = $1 and id = $2"


async def time_sql(
    conn: asyncpg.Connection, sql: str, args: list[Any], reps: int
) -> tuple[Stats, int]:
    latencies: list[float] = []
    hits = 0
    try:
        await conn.fetch(sql, *args)  # warm
        for _ in range(reps):
            t = time.perf_counter()
            rows = await conn.fetch(sql, *args)
            latencies.append((time.perf_counter() - t) * 1000)
            hits = len(rows)
    except asyncpg.PostgresError as e:
        return Stats(errors=1, error=f"{type(e).__name__}: {e}"), 0
    s = stats(latencies, 0, None)
    s.hits = hits
    return s, hits


async def time_n_plus_one(conn: asyncpg.Connection, sql: str, args: list[Any], reps: int) -> Stats:
    """The floor query, then one statement per hit (naive per-hit hydration)."""
    latencies: list[float] = []
    try:
        for _ in range(reps + 1):
            t = time.perf_counter()
            ids = [r[0] for r in await conn.fetch(sql, *args)]
            for i in ids:
                await conn.fetchrow(HYDRATE_ONE, args[0], i)
            latencies.append((time.perf_counter() - t) * 1000)
    except asyncpg.PostgresError as e:
        return Stats(errors=1, error=f"{type(e).__name__}: {e}")
    s = stats(latencies[1:], 0, None)
    s.statements = 1 + len(ids)
    return s
