"""The lineage cache (migrations/004): each reply's lineage summary, computed by the one walk
of app.data.eligibility and kept on its message row, so that eligibility reads it instead of
walking on every read.

A summary can be missing, never stale: the triggers of migrations/004, 016 and 019 forget the
summaries a change makes wrong (a new edge, a narrowed audience), and every write of the app
that makes them forget fills them again in its own transaction, here.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.data.eligibility import lineage_summary
from app.data.executor import Executor
from app.data.params import Params

# The roots of one statement: each walk is bounded by its own cap, a batch by this many walks.
_BATCH = 2000


def _fill(roots: str) -> str:
    """Each walk of the messages `roots` (a FROM item of rows `r(id)`), one per row (LATERAL):
    the same text a statement inlines when a summary is missing, so the cache holds exactly
    what the live walk would say, caps included. $1 is the workspace, as the walk reads it."""
    return f"""
update messages m set lineage_audience_ids = lw.audience_ids, lineage_denied = lw.denied
from {roots} cross join lateral {lineage_summary("array[r.id]")} lw
where m.workspace_id = $1 and m.id = r.id and m.has_provenance
"""


_FILL_MISSING = _fill(
    "(select id from messages where workspace_id = $1 and has_provenance"
    " and lineage_audience_ids is null) r"
)


async def cache_summaries(db: Executor, workspace_id: int, message_ids: Sequence[int]) -> None:
    """Compute and keep the lineage summaries of these messages (those with provenance)."""
    ids = list(message_ids)
    for start in range(0, len(ids), _BATCH):
        p = Params([workspace_id])
        batch = p.add(ids[start : start + _BATCH], "bigint[]")
        await db.execute(_fill(f"unnest({batch}) as r(id)"), *p.values)


async def cache_missing_summaries(db: Executor, workspace_id: int) -> None:
    """Fill every summary of the workspace that is missing (one statement)."""
    await db.execute(_FILL_MISSING, workspace_id)
