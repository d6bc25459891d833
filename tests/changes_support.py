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
