"""Applying a batch of live changes (docs/changes.md): one transaction, all or nothing.

`applyChanges` and `recall apply` both come here, so a change means the same on either path.
The caller opens the transaction; everything here runs inside it, after the workspace row
lock (app.data.workspaces.lock_workspace), so batches of one workspace apply one after another.

Replays are safe: a change that is already true (a member with that name, a post whose key
exists in the same scope by the same author, a deleted message deleted again) is counted
`unchanged` and writes nothing. In particular a replayed post never overwrites a later edit and
never brings back a deleted message: an existing key is never written by a post.

A change that cannot be applied raises ChangeRejected naming its index; the caller's
transaction then rolls the whole batch back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.changes.model import (
    AddScopeMembers,
    ArchiveAgent,
    Change,
    ChangeRejected,
    CreateMemory,
    CreateScope,
    DeactivateMember,
    DeleteAgent,
    DeleteMessage,
    EditMessage,
    EraseMemberMessages,
    MakeScopePrivate,
    PostMessage,
    RemoveScopeMembers,
    RevokeIdentityLinks,
    UpsertAgent,
    UpsertMember,
)
from app.data import (
    actors,
    deletions,
    identity_links,
    lineage,
    live_events,
    memories,
    message_writes,
    scopes,
)
from app.data.actors import ActorState
from app.data.audiences import AudienceSpec, audience_id, conversation_audiences, follows_membership
from app.data.executor import Executor
from app.data.message_writes import MessageState, NewMessage
from app.data.scopes import ScopeState
from app.data.workspaces import LockedWorkspace, lock_workspace


@dataclass(slots=True)
class ApplyResult:
    applied: int = 0
    unchanged: int = 0
    # Messages removed by eraseMemberMessages changes.
    erased_messages: int = 0
    # The messages this batch posted (their keys), for callers that report or index them.
    posted: list[str] = field(default_factory=list)

    def add(self, other: ApplyResult) -> None:
        self.applied += other.applied
        self.unchanged += other.unchanged
        self.erased_messages += other.erased_messages
        self.posted += other.posted


async def apply_changes(db: Executor, workspace_id: int, changes: Sequence[Change]) -> ApplyResult:
    """Apply `changes` in order inside the caller's transaction."""
    ws = await lock_workspace(db, workspace_id)
    applier = _Applier(db, ws)
    result = ApplyResult()
    i = 0
    while i < len(changes):
        # Consecutive posts are written together: a connector's stream is mostly posts, and
        # one set-based write per run keeps a batch of 100 at a handful of statements.
        if isinstance(changes[i], PostMessage):
            j = i
            while j < len(changes) and isinstance(changes[j], PostMessage):
                j += 1
            posted = await applier.post([(k, changes[k]) for k in range(i, j)])  # type: ignore[misc]
            result.applied += len(posted)
            result.unchanged += (j - i) - len(posted)
            result.posted += posted
            i = j
            continue
        outcome = await applier.apply_one(i, changes[i])
        if outcome is False:
            result.unchanged += 1
        else:
            result.applied += 1
            if isinstance(outcome, int) and not isinstance(outcome, bool):
                result.erased_messages += outcome
        i += 1
    if applier.lineage_forgotten:
        await lineage.cache_missing_summaries(db, workspace_id)
    # Last, so the live log's position lock is held only until the commit (app.data.live_events).
    await live_events.record(db, workspace_id, applier.live)
    return result


