"""Opaque messageSearch cursors: a position in the search order, bound to one search and one
reader, sealed (app.message_search.opaque: encrypted and authenticated; the reader is the associated
data, so another person's cursor is INVALID_CURSOR).

The sealed payload is
  {"v": 1, "p": [global_seq, scope_id, seq, message_id], "b": binding}
where `p` is the full order tuple (global_seq DESC, scope_id ASC, seq DESC, message_id ASC) of
the last position a page examined, and `b` is a digest of the normalized query, the scope
filter, the author filter and the time bounds (since, until) that produced it. Using a cursor
with any other search is INVALID_CURSOR: its position means nothing there.

A continuation cursor may point past a candidate the reader may not see (the candidate budget
ran out on invisible matches). Nobody can read a sealed position, and still it keeps only what
it needs: [global_seq, null, null, null], "after every row with this global_seq", which is
exactly "after the candidate" because global_seq is unique per workspace (unique (workspace_id,
global_seq) in migrations/001). docs/api.md (Cursors) says what such a page still reveals.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from app.errors import InvalidCursor
from app.message_search.opaque import Sealer

_VERSION = 1
_MAX_BIGINT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Position:
    """A point in the search order. scope_id/seq/message_id are None for "after all of
    global_seq" (see the module docstring)."""

    global_seq: int
    scope_id: int | None = None
    seq: int | None = None
    message_id: int | None = None

    @property
    def is_full(self) -> bool:
        return self.scope_id is not None


def binding(normalized_query: str, filters: Mapping[str, object]) -> str:
    """What a cursor is bound to: the normalized query and the filters as given (decoded ids,
    so an id of the wrong type is still a different filter from no filter). Not a secret: it
    only has to tell searches apart, and the cursor goes to the person who typed the query."""
    material = json.dumps([normalized_query, filters], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:24]


def encode_cursor(position: Position, bound_to: str, sealer: Sealer, reader: str) -> str:
    p = [position.global_seq, position.scope_id, position.seq, position.message_id]
    return sealer.seal({"v": _VERSION, "p": p, "b": bound_to}, reader)


def decode_cursor(cursor: str, bound_to: str, sealer: Sealer, reader: str) -> Position:
    """The position of a cursor produced for the same search and reader; InvalidCursor
    otherwise."""
    payload = sealer.open(cursor, reader)
    if payload.get("v") != _VERSION:
        raise InvalidCursor("cursor is not valid for this search")
    if payload.get("b") != bound_to:
        raise InvalidCursor("cursor belongs to another query, scope, author or time filter")
    p = payload.get("p")
    if not isinstance(p, list) or len(p) != 4 or not _is_int(p[0]):
        raise InvalidCursor("cursor is not valid for this search")
    rest = p[1:]
    if all(v is None for v in rest):
        return Position(p[0])
    if not all(_is_int(v) for v in rest) or p[2] > _MAX_SEQ:
        raise InvalidCursor("cursor is not valid for this search")
    return Position(p[0], p[1], p[2], p[3])


# messages.seq is an integer column: a larger seq is no position of any message.
_MAX_SEQ = 2**31 - 1


def _is_int(value: object) -> bool:
    # bool is an int in Python; it is not a position.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_BIGINT


# Transcript cursors (Scope.messages): a seq within one scope. The scope's id is not a secret
# to a reader who may read the scope, and binding to it makes reuse on another scope an error.


def encode_seq_cursor(scope_id: int, seq: int, sealer: Sealer, reader: str) -> str:
    return sealer.seal({"v": _VERSION, "t": scope_id, "s": seq}, reader)


def decode_seq_cursor(cursor: str, scope_id: int, sealer: Sealer, reader: str) -> int:
    payload = sealer.open(cursor, reader)
    if (
        payload.get("v") != _VERSION
        or payload.get("t") != scope_id
        or not _is_int(payload.get("s"))
        or payload["s"] > _MAX_SEQ
    ):
        raise InvalidCursor("cursor is not valid for this scope")
    seq: int = payload["s"]
    return seq
