"""node(id) / nodes(ids): global object lookup, batched per type, filtered by the reader.

A well-formed id of something the viewer may not read — another workspace's object, another
person's DM, an ineligible message — resolves to null, exactly like an id of nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence

from app.api.context import Info
from app.api.directory.schema import (
    resolve_agents,
    resolve_members,
    resolve_messages,
    resolve_scopes,
    resolve_workspaces,
)
from app.api.history_search.schema import resolve_turns
from app.api.identity.schema import resolve_links
from app.api.node import Node
from app.request.ids import decode_id

NodeResolver = Callable[[Info, Sequence[int]], Awaitable[list[Node | None]]]


# Each area that owns node types registers their resolvers here (its schema module's).
NODE_RESOLVERS: dict[str, NodeResolver] = {
    "Workspace": resolve_workspaces,
    "Scope": resolve_scopes,
    "Member": resolve_members,
    "Agent": resolve_agents,
    "Message": resolve_messages,
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
