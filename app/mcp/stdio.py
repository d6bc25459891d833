"""`recall mcp`: the MCP server over stdio, for one token (RECALL_TOKEN).

The same server and tools as /mcp (app.mcp.server), on pools of its own opened like
`recall serve`'s (the statement timeout on every connection, the request budget around every
call). The token is checked before the server starts (UsageError: `recall mcp` exits 2) and
read again on every call, so revoking it takes effect at once. Nothing but the protocol is
written to stdout; logs go to stderr.
"""

from __future__ import annotations

from app.api.request_scope import open_session
from app.data.readers import reader_for_token
from app.db import open_pools
from app.errors import RecallError, UsageError
from app.mcp.auth import Runtime
from app.mcp.server import build_server
from app.search.keys import KeyRing
from app.settings import Settings


async def serve_stdio(settings: Settings, dsn: str, token: str) -> None:
    try:
        pools = await open_pools(settings, dsn)
    except (OSError, RecallError) as e:
        raise UsageError(f"cannot connect to the database: {e}") from None
    try:
        master = settings.master_key
        keys = KeyRing(
            pools.custom,
            master.get_secret_value() if master else None,
            timeout=settings.db_acquire_timeout,
        )
        db = open_session(pools, settings)
        try:
            reader = await reader_for_token(db, token)
        finally:
            await db.close()
        if reader is None:
            raise UsageError("RECALL_TOKEN is not a valid token (unknown, revoked or expired)")
        runtime = Runtime(settings, pools, keys, fixed_token=token)
        await build_server(runtime).run_stdio_async()
    finally:
        await pools.close()
