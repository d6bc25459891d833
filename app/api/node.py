"""The Node interface: every object with a global id (app.request.ids) implements it."""

from __future__ import annotations

import strawberry


@strawberry.interface(description="An object with a global id.")
class Node:
    id: strawberry.ID = strawberry.field(
        description="Opaque global id; pass it to node(id:) or to filters and arguments that "
        "take this type's id. Stable for the object's lifetime."
    )
