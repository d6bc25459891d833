"""Search audit rows (docs/design.md, Audit): one per search, in the search's own transaction.

The query is recorded only as a keyed digest — HMAC-SHA256 under a subkey derived from
RECALL_MASTER_KEY — so short keyword queries cannot be recovered by hashing guesses. Without a
master key the digest is empty. The query text is never stored.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Any

from app.data.params import Params
from app.data.session import Session

_SUBKEY_LABEL = b"recall/search-audit/v1"


def query_digest(master_key: str | None, normalized_query: str) -> str:
    if not master_key:
        return ""
    subkey = hmac.new(master_key.encode(), _SUBKEY_LABEL, hashlib.sha256).digest()
    return hmac.new(subkey, normalized_query.encode(), hashlib.sha256).hexdigest()


async def record_search(
    db: Session,
    *,
    workspace_id: int,
    surface: str,
    actor_id: int,
    turn_id: int | None,
    query_digest: str,
    filters: Mapping[str, Any],
    destination: Mapping[str, Any],
    selected: Sequence[Mapping[str, Any]],
    exclusions: Mapping[str, int],
) -> int:
    """Write the audit row; the caller runs this inside the search's transaction, so a failed
    write fails (and rolls back) the search."""
    audit_id: int = await db.fetchval(
        """
        insert into search_audit (workspace_id, surface, actor_id, turn_id, query_digest,
                                  filters, destination, selected, exclusions)
        values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        returning id
        """,
        workspace_id,
        surface,
        actor_id,
        turn_id,
        query_digest,
        dict(filters),
        dict(destination),
        [dict(s) for s in selected],
        dict(exclusions),
    )
    return audit_id


def audit_insert(
    p: Params,
    *,
    surface: str,
    actor_id: int,
    turn_id: int | None,
    query_digest: str,
    filters: Mapping[str, Any],
    destination: Mapping[str, Any],
    selected: str,
    exclusions: str,
) -> str:
    """The audit row's INSERT for a data-modifying CTE of the search's own statement, so that
    the row and the result it describes are one atomic statement: `selected` and `exclusions`
    are SQL expressions over the statement's page; the rest are bound here ($1 is the
    workspace, as in every search statement)."""
    return (
        "insert into search_audit (workspace_id, surface, actor_id, turn_id, query_digest,"
        " filters, destination, selected, exclusions)"
        f" select $1, {p.add(surface)}::text, {p.add(actor_id)}::bigint,"
        f" {p.add(turn_id)}::bigint, {p.add(query_digest)}::text,"
        f" {p.add(dict(filters))}::jsonb, {p.add(dict(destination))}::jsonb,"
        f" {selected}, {exclusions}"
        " returning id"
    )
