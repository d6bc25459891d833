"""Relay-style page information shared by every connection of the API."""

from __future__ import annotations

import strawberry


@strawberry.type(
    description="Where a page ends and whether more follows. Pass endCursor as `after` to "
    "continue; an empty page with hasNextPage true is not the end."
)
class PageInfo:
    has_next_page: bool
    end_cursor: str | None
    # Backward paging (Scope.messages with last/before) fills these; forward-only connections
    # leave the defaults, as the Relay cursor specification allows.
    has_previous_page: bool = False
    start_cursor: str | None = None
