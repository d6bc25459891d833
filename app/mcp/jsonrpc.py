"""JSON-RPC 2.0 framing the SDK's transports leave out, shared by /mcp (app.mcp.http) and
`recall mcp` (app.mcp.stdio): they hand the SDK one well-formed message at a time.

- What is not JSON answers -32700 (Parse error); JSON that is not a JSON-RPC message answers
  -32600 (Invalid Request), without echoing any of it.
- A batch (a JSON array) is answered where the negotiated protocol version has batches
  (BATCH_VERSIONS): each element is handed to the SDK on its own and the answers to its
  requests come back as one array (nothing at all for a batch of notifications). At a later
  version it is refused with one -32600 error naming the version.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR, jsonrpc_message_adapter
from pydantic import ValidationError

# JSON-RPC batches are part of protocol 2025-03-26 (and of JSON-RPC 2.0 itself, which
# 2024-11-05 uses); 2025-06-18 removed them.
BATCH_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})

Message = dict[str, Any]


def error(code: int, message: str, id: str | int | None = None) -> Message:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


@dataclass(frozen=True, slots=True)
class Single:
    """One well-formed message, for the SDK as it came."""

    message: Message


@dataclass(frozen=True, slots=True)
class Batch:
    """A non-empty JSON array: its elements, each still to be checked (invalid)."""

    items: list[Any]


@dataclass(frozen=True, slots=True)
class Refused:
    """The error to answer instead of handing anything to the SDK."""

    answer: Message


def read(raw: str | bytes) -> Single | Batch | Refused:
    try:
        decoded = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8
        return Refused(error(PARSE_ERROR, "Parse error"))
    if isinstance(decoded, list):
        if not decoded:
            return Refused(error(INVALID_REQUEST, "Invalid Request: an empty batch"))
        return Batch(decoded)
    problem = invalid(decoded)
    return Refused(problem) if problem is not None else Single(decoded)


def invalid(item: Any) -> Message | None:
    """The -32600 error for something that is not a JSON-RPC message, else None. It names the
    request's id when it has a usable one, never echoes anything else."""
    try:
        jsonrpc_message_adapter.validate_python(item, by_name=False)
    except ValidationError:
        found = item.get("id") if isinstance(item, dict) else None
        usable = isinstance(found, str | int) and not isinstance(found, bool)
        return error(INVALID_REQUEST, "Invalid Request", found if usable else None)
    return None


def batch_refusal(version: str) -> Message | None:
    """The error refusing a batch at this negotiated protocol version, or None (allowed)."""
    if version in BATCH_VERSIONS:
        return None
    return error(
        INVALID_REQUEST,
        f"Invalid Request: protocol version {version} has no JSON-RPC batches "
        f"(only {', '.join(sorted(BATCH_VERSIONS))})",
    )


async def answer_batch(
    items: list[Any], answer_one: Callable[[Message], Awaitable[Message | None]]
) -> list[Message]:
    """The batch's answers in its order: an error for each invalid element, the SDK's answer
    (answer_one) for each request; notifications and responses get none. One at a time: a
    batch is a handful of calls, and answer_one may abort the whole batch (HTTP: a 401)."""
    answers = []
    for item in items:
        answer = invalid(item)
        if answer is None:
            answer = await answer_one(item)
        if answer is not None:
            answers.append(answer)
    return answers
