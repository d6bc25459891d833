"""The root fields every token may use: `viewer`, and `node` / `nodes` by global id."""

from __future__ import annotations

import strawberry

from app.api.context import Info
from app.api.node import Node
from app.api.viewer.nodes import resolve_nodes
from app.api.viewer.types import Viewer
from app.errors import BadUserInput


@strawberry.type
class CoreQuery:
    @strawberry.field(
        description="Any object by its global id; null if the viewer may not read it."
    )
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        return (await resolve_nodes(info, [id]))[0]

    @strawberry.field(description="Objects by global id, in order; null where not readable.")
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        if len(ids) > 500:
            raise BadUserInput("nodes takes at most 500 ids")
        return await resolve_nodes(info, ids)

    @strawberry.field
    def viewer(self) -> Viewer:
        return Viewer()
