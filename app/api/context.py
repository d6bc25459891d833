"""The typed per-request context: exactly what resolvers read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import strawberry
from strawberry.types.nodes import SelectedField

from app.data.readers import Reader
from app.data.session import Session
from app.history_search.ledger import Ledger
from app.message_search.keys import Keys
from app.request.loaders import Loaders
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    keys: Keys
    reader: Reader
    db: Session
    loaders: Loaders
    # The provenance ledger of the token's turn (turn tokens only): every historySearch and
    # postReply of the request shares it.
    ledger: Ledger | None


Info = strawberry.Info[Context, None]


def selects(info: Info, name: str) -> bool:
    """Whether the field being resolved asks for its field `name` (directly, or through a
    fragment; `@include(if: false)` and `@skip(if: true)` honoured): for a value that must be
    read before the field's own work, only when asked."""

    def among(selections: list[Any]) -> bool:
        for s in selections:
            if not _included(s.directives):
                continue
            if isinstance(s, SelectedField):
                if s.name == name:
                    return True
            elif among(s.selections):
                return True
        return False

    return any(among(f.selections) for f in info.selected_fields)


def _included(directives: dict[str, Any]) -> bool:
    include, skip = directives.get("include"), directives.get("skip")
    return (include is None or bool(include.get("if"))) and (skip is None or not skip.get("if"))
