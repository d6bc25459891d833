"""app.history_search.cursor: historySearch cursors round-trip exactly and are bound to their search
and their turn."""

from __future__ import annotations

import os

import pytest

from app.errors import InvalidCursor
from app.history_search import cursor
from app.message_search.opaque import Sealer


def test_cursor_round_trips_exactly_and_is_bound_to_its_search() -> None:
    sealer = Sealer(os.urandom(32))
    bound = cursor.binding(7, "acme", "ANYONE", None, None)
    position = cursor.Position(None, None, 1, 0.1 + 0.2, 42)
    sealed = cursor.encode_cursor(position, bound, sealer, "turn:1:7")
    assert cursor.decode_cursor(sealed, bound, sealer, "turn:1:7") == position
    other = cursor.binding(7, "acme", "YOU", None, None)
    with pytest.raises(InvalidCursor):
        cursor.decode_cursor(sealed, other, sealer, "turn:1:7")
    with pytest.raises(InvalidCursor):
        cursor.decode_cursor(sealed, bound, sealer, "turn:1:8")
    for garbage in ("", "!!!", "e30", "c1.e30", "x" * 500):
        with pytest.raises(InvalidCursor):
            cursor.decode_cursor(garbage, bound, sealer, "turn:1:7")
