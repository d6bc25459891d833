"""Opaque cursors: sealed with the installation's key and bound to their reader and search.

A cursor's payload (a position, a binding) is a JSON object (`seal` / `unseal`: the plain
envelope, base64url) encrypted and authenticated with AES-GCM under the `cursors` secret
(migrations/026), with its context — who reads and which search — as associated data. So a
client can neither read a position (a continuation past rows it may not see says nothing
about where they are) nor forge one, and a cursor works only for the reader and the search it
was made for. Anything else — tampered, truncated, another reader's, another search's — is
INVALID_CURSOR, never an internal error.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from app.errors import InvalidCursor

MAX_CURSOR_CHARS = 512
_NONCE = 12
# The format: "c1." and base64url(nonce || ciphertext and tag).
_PREFIX = "c1."
# json.dumps(payload, separators=(",", ":")), without building an encoder per call (~5 µs of a
# cursor's ~9; a page of 20 seals 21): the same text, from one encoder made once.
_COMPACT = json.JSONEncoder(separators=(",", ":"))


class Sealer:
    """Seals cursor payloads under one key (the process reads it once: app.server)."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def seal(self, payload: Mapping[str, Any], context: str) -> str:
        nonce = os.urandom(_NONCE)
        raw = _COMPACT.encode(payload).encode()
        sealed = nonce + self._aead.encrypt(nonce, raw, context.encode())
        return _PREFIX + base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def open(self, cursor: str, context: str) -> dict[str, Any]:
        """The payload of a cursor sealed for `context`; InvalidCursor otherwise."""
        if len(cursor) > MAX_CURSOR_CHARS or not cursor.startswith(_PREFIX):
            raise InvalidCursor("cursor is not valid for this search")
        body = cursor[len(_PREFIX) :]
        try:
            sealed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            raw = self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], context.encode())
            payload = json.loads(raw)
        except (binascii.Error, ValueError, InvalidTag):
            raise InvalidCursor("cursor is not valid for this search") from None
        if not isinstance(payload, dict):
            raise InvalidCursor("cursor is not valid for this search")
        return payload


def seal(payload: Mapping[str, Any]) -> str:
    raw = _COMPACT.encode(payload)
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
