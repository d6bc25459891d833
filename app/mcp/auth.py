"""Recall's bearer tokens as the MCP SDK's TokenVerifier (Streamable HTTP at /mcp).

A token is checked exactly as /graphql checks it (app.data.readers.reader_for_token): an
unknown, revoked or expired token is refused by the SDK's middleware with 401 and
`WWW-Authenticate: Bearer ...`. The reader read here travels with the request (RecallAccess),
so a tool call does not read the token twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict, Field

from app.data.readers import Reader, reader_for_token
from app.db import Pools
from app.errors import ServiceUnavailable, Timeout
from app.message_search.keys import KeyRing
from app.request.scope import open_session
from app.settings import Settings


@dataclass
class Runtime:
    """What the tools need of the process: its settings, and the pools and keys its lifespan
    opens (app.server; app.mcp.stdio for `recall mcp`). Unset until then."""

    settings: Settings
    pools: Pools | None = None
    keys: KeyRing | None = None
    # `recall mcp`: the one token of the process (RECALL_TOKEN); HTTP: each request's.
    fixed_token: str | None = field(default=None, repr=False)


class RecallAccess(AccessToken):
    """The SDK's AccessToken with the reader behind it (None: the database could not be asked
    when the request came in; the tool call asks again)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    reader: Reader | None = Field(default=None, exclude=True)


class RecallTokenVerifier:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def verify_token(self, token: str) -> AccessToken | None:
        pools = self.runtime.pools
        if pools is None:
            return None
        db = open_session(pools, self.runtime.settings)
        try:
            reader = await reader_for_token(db, token)
        except (ServiceUnavailable, Timeout):
            # The database is down: the request goes on unverified, and its tool call, which
            # reads the token again, is a tool error (SERVICE_UNAVAILABLE) rather than a
            # misleading 401.
            return RecallAccess(token=token, client_id="unverified", scopes=[])
        finally:
            await db.close()
        if reader is None:
            return None
        client = f"{reader.workspace_id}:{reader.kind}:{reader.actor_id}:{reader.turn_id or 0}"
        return RecallAccess(token=token, client_id=client, scopes=[], reader=reader)
