"""Relay-style page information shared by every connection of the API."""

from __future__ import annotations

import strawberry


@strawberry.type(
    description="Where a page ends and whether more follows. Pass endCursor as `after` to "
    "continue; an empty page with hasNextPage true is not the end."
)
class PageInfo:
    has_next_page: bool = strawberry.field(
        description="More results follow endCursor. Keep paging while true, even after an "
        "empty page."
    )
    end_cursor: str | None = strawberry.field(
        description="Opaque cursor of where this page ends: pass it as `after` with the same "
        "arguments for the next page. Null when the page is empty and nothing follows."
    )
    # Backward paging (Scope.messages with last/before) fills these; forward-only connections
    # leave the defaults, as the Relay cursor specification allows.
    has_previous_page: bool = strawberry.field(
        default=False,
        description="Earlier results precede startCursor (Scope.messages only; false for "
        "forward-only connections).",
    )
    start_cursor: str | None = strawberry.field(
        default=None,
        description="Cursor of the page's first edge: pass it as `before` to page backward "
        "(Scope.messages only).",
    )
