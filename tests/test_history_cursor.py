"""app.history.cursor: historySearch cursors round-trip exactly and are bound to their search."""

from __future__ import annotations

import pytest

from app.errors import InvalidCursor
from app.history import cursor


def test_cursor_round_trips_exactly_and_is_bound_to_its_search() -> None:
    bound = cursor.binding(7, "acme", "ANYONE", None, None)
    position = cursor.Position(0.1 + 0.2, 42)
    assert cursor.decode_cursor(cursor.encode_cursor(position, bound), bound) == position
    other = cursor.binding(7, "acme", "YOU", None, None)
    with pytest.raises(InvalidCursor):
        cursor.decode_cursor(cursor.encode_cursor(position, bound), other)
    for garbage in ("", "!!!", "e30", "x" * 500):
        with pytest.raises(InvalidCursor):
            cursor.decode_cursor(garbage, bound)
