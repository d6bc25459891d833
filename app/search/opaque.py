"""The envelope of every opaque cursor: base64url(JSON object), size-capped.

Clients must treat cursors as opaque; anything that does not decode to a JSON object is
INVALID_CURSOR, never an internal error.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from app.errors import InvalidCursor

MAX_CURSOR_CHARS = 512


def seal(payload: Mapping[str, Any]) -> str:
    raw = json.dumps(payload, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def unseal(cursor: str) -> dict[str, Any]:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidCursor("cursor is not valid for this search")
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor("cursor is not valid for this search") from None
    if not isinstance(payload, dict):
        raise InvalidCursor("cursor is not valid for this search")
    return payload
