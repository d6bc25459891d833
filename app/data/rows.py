"""Typed rows handed up from the data layer (asyncpg records never leave it)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg


@dataclass(frozen=True, slots=True)
class WorkspaceRow:
    id: int
    key: str
    name: str
    namespace_id: int

    @classmethod
    def of(cls, r: asyncpg.Record) -> WorkspaceRow:
        return cls(r["id"], r["key"], r["name"], r["default_namespace_id"])


@dataclass(frozen=True, slots=True)
class ActorRow:
    id: int
    key: str
    kind: str
    name: str
    owner_id: int | None

    @classmethod
    def of(cls, r: asyncpg.Record, prefix: str = "") -> ActorRow:
        """From a record's columns, named with `prefix` when selected beside other rows."""
        p = prefix
        return cls(r[p + "id"], r[p + "key"], r[p + "kind"], r[p + "name"], r[p + "owner_id"])


@dataclass(frozen=True, slots=True)
class ScopeRow:
    id: int
    key: str
    kind: str
    visibility: str | None
    name: str | None
    parent_id: int | None
    root_message_id: int | None
    destination_audience_id: int

    @classmethod
    def of(cls, r: asyncpg.Record, prefix: str = "") -> ScopeRow:
        """From a record's columns, named with `prefix` when selected beside other rows."""
        p = prefix
        return cls(
            r[p + "id"],
            r[p + "key"],
            r[p + "kind"],
            r[p + "visibility"],
            r[p + "name"],
            r[p + "parent_id"],
            r[p + "root_message_id"],
            r[p + "destination_audience_id"],
        )


@dataclass(frozen=True, slots=True)
class MessageRow:
    id: int
    key: str
    scope_id: int
    seq: int
    global_seq: int
    author_id: int
    body: str
    created_at: datetime
    # Read in the same statement when the message was hydrated for a reader (app.data.messages):
    # shown with the message, so resolving them costs nothing more.
    author: ActorRow | None = None
    scope: ScopeRow | None = None

    @classmethod
    def of(cls, r: asyncpg.Record) -> MessageRow:
        return cls(
            r["id"],
            r["key"],
            r["scope_id"],
            r["seq"],
            r["global_seq"],
            r["author_id"],
            r["body"],
            r["created_at"],
        )