class _Applier:
    def __init__(self, db: Executor, ws: LockedWorkspace) -> None:
        self.db = db
        self.ws = ws
        self.last_global_seq = ws.last_global_seq
        self.lineage_forgotten = False
        # Namespace ids by name, as this batch resolved (or created) them.
        self.namespaces: dict[str, int] = {}
        # What live subscribers hear of this batch (docs/live.md): ids and kinds, in order.
        self.live: list[tuple[int | None, str]] = []

    def access_changed(self) -> None:
        """Who may read what changed: subscribers recheck what they delivered."""
        if not self.live or self.live[-1] != (None, live_events.ACCESS):
            self.live.append((None, live_events.ACCESS))

    # Each handler returns False for "unchanged", True (or a count) for "applied".

    async def apply_one(self, index: int, change: Change) -> bool | int:
        try:
            return await self._apply(change)
        except _Reject as e:
            raise ChangeRejected(index, e.reason) from None

    async def _apply(self, change: Change) -> bool | int:
        """The handler of the change's kind (its model class)."""
        match change:
            case UpsertMember():
                return await self._upsert_member(change)
            case DeactivateMember():
                return await self._deactivate_member(change)
            case UpsertAgent():
                return await self._upsert_agent(change)
            case ArchiveAgent():
                return await self._archive_agent(change)
            case DeleteAgent():
                return await self._delete_agent(change)
            case CreateScope():
                return await self._create_scope(change)
            case AddScopeMembers():
                return await self._add_scope_members(change)
            case RemoveScopeMembers():
                return await self._remove_scope_members(change)
            case MakeScopePrivate():
                return await self._make_scope_private(change)
            case CreateMemory():
                return await self._create_memory(change)
            case PostMessage():
                return bool(await self.post([(0, change)]))
            case EditMessage():
                return await self._edit_message(change)
            case DeleteMessage():
                return await self._delete_message(change)
            case EraseMemberMessages():
                return await self._erase_member_messages(change)
            case RevokeIdentityLinks():
                return await self._revoke_identity_links(change)

    # --- actors ------------------------------------------------------------------------

    async def _namespace(self, name: str | None) -> int:
        """A namespace named by a change (docs/identity.md): None is the workspace's; another
        is created the first time it is named."""
        if name is None:
            return self.ws.namespace_id
        if name not in self.namespaces:
            self.namespaces[name] = await actors.namespace_id(self.db, self.ws.id, name)
        return self.namespaces[name]

    async def _upsert_member(self, c: UpsertMember) -> bool:
        found = (await actors.actors_by_keys(self.db, self.ws.id, [c.key])).get(c.key)
        name = c.name or c.key
        if found is None:
            ns = await self._namespace(c.namespace)
            await actors.insert_actor(self.db, self.ws.id, c.key, "member", name, None, ns)
            return True
        if found.kind != "member":
            raise _Reject(f"'{_short(c.key)}' is an agent, not a member")
        if c.namespace is not None and await self._namespace(c.namespace) != found.namespace_id:
            # Its audiences, scopes and links are in its namespace: another identity is
            # another member.
            raise _Reject(f"member '{_short(c.key)}' is in another namespace; it cannot move")
        if found.name == name:
            return False
        await actors.update_actor(self.db, self.ws.id, found.id, name, None)
        return True

    async def _deactivate_member(self, c: DeactivateMember) -> bool:
        member = await self._actor(c.key, "member")
        if member.deactivated:
            return False
        await actors.deactivate_member(self.db, self.ws.id, member.id)
        await identity_links.revoke_member_links(self.db, self.ws.id, member.id, "deactivation")
        self.access_changed()
        return True

    async def _revoke_identity_links(self, c: RevokeIdentityLinks) -> bool:
        member = await self._actor(c.key, "member")
        revoked = await identity_links.revoke_member_links(
            self.db, self.ws.id, member.id, "connector"
        )
        if revoked:
            self.access_changed()
        return revoked > 0

    async def _upsert_agent(self, c: UpsertAgent) -> bool:
        found = await actors.actors_by_keys(self.db, self.ws.id, [c.key, c.owner])
        owner = found.get(c.owner)
        if owner is None or owner.kind != "member":
            raise _Reject(f"owner: unknown member '{_short(c.owner)}'")
        agent = found.get(c.key)
        name = c.name or c.key
        if agent is None:
            await actors.insert_actor(self.db, self.ws.id, c.key, "agent", name, owner.id)
            return True
        if agent.kind != "agent":
            raise _Reject(f"'{_short(c.key)}' is a member, not an agent")
        if agent.deleted:
            raise _Reject(f"agent '{_short(c.key)}' was deleted")
        if agent.name == name and agent.owner_id == owner.id:
            return False
        await actors.update_actor(self.db, self.ws.id, agent.id, name, owner.id)
        return True

    async def _archive_agent(self, c: ArchiveAgent) -> bool:
        agent = await self._actor(c.key, "agent")
        if agent.archived or agent.deleted:
            return False
        await actors.archive_agent(self.db, self.ws.id, agent.id)
        return True

    async def _delete_agent(self, c: DeleteAgent) -> bool:
        agent = await self._actor(c.key, "agent", deleted_ok=True)
        if agent.deleted:
            return False
        await actors.delete_agent(self.db, self.ws.id, agent.id)
        return True

    async def _actor(self, key: str, kind: str, *, deleted_ok: bool = False) -> ActorState:
        found = (await actors.actors_by_keys(self.db, self.ws.id, [key])).get(key)
        if found is None or found.kind != kind or (found.deleted and not deleted_ok):
            raise _Reject(f"unknown {kind} '{_short(key)}'")
        return found

    # --- scopes ------------------------------------------------------------------------

    async def _create_scope(self, c: CreateScope) -> bool:
        existing = await scopes.scopes_by_keys(
            self.db, self.ws.id, [c.key, *([c.parent] if c.parent else [])]
        )
        found = existing.get(c.key)
        if found is not None:
            if c.namespace is not None and await self._namespace(c.namespace) != found.namespace_id:
                raise _Reject(f"scope '{_short(c.key)}' exists in another namespace")
            return self._replayed_scope(c, found, existing.get(c.parent) if c.parent else None)
        if c.kind == "thread":
            return await self._create_thread(c, existing.get(c.parent) if c.parent else None)
        if c.kind == "channel" and c.visibility is None:
            raise _Reject("visibility: a channel needs 'public', 'private', 'shared' or 'open'")
        if c.kind != "channel" and c.visibility is not None:
            raise _Reject(f"visibility: only a channel has a visibility, not a {c.kind}")
        if c.parent is not None or c.root is not None:
            raise _Reject("only a thread has a parent and a root")
        actors = await self._live_actors(c.members or [])
        ns = await self._namespace(c.namespace)
        self._same_namespace(actors, ns)
        people = [a.id for a in actors if a.kind == "member"]
        if follows_membership(c.kind, c.visibility) and not people:
            what = "a dm" if c.kind == "dm" else f"a {c.visibility} channel"
            raise _Reject(f"members: {what} needs at least one member who is a person")
        origin, destination = conversation_audiences(c.kind, c.visibility, people)
        await scopes.insert_scope(
            self.db,
            self.ws.id,
            ns,
            key=c.key,
            kind=c.kind,
            visibility=c.visibility,
            name=c.name,
            parent_id=None,
            root_message_id=None,
            origin_audience_id=await self._audience(origin, ns),
            destination_audience_id=await self._audience(destination, ns),
            member_ids=[a.id for a in actors],
        )
        return True

    def _same_namespace(self, members: Sequence[ActorState], ns: int) -> None:
        """A scope's people belong to its namespace; agents may be in scopes of any."""
        for a in members:
            if a.kind == "member" and a.namespace_id != ns:
                raise _Reject(
                    f"members: '{_short(a.key)}' is a member of another namespace than the scope's"
                )

    def _replayed_scope(self, c: CreateScope, found: ScopeState, parent: ScopeState | None) -> bool:
        if found.kind != c.kind or (
            c.kind == "thread" and (parent is None or parent.id != found.parent_id)
        ):
            raise _Reject(f"scope '{_short(c.key)}' exists as another {found.kind}")
        if found.visibility != c.visibility:
            # Made private since it was created public: this is that creation replayed. Any
            # other difference asks for a conversion that is not a change of its own.
            replayed = found.made_private and (found.visibility, c.visibility) == (
                "private",
                "public",
            )
            if not replayed and (found.visibility, c.visibility) == ("private", "public"):
                raise _Reject("a private channel cannot be made public")
            if not replayed:
                raise _Reject(
                    f"scope '{_short(c.key)}' exists with visibility '{found.visibility}'"
                )
        return False

    async def _create_thread(self, c: CreateScope, parent: ScopeState | None) -> bool:
        if c.visibility is not None:
            raise _Reject("visibility: only a channel has a visibility, not a thread")
        if c.members:
            raise _Reject("members: a thread lists no members (it has its parent's)")
        if c.parent is None or parent is None:
            raise _Reject(f"parent: unknown scope '{_short(c.parent or '')}'")
        if parent.kind == "thread":
            raise _Reject("parent: a thread's parent is a channel or dm")
        if c.root is None:
            raise _Reject("root: a thread needs a root message")
        if c.namespace is not None and await self._namespace(c.namespace) != parent.namespace_id:
            raise _Reject("namespace: a thread is in its parent's namespace")
        root = (await message_writes.messages_by_keys(self.db, self.ws.id, [c.root])).get(c.root)
        if root is None or root.scope_id != parent.id:
            raise _Reject(f"root: no message '{_short(c.root)}' in the parent scope")
        origin, destination = await scopes.audiences_of(self.db, self.ws.id, parent.id)
        await scopes.insert_scope(
            self.db,
            self.ws.id,
            parent.namespace_id,
            key=c.key,
            kind="thread",
            visibility=None,
            name=c.name,
            parent_id=parent.id,
            root_message_id=root.id,
            origin_audience_id=origin,
            destination_audience_id=destination,
            member_ids=[],
        )
        return True

    async def _add_scope_members(self, c: AddScopeMembers) -> bool:
        scope = await self._conversation(c.scope)
        actors = await self._live_actors(c.members)
        self._same_namespace(actors, scope.namespace_id)
        added = await scopes.add_members(self.db, self.ws.id, scope.id, [a.id for a in actors])
        if added and any(a.kind == "member" for a in actors):
            await self._follow_membership(scope)
        return added > 0

    async def _remove_scope_members(self, c: RemoveScopeMembers) -> bool:
        scope = await self._conversation(c.scope)
        found = await actors.actors_by_keys(self.db, self.ws.id, c.members)
        for key in c.members:
            if key not in found:
                raise _Reject(f"members: unknown member or agent '{_short(key)}'")
        removed = await scopes.remove_members(
            self.db, self.ws.id, scope.id, [a.id for a in found.values()]
        )
        if removed and any(a.kind == "member" for a in found.values()):
            await self._follow_membership(scope)
            self.access_changed()
        return removed > 0

    async def _make_scope_private(self, c: MakeScopePrivate) -> bool:
        scope = await self._conversation(c.key)
        if scope.kind != "channel":
            raise _Reject(
                f"'{_short(c.key)}' is a {scope.kind}; only a channel can be made private"
            )
        if scope.visibility == "private":
            return False
        if scope.visibility != "public":
            raise _Reject(
                f"only a public channel can be made private, not a {scope.visibility} one"
            )
        people = await scopes.people_of(self.db, self.ws.id, scope.id)
        audience = await self._audience(
            conversation_audiences("channel", "private", people)[0], scope.namespace_id
        )
        await scopes.set_conversation_audiences(
            self.db,
            self.ws.id,
            scope.id,
            visibility="private",
            origin_audience_id=audience,
            destination_audience_id=audience,
        )
        if await scopes.narrow_history(self.db, self.ws.id, scope.id, audience):
            self.lineage_forgotten = True
        self.access_changed()
        return True

    async def _conversation(self, key: str) -> ScopeState:
        scope = (await scopes.scopes_by_keys(self.db, self.ws.id, [key])).get(key)
        if scope is None:
            raise _Reject(f"unknown scope '{_short(key)}'")
        if scope.kind == "thread":
            raise _Reject(f"'{_short(key)}' is a thread; a thread has its parent's members")
        return scope

    async def _follow_membership(self, scope: ScopeState) -> None:
        """Messages posted from now on get the audience of the people now in the room."""
        if not follows_membership(scope.kind, scope.visibility):
            return
        people = await scopes.people_of(self.db, self.ws.id, scope.id)
        origin, destination = conversation_audiences(scope.kind, scope.visibility, people)
        await scopes.set_conversation_audiences(
            self.db,
            self.ws.id,
            scope.id,
            visibility=None,
            origin_audience_id=await self._audience(origin, scope.namespace_id),
            destination_audience_id=await self._audience(destination, scope.namespace_id),
        )

    async def _live_actors(self, keys: Sequence[str]) -> list[ActorState]:
        found = await actors.actors_by_keys(self.db, self.ws.id, keys)
        seen: set[str] = set()
        out = []
        for key in keys:
            actor = found.get(key)
            if actor is None or actor.deleted:
                raise _Reject(f"members: unknown member or agent '{_short(key)}'")
            if key in seen:
                raise _Reject(f"members: duplicate member '{_short(key)}'")
            seen.add(key)
            out.append(actor)
        return out

    async def _audience(self, spec: AudienceSpec, namespace_id: int) -> int:
        """The audience `spec` in a namespace: the scope's (docs/identity.md)."""
        return await audience_id(self.db, self.ws.id, namespace_id, spec)

    # --- memories ----------------------------------------------------------------------

    async def _create_memory(self, c: CreateMemory) -> bool:
        if await memories.memories_by_keys(self.db, self.ws.id, [c.key]):
            return False
        if c.audience.kind == "public" and c.audience.namespace is not None:
            raise _Reject("audience.namespace: a public audience has no namespace")
        ns = await self._namespace(c.audience.namespace)
        readers: list[int] = []
        if c.audience.kind == "members":
            if not c.audience.readers:
                raise _Reject("audience.readers: a members audience needs at least one reader")
            found = await actors.actors_by_keys(self.db, self.ws.id, c.audience.readers)
            for key in c.audience.readers:
                if key not in found or found[key].kind != "member":
                    raise _Reject(f"audience.readers: unknown member '{_short(key)}'")
                if found[key].namespace_id != ns:
                    raise _Reject(
                        f"audience.readers: '{_short(key)}' is a member of another namespace"
                    )
            readers = [found[k].id for k in c.audience.readers]
        elif c.audience.readers:
            raise _Reject("audience.readers: only a members audience has readers")
        spec = AudienceSpec(c.audience.kind, tuple(sorted(set(readers))))
        await memories.insert_memory(self.db, self.ws.id, c.key, await self._audience(spec, ns))
        return True

    # --- messages ----------------------------------------------------------------------

    async def post(self, posts: Sequence[tuple[int, PostMessage]]) -> list[str]:
        """Write a run of posts at once; the keys of those that were new."""
        ws = self.ws.id
        message_keys = [p.key for _, p in posts] + [s for _, p in posts for s in p.sources]
        existing = await message_writes.messages_by_keys(self.db, ws, message_keys)
        in_scope = await scopes.scopes_by_keys(self.db, ws, [p.scope for _, p in posts])
        by_author = await actors.actors_by_keys(self.db, ws, [p.author for _, p in posts])
        memory_keys = [m for _, p in posts for m in p.memory_sources]
        memory_ids = (
            await memories.memories_by_keys(self.db, ws, memory_keys) if memory_keys else {}
        )

        fresh = [(i, p) for i, p in posts if p.key not in existing]
        ids = iter(await message_writes.new_ids(self.db, len(fresh))) if fresh else iter(())
        # Posts of this run get their ids first, so a later post of the run may cite one.
        planned: dict[str, tuple[int, int, int]] = {}  # key -> (id, scope id, author id)
        seqs: dict[int, int] = {}
        written: list[NewMessage] = []
        for index, p in posts:
            scope = in_scope.get(p.scope)
            author = by_author.get(p.author)
            if scope is None:
                raise ChangeRejected(index, f"scope: unknown scope '{_short(p.scope)}'")
            if author is None or author.deleted:
                raise ChangeRejected(index, f"author: unknown member or agent '{_short(p.author)}'")
            known = existing.get(p.key)
            earlier = planned.get(p.key)
            if known is not None or earlier is not None:
                same = (
                    (known.scope_id, known.author_id) if known else (earlier[1], earlier[2])  # type: ignore[index]
                )
                if same != (scope.id, author.id):
                    raise ChangeRejected(
                        index,
                        f"message '{_short(p.key)}' exists in another scope or by another author",
                    )
                continue  # a replay: never rewrites the message (a later edit or delete stands)
            source_ids = self._sources(index, p, existing, planned)
            cited_memories = []
            for j, key in enumerate(p.memory_sources):
                if key not in memory_ids:
                    raise ChangeRejected(
                        index, f"memorySources[{j}]: unknown memory '{_short(key)}'"
                    )
                cited_memories.append(memory_ids[key])
            if len(set(cited_memories)) != len(cited_memories):
                raise ChangeRejected(index, "memorySources: duplicate source")
            message_id = next(ids)
            planned[p.key] = (message_id, scope.id, author.id)
            seq = seqs.get(scope.id, scope.last_seq) + 1
            seqs[scope.id] = seq
            self.last_global_seq += 1
            written.append(
                NewMessage(
                    id=message_id,
                    key=p.key,
                    scope_id=scope.id,
                    seq=seq,
                    global_seq=self.last_global_seq,
                    author_id=author.id,
                    body=p.body,
                    created_at=p.at,
                    # The audience of the conversation now (a thread: its parent's), so a
                    # private channel's post reaches exactly its people at this moment.
                    audience_id=scope.origin_audience_id,
                    evidence=p.evidence,
                    source_ids=tuple(source_ids),
                    memory_ids=tuple(cited_memories),
                )
            )
        if written:
            await message_writes.insert_messages(self.db, ws, written, self.last_global_seq)
            self.live += [(m.id, live_events.POST) for m in written]
        return [m.key for m in written]

    def _sources(
        self,
        index: int,
        p: PostMessage,
        existing: dict[str, MessageState],
        planned: dict[str, tuple[int, int, int]],
    ) -> list[int]:
        out: list[int] = []
        for j, key in enumerate(p.sources):
            if key == p.key:
                raise ChangeRejected(index, f"sources[{j}]: a message cannot be its own source")
            if key in existing:
                out.append(existing[key].id)
            elif key in planned:
                out.append(planned[key][0])
            else:
                raise ChangeRejected(index, f"sources[{j}]: unknown message '{_short(key)}'")
        if len(set(out)) != len(out):
            raise ChangeRejected(index, "sources: duplicate source")
        return out

    async def _edit_message(self, c: EditMessage) -> bool:
        message = await self._message(c.key)
        if message.deleted or message.body == c.body:
            return False
        await message_writes.edit_message(self.db, self.ws.id, message.id, c.body)
        self.live.append((message.id, live_events.EDIT))
        return True

    # Deletions hide the messages in this transaction; their text goes right after it
    # commits, in bounded chunks (app.changes.erasure).

    async def _delete_message(self, c: DeleteMessage) -> bool:
        message = await self._message(c.key)
        if message.deleted:
            return False
        if not await deletions.hide_messages(self.db, self.ws.id, [message.id]):
            return False
        self.live.append((message.id, live_events.DELETE))
        return True

    async def _erase_member_messages(self, c: EraseMemberMessages) -> bool | int:
        found = (await actors.actors_by_keys(self.db, self.ws.id, [c.key])).get(c.key)
        if found is None or found.kind != "member":
            raise _Reject(f"unknown member '{_short(c.key)}'")
        erased = await deletions.hide_authored_by(self.db, self.ws.id, found.id)
        if erased:
            # Possibly thousands: one recheck of what each subscriber delivered, not a row each.
            self.access_changed()
        return erased if erased else False

    async def _message(self, key: str) -> MessageState:
        found = (await message_writes.messages_by_keys(self.db, self.ws.id, [key])).get(key)
        if found is None:
            raise _Reject(f"unknown message '{_short(key)}'")
        return found


class _Reject(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _short(key: str) -> str:
    return key if len(key) <= 60 else key[:60] + "…"
