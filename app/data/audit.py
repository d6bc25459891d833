"""Search audit rows (docs/design.md, Audit): one per search, written before its result is
shown: a search whose audit row cannot be written fails and shows nothing.

The query is recorded only as a keyed digest — HMAC-SHA256 under a subkey derived from
RECALL_MASTER_KEY — so short keyword queries cannot be recovered by hashing guesses. Without a
master key the digest is empty. The query text is never stored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.data.executor import Executor
from app.data.params import Params

_SUBKEY_LABEL = b"recall/search-audit/v1"


def query_digest(master_key: str | None, normalized_query: str) -> str:
    if not master_key:
        return ""
    subkey = hmac.new(master_key.encode(), _SUBKEY_LABEL, hashlib.sha256).digest()
    return hmac.new(subkey, normalized_query.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class SearchAudit:
    """An audit row's own fields; what it selected and excluded comes from the statement."""

    surface: str
    actor_id: int
    turn_id: int | None
    query_digest: str
    filters: Mapping[str, Any]
    destination: Mapping[str, Any]


def audit_insert(p: Params, audit: SearchAudit, *, selected: str, exclusions: str) -> str:
    """The audit row's INSERT ... VALUES, which Citus routes to the workspace's shard as it is:
    `selected` and `exclusions` are SQL expressions (bound values); the rest is bound here ($1
    is the workspace, as in every search statement). historySearch's audit row is written with
    the same columns by migrations/035's recall_record_shown (app.data.turns.record_shown),
    with its ledger, in one statement."""
    values = (
        f"$1, {p.add(audit.surface, 'text')}, {p.add(audit.actor_id, 'bigint')},"
        f" {p.add(audit.turn_id, 'bigint')}, {p.add(audit.query_digest, 'text')},"
        f" {p.add(dict(audit.filters), 'jsonb')}, {p.add(dict(audit.destination), 'jsonb')},"
        f" {selected}, {exclusions}"
    )
    return (
        "insert into search_audit (workspace_id, surface, actor_id, turn_id, query_digest,"
        f" filters, destination, selected, exclusions) values ({values}) returning id"
    )


async def write_audit(
    db: Executor,
    workspace_id: int,
    audit: SearchAudit,
    *,
    selected: Sequence[Mapping[str, Any]],
    exclusions: Mapping[str, int],
) -> int:
    """The audit row of a search whose result is decided, as its own statement (on Citus an
    INSERT ... SELECT inside the search's statement would split that statement into
    subplans: docs/scale.md)."""
    p = Params([workspace_id])
    sql = audit_insert(
        p,
        audit,
        selected=p.add([dict(s) for s in selected], "jsonb"),
        exclusions=p.add(dict(exclusions), "jsonb"),
    )
    audit_id: int = await db.fetchval(sql, *p.values)
    return audit_id
