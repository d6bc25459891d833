"""The typed per-request context: exactly what resolvers read."""

from __future__ import annotations

from dataclasses import dataclass

import strawberry

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
