"""node(id) / nodes(ids): global object lookup, batched per type, filtered by the reader.

A well-formed id of something the viewer may not read — another workspace's object, another
person's DM, an ineligible message — resolves to null, exactly like an id of nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence

from app.api.context import Info
from app.api.directory.types import Agent, Message, Scope, Workspace
from app.api.history.schema import resolve_turns
from app.api.identity.schema import resolve_links
from app.api.identity.types import Member
from app.api.node import Node
from app.data import directory
from app.request.ids import decode_id

NodeResolver = Callable[[Info, Sequence[int]], Awaitable[list[Node | None]]]


async def _workspaces(info: Info, pks: Sequence[int]) -> list[Node | None]:
    own = info.context.reader.workspace_id
    row = await directory.workspace_by_id(info.context.db, own) if own in pks else None
    return [Workspace.of(row) if row and pk == own else None for pk in pks]


async def _scopes(info: Info, pks: Sequence[int]) -> list[Node | None]:
    rows = await info.context.loaders.readable_scope_by_id.load_many(pks)
    return [Scope.of(r) if r else None for r in rows]


async def _actors(kind: str, info: Info, pks: Sequence[int]) -> list[Node | None]:
    rows = await info.context.loaders.actor_by_id.load_many(pks)
    out: list[Node | None] = []
    for r in rows:
        # A deleted agent is no object any more; its messages show a DeletedAgent author.
        if r is None or r.kind != kind or r.state == "deleted":
            out.append(None)
        else:
            out.append(Member.of(r) if kind == "member" else Agent.of(r))
    return out


async def _members(info: Info, pks: Sequence[int]) -> list[Node | None]:
    return await _actors("member", info, pks)


async def _agents(info: Info, pks: Sequence[int]) -> list[Node | None]:
    return await _actors("agent", info, pks)


async def _messages(info: Info, pks: Sequence[int]) -> list[Node | None]:
    rows = await info.context.loaders.message_by_id.load_many(pks)
    return [Message.of(r) if r else None for r in rows]


# Surfaces that own further node types (e.g. Turn) register their resolver here.
NODE_RESOLVERS: dict[str, NodeResolver] = {
    "Workspace": _workspaces,
    "Scope": _scopes,
    "Member": _members,
    "Agent": _agents,
    "Message": _messages,
    "Turn": resolve_turns,
    "IdentityLink": resolve_links,
}


async def resolve_nodes(info: Info, ids: Sequence[str]) -> list[Node | None]:
    """One batch per node type, whatever the number of ids. (Who may ask: the policy of the
    fields that call this, app.access.READ_OBJECTS.)"""
    by_type: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for position, value in enumerate(ids):
        type_name, pk = decode_id(value)
        by_type[type_name].append((position, pk))
    out: list[Node | None] = [None] * len(ids)
    for type_name, entries in by_type.items():
        resolver = NODE_RESOLVERS.get(type_name)
        if resolver is None:
            continue
        found = await resolver(info, [pk for _, pk in entries])
        for (position, _), node in zip(entries, found, strict=True):
            out[position] = node
    return out
