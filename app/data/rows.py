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


def actor_columns(a: str, prefix: str = "") -> str:
    """The columns ActorRow.of reads, from the actors row aliased `a`, named with `prefix`."""
    p = prefix
    return (
        f"{a}.id as {p}id, {a}.key as {p}key, {a}.kind as {p}kind, {a}.name as {p}name,"
        f" {a}.owner_id as {p}owner_id, case when {a}.deleted_at is not null then 'deleted'"
        f" when {a}.archived_at is not null then 'archived'"
        f" when {a}.deactivated_at is not null then 'deactivated' else 'active' end as {p}state,"
        f" {a}.namespace_id as {p}namespace_id"
    )


@dataclass(frozen=True, slots=True)
class ActorRow:
    id: int
    key: str
    kind: str
    name: str
    owner_id: int | None
    # active | deactivated (a person) | archived | deleted (an agent): docs/changes.md
    state: str = "active"
    # A member's connector namespace (docs/identity.md); None for an agent.
    namespace_id: int | None = None

    @classmethod
    def of(cls, r: asyncpg.Record, prefix: str = "") -> ActorRow:
        """From a record's columns (actor_columns), named with `prefix` when selected beside
        other rows."""
        p = prefix
        return cls(
            r[p + "id"], r[p + "key"], r[p + "kind"], r[p + "name"], r[p + "owner_id"],
            r[p + "state"], r[p + "namespace_id"],
        )  # fmt: skip


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
    # False when the statement that read the row left a long body out (a search page reads
    # only a window of it: app.data.message_search.hydrate); Message.body then loads it.
    body_complete: bool = True
    # Read in the same statement when the message was hydrated for a reader (app.data.messages):
    # shown with the message, so resolving them costs nothing more.
    author: ActorRow | None = None
    scope: ScopeRow | None = None

    @classmethod
    def of(
        cls,
        r: asyncpg.Record,
        *,
        body_complete: bool = True,
        author: ActorRow | None = None,
        scope: ScopeRow | None = None,
    ) -> MessageRow:
        # Built once with everything (dataclasses.replace on a frozen row cost ~4 µs a hit).
        return cls(
            r["id"],
            r["key"],
            r["scope_id"],
            r["seq"],
            r["global_seq"],
            r["author_id"],
            r["body"],
            r["created_at"],
            body_complete,
            author,
            scope,
        )
