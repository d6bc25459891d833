"""app.message_search.cursor and app.message_search.opaque: messageSearch cursors round-trip, are bound to their
search and their reader, and are sealed: unreadable and unforgeable."""

from __future__ import annotations

import base64
import os

import pytest

from app.errors import InvalidCursor
from app.message_search.cursor import Position, binding, decode_cursor, encode_cursor
from app.message_search.opaque import Sealer, seal

ALICE = "1:member:5:0"


def test_cursor_round_trip_and_binding() -> None:
    sealer = Sealer(os.urandom(32))
    bound = binding("acme", {"scope": None, "author": None})
    for position in (Position(5, 2, 3, 4), Position(5)):
        assert (
            decode_cursor(encode_cursor(position, bound, sealer, ALICE), bound, sealer, ALICE)
            == position
        )
    other = binding("acme", {"scope": {"type": "Scope", "id": 1}, "author": None})
    with pytest.raises(InvalidCursor):
        decode_cursor(encode_cursor(Position(5), bound, sealer, ALICE), other, sealer, ALICE)


def test_a_cursor_says_nothing_and_works_for_nobody_else() -> None:
    sealer = Sealer(os.urandom(32))
    bound = binding("acme", {"scope": None, "author": None})
    sealed = encode_cursor(Position(123456789, 2, 3, 4), bound, sealer, ALICE)
    raw = base64.urlsafe_b64decode(sealed[3:] + "=" * (-len(sealed[3:]) % 4))
    assert b"123456789" not in raw and b'"p"' not in raw and b"acme" not in raw
    # Another reader, another installation's key, a flipped bit, the old plain envelope.
    with pytest.raises(InvalidCursor):
        decode_cursor(sealed, bound, sealer, "1:member:6:0")
    with pytest.raises(InvalidCursor):
        decode_cursor(sealed, bound, Sealer(os.urandom(32)), ALICE)
    flipped = sealed[:-5] + ("A" if sealed[-5] != "A" else "B") + sealed[-4:]
    with pytest.raises(InvalidCursor):
        decode_cursor(flipped, bound, sealer, ALICE)
    plain = seal({"v": 1, "p": [1, None, None, None], "b": bound})
    with pytest.raises(InvalidCursor):
        decode_cursor(plain, bound, sealer, ALICE)
    # Two cursors of the same position are not even equal (a fresh nonce each).
    assert encode_cursor(Position(5), bound, sealer, ALICE) != encode_cursor(
        Position(5), bound, sealer, ALICE
    )
