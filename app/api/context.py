"""The typed per-request context: settings, reader, session and loaders."""

from __future__ import annotations

from dataclasses import dataclass, field

import strawberry
from starlette.requests import Request

from app.api.loaders import Loaders
from app.data.readers import Reader
from app.data.session import Session
from app.settings import Settings


@dataclass
class Context:
    request: Request
    settings: Settings
    reader: Reader
    db: Session
    loaders: Loaders
    # Request-lived state owned by surfaces (e.g. a turn's provenance ledger).
    extras: dict[str, object] = field(default_factory=dict)


Info = strawberry.Info[Context, None]
