"""What one request of any transport opens: its database session and its turn's ledger.

/graphql (app.api.view) and MCP (app.mcp) build them the same way, from the process's pools
(app.db.Pools): a request's statements run on one pooled connection, the few planned once on
the generic pool, and a turn reader's searches and reply share one provenance ledger.
"""

from __future__ import annotations

from app.data.readers import Reader
from app.data.session import Session
from app.db import Pools
from app.history_search.ledger import Ledger
from app.settings import Settings


def open_session(pools: Pools, settings: Settings) -> Session:
    """A request's session (close it when the request ends)."""
    return Session(
        pools.custom,
        planned_once=pools.generic,
        acquire_timeout=settings.db_acquire_timeout,
    )


def ledger_for(reader: Reader) -> Ledger | None:
    """The provenance ledger of the reader's turn (turn readers only)."""
    return Ledger(reader.turn_id) if reader.turn_id is not None else None
