"""The directory's object types (docs/api.md): workspace, scopes, people, agents, messages and
a scope's transcript. Plain attributes are hydrated; relations read through
app.api.directory.resolvers, and these types build objects from what it returns."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, cast

import strawberry

from app.api.context import Info
from app.api.directory import resolvers
from app.api.ids import encode_id
from app.api.node import Node
from app.api.pagination import PageInfo
from app.data.rows import ActorRow, MessageRow, ScopeRow, WorkspaceRow


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
    archived: bool = strawberry.field(
        description="Archived agents still author their messages and match author filters; "
        "pickers leave them out (Workspace.agents)."
    )
    owner_id: strawberry.Private[int]

    @strawberry.field
    async def owner(self, info: Info) -> Member:
        return Member.of(await resolvers.load_actor(info, self.owner_id))

    @classmethod
    def of(cls, row: ActorRow) -> Agent:
        assert row.owner_id is not None
        return cls(
            id=encode_id("Agent", row.id),
            key=row.key,
            name=row.name,
            archived=row.state == "archived",
            owner_id=row.owner_id,
        )


@strawberry.type(
    description="The author of messages whose agent was deleted: it has no name, owner or key "
    "any more, and no author filter reaches its messages."
)
class DeletedAgent:
    id: strawberry.ID
    name: str = "Deleted agent"

    @classmethod
    def of(cls, row: ActorRow) -> DeletedAgent:
        return cls(id=encode_id("Agent", row.id))


Author = Annotated[Member | Agent | DeletedAgent, strawberry.union("Author")]


def author_of(row: ActorRow) -> Member | Agent | DeletedAgent:
    if row.kind == "member":
        return Member.of(row)
    return DeletedAgent.of(row) if row.state == "deleted" else Agent.of(row)


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
    ) -> MessageConnection:
        page = await resolvers.scope_messages(
            info, self.pk, around=around, first=first, last=last, after=after, before=before
        )
        edges = [MessageEdge(cursor=c, node=Message.of(r)) for c, r in page.messages]
        return MessageConnection(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next_page,
                end_cursor=edges[-1].cursor if edges else None,
                has_previous_page=page.has_previous_page,
                start_cursor=edges[0].cursor if edges else None,
            ),
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
        return cast(Scope, scope_of(info, self.row.scope_id))

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


async def _load_author(info: Info, actor_id: int) -> Member | Agent | DeletedAgent:
    return author_of(await resolvers.load_actor(info, actor_id))


async def scope_of(info: Info, scope_id: int) -> Scope:
    """The scope of a row already read (a message's, a turn's)."""
    return Scope.of(await resolvers.load_scope(info, scope_id))


@strawberry.type
class MessageEdge:
    cursor: str
    node: Message


@strawberry.type
class MessageConnection:
    edges: list[MessageEdge]
    page_info: PageInfo


@strawberry.type
class Workspace(Node):
    key: str
    name: str

    @strawberry.field(description="Scopes the viewer may read (an agent: scopes it is in).")
    async def scopes(self, info: Info) -> list[Scope]:
        return [Scope.of(r) for r in await resolvers.readable_scopes(info)]

    @strawberry.field(
        description="The workspace's people; deactivated ones only with includeDeactivated."
    )
    async def members(self, info: Info, include_deactivated: bool = False) -> list[Member]:
        rows = await resolvers.actors_in_workspace(info, "member", include_deactivated)
        return [Member.of(r) for r in rows]

    @strawberry.field(
        description="The workspace's agents, for pickers; archived ones only with "
        "includeArchived. Deleted agents are never listed."
    )
    async def agents(self, info: Info, include_archived: bool = False) -> list[Agent]:
        rows = await resolvers.actors_in_workspace(info, "agent", include_archived)
        return [Agent.of(r) for r in rows]

    @classmethod
    def of(cls, row: WorkspaceRow) -> Workspace:
        return cls(id=encode_id("Workspace", row.id), key=row.key, name=row.name)
