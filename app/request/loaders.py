"""Per-request dataloaders, one per relation. Created fresh for every request (caches live for
one request only), each batch is one statement."""

from __future__ import annotations

from typing import TypeVar

from aiodataloader import DataLoader

from app.data import directory, identity_links, messages
from app.data.identity_links import LinkRow
from app.data.readers import Reader
from app.data.rows import ActorRow, MessageRow, ScopeRow
from app.data.session import Session

T = TypeVar("T")


class _Loader(DataLoader[int, T | None]):
    def __init__(self, db: Session, reader: Reader) -> None:
        super().__init__()
        self.db = db
        self.reader = reader


class ActorByIdLoader(_Loader[ActorRow]):
    async def batch_load_fn(self, keys: list[int]) -> list[ActorRow | None]:
        by_key = {
            a.id: a for a in await directory.actors_by_ids(self.db, self.reader.workspace_id, keys)
        }
        return [by_key.get(k) for k in keys]


class UncheckedScopeByIdLoader(_Loader[ScopeRow]):
    """Scopes by id WITHOUT authorization, on purpose: only for the ids of rows this request
    already read and authorized (a message's scope, a thread's parent, a turn's scope). A
    client-supplied id goes through ReadableScopeByIdLoader."""

    async def batch_load_fn(self, keys: list[int]) -> list[ScopeRow | None]:
        rows = await directory.scopes_by_ids_unfiltered(self.db, self.reader.workspace_id, keys)
        by_key = {s.id: s for s in rows}
        return [by_key.get(k) for k in keys]


class ReadableScopeByIdLoader(_Loader[ScopeRow]):
    """Scopes looked up by a client-supplied id: only those the reader may list."""

    async def batch_load_fn(self, keys: list[int]) -> list[ScopeRow | None]:
        by_key = {
            s.id: s for s in await directory.readable_scopes_by_ids(self.db, self.reader, keys)
        }
        return [by_key.get(k) for k in keys]


class MessageByIdLoader(_Loader[MessageRow]):
    """Messages the reader may read (eligibility in SQL); others load as None. Their authors
    and scopes come in the same statement and prime those loaders, so a page of messages with
    `author` and `scope` costs one statement, not three."""

    def __init__(
        self, db: Session, reader: Reader, actors: ActorByIdLoader, scopes: UncheckedScopeByIdLoader
    ) -> None:
        super().__init__(db, reader)
        self.actors = actors
        self.scopes = scopes

    async def batch_load_fn(self, keys: list[int]) -> list[MessageRow | None]:
        by_key = {}
        for message in await messages.readable_messages_by_ids(self.db, self.reader, keys):
            by_key[message.id] = message
            if message.author is not None:
                self.actors.prime(message.author.id, message.author)
            if message.scope is not None:
                self.scopes.prime(message.scope.id, message.scope)
        return [by_key.get(k) for k in keys]


class NamespaceNameLoader(_Loader[str]):
    """A member's namespace, by id: the workspace's namespace names (a handful)."""

    async def batch_load_fn(self, keys: list[int]) -> list[str | None]:
        names = await directory.namespace_names(self.db, self.reader.workspace_id, keys)
        return [names.get(k) for k in keys]


class ViewerLinksLoader(_Loader[list[LinkRow]]):
    """Member.identityLinks: the viewer's own links (live and revoked) on the viewer's member
    and on each member linked to it; nothing on anyone else, nor for a token that is not a
    member's. One statement per request, whatever the number of members asked."""

    async def batch_load_fn(self, keys: list[int]) -> list[list[LinkRow] | None]:
        reader = self.reader
        if reader.kind != "member":
            return [[] for _ in keys]
        links = await identity_links.links_of(self.db, reader.workspace_id, reader.actor_id)
        viewer = reader.actor_id
        return [
            list(links) if k == viewer else [link for link in links if link.other(viewer) == k]
            for k in keys
        ]


class Loaders:
    """Every loader of one request. Creating one is cheap; it runs no statement until used."""

    def __init__(self, db: Session, reader: Reader) -> None:
        self.actor_by_id = ActorByIdLoader(db, reader)
        self.unchecked_scope_by_id = UncheckedScopeByIdLoader(db, reader)
        self.readable_scope_by_id = ReadableScopeByIdLoader(db, reader)
        self.namespace_name = NamespaceNameLoader(db, reader)
        self.viewer_links = ViewerLinksLoader(db, reader)
        self.message_by_id = MessageByIdLoader(
            db, reader, self.actor_by_id, self.unchecked_scope_by_id
        )

    def remember_message(self, message: MessageRow) -> None:
        """A message hydrated for this reader by another statement (a search's), with its
        author and scope: later loads in this request answer from it."""
        self.message_by_id.prime(message.id, message)
        if message.author is not None:
            self.actor_by_id.prime(message.author.id, message.author)
        if message.scope is not None:
            self.unchecked_scope_by_id.prime(message.scope.id, message.scope)
