"""The object types of docs/api.md. Plain attributes are hydrated; relations use loaders."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, cast

import strawberry

from app.api.context import Info
from app.api.ids import encode_id
from app.data import directory
from app.data.rows import ActorRow, MessageRow, ScopeRow, WorkspaceRow

if TYPE_CHECKING:
    from app.api.transcript import MessageConnection


@strawberry.interface(description="An object with a global id.")
class Node:
    id: strawberry.ID


@strawberry.type
class Member(Node):
    key: str
    name: str

    @classmethod
    def of(cls, row: ActorRow) -> Member:
        return cls(id=encode_id("Member", row.id), key=row.key, name=row.name)


@strawberry.type
class Agent(Node):
    key: str
    name: str
    owner_id: strawberry.Private[int]

    @strawberry.field
    async def owner(self, info: Info) -> Member:
        return Member.of(await load_actor(info, self.owner_id))

    @classmethod
    def of(cls, row: ActorRow) -> Agent:
        assert row.owner_id is not None
        return cls(id=encode_id("Agent", row.id), key=row.key, name=row.name, owner_id=row.owner_id)


async def load_actor(info: Info, actor_id: int) -> ActorRow:
    """An actor referenced by a row already read (foreign keys guarantee it exists)."""
    row = await info.context.loaders.actor_by_id.load(actor_id)
    assert row is not None
    return row


async def load_scope(info: Info, scope_id: int) -> Scope:
    """The scope of a row already read (a message's, a turn's): shown with that row."""
    row = await info.context.loaders.scope_by_id.load(scope_id)
    assert row is not None
    return Scope.of(row)


Author = Annotated[Member | Agent, strawberry.union("Author")]


def author_of(row: ActorRow) -> Member | Agent:
    return Agent.of(row) if row.kind == "agent" else Member.of(row)


@strawberry.type
class Scope(Node):
    key: str
    kind: str
    visibility: str | None
    name: str | None
    parent_id: strawberry.Private[int | None]
    pk: strawberry.Private[int]

    @strawberry.field
    async def parent(self, info: Info) -> Scope | None:
        if self.parent_id is None:
            return None
        row = await info.context.loaders.scope_by_id.load(self.parent_id)
        return Scope.of(row) if row else None

    @strawberry.field(
        description="The messages of this scope the viewer may read, in order: `around` a "
        "message (`last` before it, the message, `first` after it), or `first` after / `last` "
        "before a cursor. Messages the viewer may not read are skipped."
    )
    async def messages(
        self,
        info: Info,
        around: strawberry.ID | None = None,
        first: int | None = None,
        last: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Annotated[MessageConnection, strawberry.lazy("app.api.transcript")]:
        from app.api.transcript import scope_messages  # the transcript module imports this one

        return await scope_messages(
            info, self.pk, around=around, first=first, last=last, after=after, before=before
        )

    @classmethod
    def of(cls, row: ScopeRow) -> Scope:
        return cls(
            id=encode_id("Scope", row.id),
            key=row.key,
            kind=row.kind,
            visibility=row.visibility,
            name=row.name,
            parent_id=row.parent_id,
            pk=row.id,
        )


@strawberry.type
class Message(Node):
    key: str
    seq: int
    body: str
    created_at: datetime
    pk: strawberry.Private[int]
    row: strawberry.Private[MessageRow]

    # Synchronous resolvers: a message hydrated for a reader carries its author and scope, and
    # answering from them skips an async resolver per field (a task per list item in
    # graphql-core: ~2 ms for a page of 20). Otherwise they return the loader's awaitable,
    # which graphql-core awaits like an async resolver's result.
    @strawberry.field
    def scope(self, info: Info) -> Scope:
        if self.row.scope is not None:
            return Scope.of(self.row.scope)
        return cast(Scope, load_scope(info, self.row.scope_id))

    @strawberry.field
    def author(self, info: Info) -> Author:
        if self.row.author is not None:
            return author_of(self.row.author)
        return cast(Author, _load_author(info, self.row.author_id))

    @classmethod
    def of(cls, row: MessageRow) -> Message:
        return cls(
            id=encode_id("Message", row.id),
            key=row.key,
            seq=row.seq,
            body=row.body,
            created_at=row.created_at,
            pk=row.id,
            row=row,
        )


async def _load_author(info: Info, actor_id: int) -> Member | Agent:
    return author_of(await load_actor(info, actor_id))


@strawberry.type
class Workspace(Node):
    key: str
    name: str

    @strawberry.field(description="Scopes the viewer may read (an agent: scopes it is in).")
    async def scopes(self, info: Info) -> list[Scope]:
        rows = await directory.readable_scopes(info.context.db, info.context.reader)
        return [Scope.of(r) for r in rows]

    @strawberry.field
    async def members(self, info: Info) -> list[Member]:
        rows = await directory.actors_in_workspace(
            info.context.db, info.context.reader.workspace_id, "member"
        )
        return [Member.of(r) for r in rows]

    @strawberry.field
    async def agents(self, info: Info) -> list[Agent]:
        rows = await directory.actors_in_workspace(
            info.context.db, info.context.reader.workspace_id, "agent"
        )
        return [Agent.of(r) for r in rows]

    @classmethod
    def of(cls, row: WorkspaceRow) -> Workspace:
        return cls(id=encode_id("Workspace", row.id), key=row.key, name=row.name)
