"""The directory's object types (docs/api.md): workspace, scopes, agents, authors, messages and
a scope's transcript (people, Member, are identities: app.api.identity.types). Plain attributes
are hydrated; relations read through app.api.directory.resolvers, and these types build objects
from what it returns."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, cast

import strawberry

from app import access
from app.api.context import Info
from app.api.directory import resolvers
from app.api.engine.completion import without_info
from app.api.identity.types import Member
from app.api.node import Node
from app.api.pagination import PageInfo
from app.api.policies import PARENT, PER_ITEM, Fixed, Page, guarded, sized
from app.data.rows import ActorRow, MessageRow, ScopeRow, WorkspaceRow
from app.message_search.transcript import DEFAULT_PAGE
from app.request.ids import encode_id

# What the cost model counts for a workspace's listings (app.api.limits): a directory of a
# few hundred people or conversations, nominally.
SCOPES_LISTED = 100
ACTORS_LISTED = 100


@strawberry.type(description="An AI agent of the workspace, owned by a member.")
class Agent(Node):
    key: str = strawberry.field(
        description="The connector's id for the agent (fixture key), unique in the workspace."
    )
    name: str = strawberry.field(description="Display name.")
    archived: bool = strawberry.field(
        description="Archived agents still author their messages and match author filters; "
        "pickers leave them out (Workspace.agents)."
    )
    owner_id: strawberry.Private[int]

    @guarded("The person who owns the agent.", access=PARENT)
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
    id: strawberry.ID = strawberry.field(
        description="The former agent's id; it no longer resolves through node(id:)."
    )
    name: str = strawberry.field(
        default="Deleted agent", description='Always "Deleted agent", for display.'
    )

    @classmethod
    def of(cls, row: ActorRow) -> DeletedAgent:
        return cls(id=encode_id("Agent", row.id))


Author = Annotated[
    Member | Agent | DeletedAgent,
    strawberry.union(
        "Author",
        description="Who wrote a message: a person, an agent, or an agent that was deleted "
        "since. Select fields with `... on Member { name }` etc.",
    ),
]


def author_of(row: ActorRow) -> Member | Agent | DeletedAgent:
    if row.kind == "member":
        return Member.of(row)
    return DeletedAgent.of(row) if row.state == "deleted" else Agent.of(row)


@strawberry.type(
    description="A conversation: a channel, a direct message (dm), or a thread under a channel "
    "or dm."
)
class Scope(Node):
    key: str = strawberry.field(
        description="The connector's id for the conversation (fixture key), unique in the "
        "workspace."
    )
    kind: str = strawberry.field(description="`channel`, `dm` or `thread`.")
    visibility: str | None = strawberry.field(
        description="For a channel: `public`, `private`, `shared` or `open`; null for dms and "
        "threads."
    )
    name: str | None = strawberry.field(
        description="The channel's name, without `#`; null when it has none (dms, threads)."
    )
    parent_id: strawberry.Private[int | None]
    pk: strawberry.Private[int]

    @guarded("A thread's channel or dm; null for channels and dms.", access=PARENT)
    async def parent(self, info: Info) -> Scope | None:
        if self.parent_id is None:
            return None
        row = await info.context.loaders.unchecked_scope_by_id.load(self.parent_id)
        return Scope.of(row) if row else None

    @guarded(
        "The messages of this scope the viewer may read, in order: `around` a message (`last` "
        "before it, the message, `first` after it), or `first` after / `last` before a cursor. "
        "Messages the viewer may not read are skipped. One statement per scope asked.",
        access=PARENT,
        size=Page(DEFAULT_PAGE),
        statement=True,
    )
    async def messages(
        self,
        info: Info,
        around: Annotated[
            strawberry.ID | None,
            strawberry.argument(
                description="A Message id of this scope to center on: `last` readable "
                "messages before it (default 10), the message, `first` after it (default 10). "
                "Not with after/before (BAD_USER_INPUT). A message the viewer may not read "
                "gives an empty page."
            ),
        ] = None,
        first: Annotated[
            int | None,
            strawberry.argument(
                description="How many messages after `after` (or after `around`), 0-100; "
                "default 20 (10 with around)."
            ),
        ] = None,
        last: Annotated[
            int | None,
            strawberry.argument(
                description="How many messages before `before` (or before `around`), 0-100; "
                "default 20 (10 with around). Forward and backward paging cannot be mixed."
            ),
        ] = None,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="pageInfo.endCursor of this scope's transcript: page forward. A "
                "cursor of another scope is INVALID_CURSOR."
            ),
        ] = None,
        before: Annotated[
            str | None,
            strawberry.argument(
                description="pageInfo.startCursor of this scope's transcript: page backward."
            ),
        ] = None,
    ) -> MessageConnection:
        live_event = await resolvers.live_event_before(info)
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
            live_event=live_event,
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


@strawberry.type(description="A message of a conversation, as the viewer may read it.")
class Message(Node):
    key: str = strawberry.field(
        description="The connector's id for the message (fixture key), unique in the workspace."
    )
    seq: int = strawberry.field(
        description="Position in its scope, from 1, in arrival order (gaps where messages are "
        "not readable)."
    )
    created_at: datetime = strawberry.field(
        description="When it was posted (ISO 8601 with zone); what messageSearch(since:, until:) "
        "and historySearch filter on."
    )
    pk: strawberry.Private[int]
    row: strawberry.Private[MessageRow]

    # Synchronous resolvers: a message hydrated for a reader carries its author and scope, and
    # answering from them skips an async resolver per field (a task per list item in
    # graphql-core: ~2 ms for a page of 20), and the resolver's machinery too (the executor
    # takes them without_info). Otherwise they return the loader's awaitable, which
    # graphql-core awaits like an async resolver's result.
    def _hydrated_scope(self) -> Scope | None:
        return Scope.of(self.row.scope) if self.row.scope is not None else None

    def _hydrated_author(self) -> Author | None:
        return author_of(self.row.author) if self.row.author is not None else None

    def _read_body(self) -> str | None:
        return self.row.body if self.row.body_complete else None

    @guarded(
        "The text as posted (or last edited); highlight ranges index into it in UTF-16 code units.",
        access=PARENT,
    )
    @without_info(_read_body)
    def body(self, info: Info) -> str:
        # A search page reads a very long body only in part (MessageSearchEdge.excerpt): the
        # whole of it is loaded here, authorized again, when a client asks for it.
        return self._read_body() or cast(str, _load_body(info, self.pk))

    @guarded("The conversation it was posted in.", access=PARENT)
    @without_info(_hydrated_scope)
    def scope(self, info: Info) -> Scope:
        return self._hydrated_scope() or cast(Scope, scope_of(info, self.row.scope_id))

    @guarded("Who wrote it.", access=PARENT)
    @without_info(_hydrated_author)
    def author(self, info: Info) -> Author:
        return self._hydrated_author() or cast(Author, _load_author(info, self.row.author_id))

    @classmethod
    def of(cls, row: MessageRow) -> Message:
        return cls(
            id=encode_id("Message", row.id),
            key=row.key,
            seq=row.seq,
            created_at=row.created_at,
            pk=row.id,
            row=row,
        )


async def _load_body(info: Info, message_id: int) -> str:
    """The body of a message this request already showed; empty if it is gone since."""
    row = await info.context.loaders.message_by_id.load(message_id)
    return row.body if row is not None else ""


async def _load_author(info: Info, actor_id: int) -> Member | Agent | DeletedAgent:
    return author_of(await resolvers.load_actor(info, actor_id))


async def scope_of(info: Info, scope_id: int) -> Scope:
    """The scope of a row already read (a message's, a turn's)."""
    return Scope.of(await resolvers.load_scope(info, scope_id))


@strawberry.type(description="One message of a transcript page, with its cursor.")
class MessageEdge:
    cursor: str = strawberry.field(
        description="Opaque position of this message in its scope's transcript (`after` / "
        "`before`)."
    )
    node: Message = strawberry.field(description="The message.")


@strawberry.type(description="A page of a scope's transcript, oldest first.")
class MessageConnection:
    edges: list[MessageEdge] = sized("The readable messages of the page, in seq order.", PER_ITEM)
    page_info: PageInfo = strawberry.field(
        description="Cursors to page forward (endCursor) and backward (startCursor)."
    )
    live_event: str | None = strawberry.field(
        description="For a member's token: the position of the workspace's live log read "
        "just before this page (docs/live.md); pass it as scopeMessages' `after` and nothing "
        "committed after the page was read is missed (an update may repeat a message the page "
        "shows: replace it by id). Null for other tokens, which cannot subscribe. Only a "
        "position: it names no message."
    )


@strawberry.type(description="The workspace a token belongs to: one organization's chat.")
class Workspace(Node):
    key: str = strawberry.field(description="The workspace's key, unique in the service.")
    name: str = strawberry.field(description="Display name.")

    @guarded(
        "Scopes the viewer may read (an agent: scopes it is in).",
        access=access.DIRECTORY,
        size=Fixed(SCOPES_LISTED),
    )
    async def scopes(self, info: Info) -> list[Scope]:
        return [Scope.of(r) for r in await resolvers.readable_scopes(info)]

    @guarded(
        "The workspace's people; deactivated ones only with includeDeactivated.",
        access=access.DIRECTORY,
        size=Fixed(ACTORS_LISTED),
    )
    async def members(
        self,
        info: Info,
        include_deactivated: Annotated[
            bool,
            strawberry.argument(description="Also list people who were deactivated."),
        ] = False,
    ) -> list[Member]:
        rows = await resolvers.actors_in_workspace(info, "member", include_deactivated)
        return [Member.of(r) for r in rows]

    @guarded(
        "The workspace's agents, for pickers; archived ones only with includeArchived. Deleted "
        "agents are never listed.",
        access=access.DIRECTORY,
        size=Fixed(ACTORS_LISTED),
    )
    async def agents(
        self,
        info: Info,
        include_archived: Annotated[
            bool, strawberry.argument(description="Also list archived agents.")
        ] = False,
    ) -> list[Agent]:
        rows = await resolvers.actors_in_workspace(info, "agent", include_archived)
        return [Agent.of(r) for r in rows]

    @classmethod
    def of(cls, row: WorkspaceRow) -> Workspace:
        return cls(id=encode_id("Workspace", row.id), key=row.key, name=row.name)
