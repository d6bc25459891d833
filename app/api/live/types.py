"""The update types of live push (docs/live.md), built from app.live.updates' updates."""

from __future__ import annotations

from enum import Enum

import strawberry

from app.api.directory.types import Message
from app.api.message_search.types import MessageSearchEdge
from app.live.updates import Update
from app.message_search.search import MessageHit
from app.request.ids import encode_id


@strawberry.enum(description="What happened to a message, for this subscription.")
class UpdateKind(Enum):
    ADDED = strawberry.enum_value(
        "ADDED", description="A new message that is a hit (or of the conversation)."
    )
    EDITED = strawberry.enum_value(
        "EDITED",
        description="An edited message that is a hit now (place it by its order: it may not "
        "have been one before).",
    )
    REMOVED = strawberry.enum_value(
        "REMOVED",
        description="A message that is not, or no longer, a hit the viewer may see (deleted, "
        "edited, or its access changed): only its id. Drop it if shown; ignore an unknown id.",
    )


_EVENT = (
    "Opaque, increasing position of this update in the workspace's live log; pass it as "
    "`after` to resume right after it."
)


@strawberry.type(description="One update of a messageSearchUpdates subscription.")
class MessageSearchUpdate:
    event: str = strawberry.field(description=_EVENT)
    kind: UpdateKind = strawberry.field(description="What happened (see UpdateKind).")
    edge: MessageSearchEdge | None = strawberry.field(
        description="ADDED and EDITED: the hit, as messageSearch shows it (highlights, excerpt)."
    )
    removed_id: strawberry.ID | None = strawberry.field(
        description="REMOVED: the Message id, and nothing else."
    )

    @classmethod
    def of(cls, update: Update, hit: MessageHit | None) -> MessageSearchUpdate:
        return cls(
            event=update.event,
            kind=UpdateKind(update.kind),
            edge=MessageSearchEdge.of(hit) if hit is not None else None,
            removed_id=_removed(update),
        )


@strawberry.type(description="One update of a scopeMessages subscription.")
class ScopeMessageUpdate:
    event: str = strawberry.field(description=_EVENT)
    kind: UpdateKind = strawberry.field(description="What happened (see UpdateKind).")
    message: Message | None = strawberry.field(
        description="ADDED and EDITED: the message as the viewer may read it."
    )
    removed_id: strawberry.ID | None = strawberry.field(
        description="REMOVED: the Message id, and nothing else."
    )

    @classmethod
    def of(cls, update: Update) -> ScopeMessageUpdate:
        hit = update.hit
        return cls(
            event=update.event,
            kind=UpdateKind(update.kind),
            message=Message.of(hit.message) if hit is not None and hit.message else None,
            removed_id=_removed(update),
        )


def _removed(update: Update) -> strawberry.ID | None:
    return encode_id("Message", update.removed_id) if update.removed_id is not None else None
