"""The search readiness gate (docs/design.md, Readiness).

A workspace's search opens only when its readiness row says migrated, backfilled, finalized
and read-ready; until then both search surfaces answer SEARCH_UNAVAILABLE and never fall back
to an unindexed scan. The operator commands that fill that row are app.message_search.operations.
"""

from __future__ import annotations

from app.errors import SearchUnavailable


def ensure_read_ready(ready: bool) -> None:
    """Raise SearchUnavailable unless the workspace's search is fully ready.

    `ready` is read with the request's token (app.data.readers): all four flags, not only
    read_ready — a row that claims read_ready without the steps before it (the check
    constraint forbids it, but the gate must not rely on that) is not ready. Readiness only
    ever moves forward, so the value read at the start of the request holds for all of it.
    """
    if not ready:
        raise SearchUnavailable("search is not available for this workspace yet")
