"""app.search.cursor: messageSearch cursors round-trip and are bound to their search."""

from __future__ import annotations

import pytest

from app.errors import InvalidCursor
from app.search.cursor import Position, binding, decode_cursor, encode_cursor


def test_cursor_round_trip_and_binding() -> None:
    bound = binding("acme", {"scope": None, "author": None})
    for position in (Position(5, 2, 3, 4), Position(5)):
        assert decode_cursor(encode_cursor(position, bound), bound) == position
    other = binding("acme", {"scope": {"type": "Scope", "id": 1}, "author": None})
    with pytest.raises(InvalidCursor):
        decode_cursor(encode_cursor(Position(5), bound), other)
