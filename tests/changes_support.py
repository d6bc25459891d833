"""Helpers for the live-change tests: a connector speaking applyChanges over HTTP, and change
builders in the NDJSON/GraphQL shape (docs/changes.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

APPLY = """
mutation($changes: [ChangeInput!]!) {
  applyChanges(changes: $changes) { applied unchanged erasedMessages }
}
"""


class Connector:
    """A workspace's connector: `await connector.apply(post(...), edit(...))`."""

    def __init__(self, client: Any, token: str) -> None:
        self.client = client
        self.token = token

    async def apply(self, *changes: dict[str, Any]) -> dict[str, int]:
        data = await self.client.gql(APPLY, {"changes": list(changes)}, token=self.token)
        result: dict[str, int] = data["applyChanges"]
        return result

    async def attempt(self, *changes: dict[str, Any]) -> Any:
        """The raw GraphQL result, for changes that are expected to fail."""
        return await self.client.post(APPLY, {"changes": list(changes)}, token=self.token)


def post(
    key: str, scope: str, author: str, body: str, at: str = "2026-05-01T10:00:00Z", **extra: Any
) -> dict[str, Any]:
    return {"postMessage": {"key": key, "scope": scope, "author": author, "at": at, "body": body,
                            **extra}}  # fmt: skip


def edit(key: str, body: str) -> dict[str, Any]:
    return {"editMessage": {"key": key, "body": body}}


def delete(key: str) -> dict[str, Any]:
    return {"deleteMessage": {"key": key}}


def add_members(scope: str, *members: str) -> dict[str, Any]:
    return {"addScopeMembers": {"scope": scope, "members": list(members)}}


def remove_members(scope: str, *members: str) -> dict[str, Any]:
    return {"removeScopeMembers": {"scope": scope, "members": list(members)}}


def keyed(kind: str, key: str) -> dict[str, Any]:
    """A change whose payload is just a key: deactivateMember, archiveAgent, deleteAgent,
    makeScopePrivate, deleteMessage, eraseMemberMessages."""
    return {kind: {"key": key}}


def every_kind_of_change() -> list[dict[str, Any]]:
    """One change of every kind, on the personas, in an order that applies cleanly."""
    return [
        {"upsertMember": {"key": "dave", "name": "Dave"}},
        {"upsertAgent": {"key": "bot", "name": "Bot", "owner": "dave"}},
        {"createScope": {"key": "ops", "kind": "channel", "visibility": "public", "name": "ops",
                         "members": ["dave", "bot", "alice"]}},
        {"createMemory": {"key": "mem-dave", "audience": {"kind": "members", "readers": ["dave"]}}},
        post("n1", "ops", "dave", "zeppelin ops note"),
        post("n2", "ops", "bot", "zeppelin bot reply", sources=["n1"], memorySources=["mem-dave"]),
        edit("n1", "zeppelin ops note, edited"),
        post("n3", "ops", "dave", "to be removed"),
        delete("n3"),
        add_members("ops", "bob"),
        remove_members("ops", "alice"),
        keyed("makeScopePrivate", "ops"),
        keyed("archiveAgent", "helper"),
        keyed("deleteAgent", "scout"),
        keyed("eraseMemberMessages", "sam1"),
        keyed("deactivateMember", "sam2"),
    ]  # fmt: skip


# Bodies with what the document vector treats specially: identifiers (whole and in parts), CJK
# pairs, a word repeated (and a word found nowhere else), and nothing to index at all.
INDEXED_BODIES = [
    "Set billing.retry_interval to 24h after ERR_PAYMENT_DECLINED",
    "東京オフィスの会議は明日です",
    "payment payment payment retries zanzibarquux",
    "?!",
]


async def each_document_write(
    connector: Connector, after: Callable[[str], Awaitable[None]]
) -> None:
    """Every live write of a search document, on the history personas (acme): posts of
    INDEXED_BODIES (keys n0, n1, ...), edits (n0's identifier and n2's rare word edited away),
    an edit to the same body, deletions (one a reply with provenance) and an erasure; `after`
    is awaited with each step's name."""
    await after("import")
    await connector.apply(
        *[post(f"n{i}", "random", "alice", body) for i, body in enumerate(INDEXED_BODIES)]
    )
    await after("posts")
    await connector.apply(edit("n0", "Set billing.retry_interval to 48h"), edit("n2", "payment"))
    await after("edits")
    await connector.apply(edit("n1", INDEXED_BODIES[1]))  # the same body: no change
    await after("an edit to the same body")
    await connector.apply(delete("n0"), delete("r1"))
    await after("deletes")
    await connector.apply(keyed("eraseMemberMessages", "bob"))
    await after("erasure")
