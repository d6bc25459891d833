"""Prometheus metrics, served at /metrics (docs/operations.md, Metrics).

One registry per process (not the client library's global one, so tests can build several
apps). Label values are bounded: operations are root-field names the schema validated (anything
else is "invalid"), outcomes a closed set of error codes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from functools import lru_cache

import asyncpg
from graphql import FieldNode, OperationDefinitionNode, parse
from graphql.error import GraphQLError
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

_log = logging.getLogger("recall.metrics")

REGISTRY = CollectorRegistry(auto_describe=True)

# Search requests sit between 1 ms and a few hundred; a second is already an outage.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

REQUESTS = Counter(
    "recall_requests",
    "GraphQL requests by operation (root fields) and outcome (ok or the first error code)",
    ["operation", "outcome"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "recall_request_duration_seconds",
    "GraphQL request latency, from the first byte in to the last byte out",
    ["operation"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
SQL_SECONDS = Histogram(
    "recall_sql_duration_seconds",
    "Time a GraphQL request spent waiting on its SQL statements (round trips included)",
    ["operation"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
SQL_STATEMENTS = Counter(
    "recall_sql_statements",
    "SQL statements run by GraphQL requests",
    ["operation"],
    registry=REGISTRY,
)
POOL_WAITING = Gauge(
    "recall_pool_waiting",
    "Requests waiting for a pooled database connection",
    registry=REGISTRY,
)
LIVE_SUBSCRIPTIONS = Gauge(
    "recall_live_subscriptions",
    "Open live subscriptions (GraphQL subscriptions, docs/live.md) of this process",
    registry=REGISTRY,
)
LIVE_READS = Counter(
    "recall_live_reads",
    "Statements live push sent to decide subscribers' updates (docs/live.md), by what they read:"
    " log and sift (once per commit and process), token and admission (once per token, search"
    " and wake-up, for the subscribers the commit may concern)",
    ["what"],
    registry=REGISTRY,
)
CHANGES = Counter(
    "recall_changes_applied",
    "Live changes through the applier (applyChanges, recall apply), by result",
    ["result"],
    registry=REGISTRY,
)
CHANGE_BATCHES = Counter(
    "recall_change_batches",
    "Committed applyChanges calls and recall apply batches",
    registry=REGISTRY,
)
REJECTIONS = Counter(
    "recall_rejections",
    "Requests refused by a limit, by limit",
    ["limit"],
    registry=REGISTRY,
)
MCP_TOOL_CALLS = Counter(
    "recall_mcp_tool_calls",
    "MCP tool calls (app.mcp) by tool and outcome (ok or the lower-cased error code)",
    ["tool", "outcome"],
    registry=REGISTRY,
)
SEARCH_READY = Gauge(
    "recall_search_ready",
    "1 when a workspace's search is ready (docs/design.md, Readiness), 0 otherwise",
    ["workspace"],
    registry=REGISTRY,
)

RETRIES = Counter(
    "recall_database_retries",
    "Units of database work (a statement, or a whole transaction) run again inside the request"
    " after the database rolled them back for a reason that passes (app.data.retry), by reason:"
    " conflict (a deadlock or serialization failure) or shard_moved (Citus moved or split the"
    " shard a statement waited on)",
    ["reason"],
    registry=REGISTRY,
)
TEXT_REMOVED = Counter(
    "recall_text_removed_messages",
    "Deleted messages whose text and search document were removed, by when: right after the"
    " batch that deleted them (batch) or by recall serve's background removal (background)",
    ["when"],
    registry=REGISTRY,
)
TEXT_REMOVAL_PENDING = Gauge(
    "recall_text_removal_pending",
    "Deleted messages whose text is still stored (hidden everywhere, removal pending), read at"
    " scrape time",
    registry=REGISTRY,
)


def observe_request(
    operation: str, outcome: str, seconds: float, sql_seconds: float, statements: int
) -> None:
    REQUESTS.labels(operation, outcome).inc()
    REQUEST_SECONDS.labels(operation).observe(seconds)
    if statements:
        SQL_SECONDS.labels(operation).observe(sql_seconds)
        SQL_STATEMENTS.labels(operation).inc(statements)


def observe_tool_call(tool: str, outcome: str) -> None:
    """One MCP tool call; `tool` is one of the server's tool names (else "unknown"), `outcome`
    `ok` or an error code of app.errors (lower-cased, as recall_requests' outcomes)."""
    MCP_TOOL_CALLS.labels(tool, outcome.lower()).inc()


def observe_applied(applied: int, unchanged: int) -> None:
    """A batch of live changes committed."""
    CHANGE_BATCHES.inc()
    if applied:
        CHANGES.labels("applied").inc(applied)
    if unchanged:
        CHANGES.labels("unchanged").inc(unchanged)


def observe_rejection(limit: str) -> None:
    REJECTIONS.labels(limit).inc()


# The request-time limits of app.api.schema, by the messages graphql-core / strawberry give.
_LIMIT_MESSAGES = (
    ("exceeds maximum operation depth", "depth"),
    ("aliases found. Allowed", "aliases"),
    ("Document contains more than", "tokens"),
)


def limit_of(error: GraphQLError) -> str | None:
    """Which request limit a request error reports, if it is one."""
    original = error.original_error
    measures = getattr(original, "measures", None)  # app.api.limits.QueryTooComplex
    if isinstance(measures, dict):
        for name in ("depth", "aliases", "cost"):
            if name in measures:
                return name
    message = error.message
    for needle, limit in _LIMIT_MESSAGES:
        if needle in message:
            return limit
    return None


@lru_cache(maxsize=512)
def operation_label(document: str | None, operation_name: str | None) -> str:
    """ "query:messageSearch", "mutation:postReply", "query:searchStatus+viewer": the operation
    type and root field names (not aliases) of the operation that runs; "invalid" when the
    document does not parse or names no such operation. Only validated requests keep it (the
    middleware turns a request error into "invalid"), so labels stay within the schema."""
    if not document:
        return "invalid"
    try:
        tree = parse(document, no_location=True, max_tokens=4000)
    except GraphQLError:
        return "invalid"
    operations = [d for d in tree.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        operations = [o for o in operations if o.name and o.name.value == operation_name]
    if len(operations) != 1:
        return "invalid"
    op = operations[0]
    fields = sorted({s.name.value for s in op.selection_set.selections if isinstance(s, FieldNode)})
    if not fields or len(fields) > 4:
        return f"{op.operation.value}:{'multiple' if fields else 'none'}"
    return f"{op.operation.value}:{'+'.join(fields)}"


class _PoolCollector(Collector):
    """Connections of the process's pools (app.db.Pools: custom, generic), read at scrape
    time."""

    def __init__(self) -> None:
        self.pools: dict[str, asyncpg.Pool] = {}

    def collect(self) -> Iterable[Metric]:
        if not self.pools:
            return
        family = GaugeMetricFamily(
            "recall_pool_connections",
            "Connections of the asyncpg pools, by pool (custom, generic) and state (in_use, "
            "idle, max)",
            labels=["pool", "state"],
        )
        for name, pool in self.pools.items():
            size, idle = pool.get_size(), pool.get_idle_size()
            family.add_metric([name, "in_use"], size - idle)
            family.add_metric([name, "idle"], idle)
            family.add_metric([name, "max"], pool.get_max_size())
        yield family


_POOL = _PoolCollector()
REGISTRY.register(_POOL)


def watch_pools(pools: dict[str, asyncpg.Pool]) -> None:
    _POOL.pools = dict(pools)


async def refresh_search_readiness(pool: asyncpg.Pool) -> None:
    """Read every workspace's readiness into SEARCH_READY (one cheap statement per scrape)."""
    try:
        async with pool.acquire(timeout=2) as conn:
            rows = await asyncio.wait_for(
                conn.fetch(
                    """
                    select w.key, coalesce(r.migrated and r.backfilled and r.finalized
                                           and r.read_ready, false) as ready
                    from workspaces w
                    left join search_readiness r on r.workspace_id = w.id
                    """
                ),
                timeout=2,
            )
    except (OSError, asyncpg.PostgresError, TimeoutError, asyncpg.InterfaceError) as e:
        _log.warning("search readiness unavailable for /metrics", extra={"error": type(e).__name__})
        return
    SEARCH_READY.clear()
    for row in rows:
        SEARCH_READY.labels(row["key"]).set(1 if row["ready"] else 0)


def observe_text_removed(when: str, messages: int) -> None:
    """`messages` deleted messages' text removed, `when` batch or background."""
    TEXT_REMOVED.labels(when).inc(messages)


async def refresh_text_removal_pending(pool: asyncpg.Pool) -> None:
    """Read how many deleted messages still hold their text into TEXT_REMOVAL_PENDING (one
    statement per scrape, over a partial index that is normally empty: migrations/023)."""
    try:
        async with pool.acquire(timeout=2) as conn:
            pending = await asyncio.wait_for(
                conn.fetchval("select count(*) from messages where deleted and body <> ''"),
                timeout=2,
            )
    except (OSError, asyncpg.PostgresError, TimeoutError, asyncpg.InterfaceError) as e:
        _log.warning(
            "pending text removal unavailable for /metrics", extra={"error": type(e).__name__}
        )
        return
    TEXT_REMOVAL_PENDING.set(pending)


def exposition() -> tuple[bytes, str]:
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
