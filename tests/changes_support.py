"""Helpers for the live-change tests: a connector speaking applyChanges over HTTP, and change
builders in the NDJSON/GraphQL shape (docs/changes.md)."""

from __future__ import annotations

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
