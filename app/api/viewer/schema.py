"""The root fields every token may use: `viewer`, and `node` / `nodes` by global id."""

from __future__ import annotations

from typing import Annotated

import strawberry

from app import access
from app.api.context import Info
from app.api.node import Node
from app.api.policies import IDS, guarded
from app.api.viewer.nodes import resolve_nodes
from app.api.viewer.types import Viewer
from app.errors import BadUserInput


@strawberry.type
class CoreQuery:
    @guarded(
        "Any object by its global id; null if the viewer may not read it (or it does not "
        "exist: the two are indistinguishable).",
        access=access.READ_OBJECTS,
    )
    async def node(
        self,
        info: Info,
        id: Annotated[
            strawberry.ID,
            strawberry.argument(
                description="A global id of any type; a malformed one is BAD_USER_INPUT."
            ),
        ],
    ) -> Node | None:
        return (await resolve_nodes(info, [id]))[0]

    @guarded(
        "Objects by global id, in the order given; null where not readable. Batched: one "
        "query per type, whatever the number.",
        access=access.READ_OBJECTS,
        size=IDS,
    )
    async def nodes(
        self,
        info: Info,
        ids: Annotated[
            list[strawberry.ID],
            strawberry.argument(description="At most 500 ids (BAD_USER_INPUT beyond)."),
        ],
    ) -> list[Node | None]:
        if len(ids) > 500:
            raise BadUserInput("nodes takes at most 500 ids")
        return await resolve_nodes(info, ids)

    @guarded("Who the token speaks for.", access=access.VIEWER)
    def viewer(self) -> Viewer:
        return Viewer()
