"""The ASGI application (Starlette) and `recall serve`."""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypedDict

import asyncpg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.view import RecallGraphQL
from app.db import create_pool
from app.migrate import pending
from app.settings import Settings
from app.web import routes as web_routes


class State(TypedDict):
    """The lifespan's state: Starlette hands a copy to every request (request.state)."""

    pool: asyncpg.Pool


def create_app(
    settings: Settings,
    dsn: str,
    *,
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
) -> Starlette:
    """The app, with one asyncpg pool opened and closed by the lifespan, and `background`
    work (the demo's live stream) running while it serves."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[State]:
        pool = await create_pool(
            dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            statement_timeout_ms=settings.statement_timeout_ms,
            connect_timeout=settings.db_acquire_timeout,
        )
        tasks = [asyncio.create_task(work()) for work in background]
        try:
            yield {"pool": pool}
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await pool.close()

    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        pool: asyncpg.Pool = request.state.pool

        async def check() -> list[str]:
            async with pool.acquire() as conn:
                return await pending(conn)  # type: ignore[arg-type]

        try:
            # One budget for acquiring, connecting and asking: a frozen database must not
            # hold the probe longer than an orchestrator waits for it.
            missing = await asyncio.wait_for(check(), timeout=2)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            return JSONResponse({"status": "database unreachable"}, status_code=503)
        if missing:
            return JSONResponse(
                {"status": "migrations pending", "pending": missing}, status_code=503
            )
        return JSONResponse({"status": "ready"})

    graphql = RecallGraphQL(settings)
    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            *web_routes(),
        ],
        lifespan=lifespan,
    )


@asynccontextmanager
async def in_process(app: Starlette) -> AsyncIterator[ASGIApp]:
    """The app with its lifespan running, for an in-process client (tests, bench.explain): each
    request gets a copy of the lifespan's state, as a server hands it over."""
    async with app.router.lifespan_context(app) as state:

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                scope = {**scope, "state": dict(state or {})}
            await app(scope, receive, send)

        yield with_state


def serve(
    settings: Settings,
    *,
    host: str | None,
    port: int | None,
    demo: bool,
    demo_live: bool = False,
) -> None:
    import uvicorn

    from app.db import connect, resolve_database_url
    from app.migrate import migrate

    dsn = resolve_database_url(settings)
    host = host or settings.host
    port = port or settings.port

    async def prepare() -> str | None:
        conn = await connect(dsn)
        try:
            await migrate(conn)
            if demo:
                return await _demo_banner(conn, host, port)
            return None
        finally:
            await conn.close()

    banner = asyncio.run(prepare())
    if banner:
        print(banner, file=sys.stderr)
    print(f"recall: Messages at http://{host}:{port}/ , GraphiQL at /graphql", file=sys.stderr)
    # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown. Turning them into a normal
    # exit lets atexit run, so the embedded PostgreSQL stops if this was its last user.
    signal.signal(signal.SIGTERM, _exit_quietly)
    signal.signal(signal.SIGINT, _exit_quietly)
    background = []
    if demo_live:
        from app.demo_live import replay_demo_changes

        background.append(lambda: replay_demo_changes(dsn))
    app = create_app(settings, dsn, background=background)
    # What exists now (modules, the schema, the app) lives as long as the process: moved out of
    # the collector's generations, it is not traversed again by every full collection, which
    # otherwise pauses a request now and then. Here, not in create_app: it is process-wide.
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=host, port=port, log_level="info")


def _exit_quietly(_signum: int, _frame: object) -> None:
    raise SystemExit(0)


async def _demo_banner(conn: asyncpg.Connection, host: str, port: int) -> str:
    from app.data.tokens import issue_actor_token, issue_connector_token
    from app.demo import ensure_demo

    info = await ensure_demo(conn, progress=sys.stderr)
    member = await issue_actor_token(conn, info.workspace_key, "member", info.member_key)
    agent = await issue_actor_token(conn, info.workspace_key, "agent", info.agent_key)
    connector = await issue_connector_token(conn, info.workspace_key)
    url = f"http://{host}:{port}/graphql"
    return "\n".join(
        [
            "",
            f"Demo workspace '{info.workspace_key}' is ready.",
            f"  Messages tab:  http://{host}:{port}/#token={member}   (signs {info.member_key} in)",
            f"  GraphiQL:      {url}",
            f"  member token:  {member}   ({info.member_key})",
            f"  agent token:   {agent}   ({info.agent_key})",
            f"  connector:     {connector}   (applyChanges; docs/changes.md)",
            "",
            "Paste into GraphiQL's Headers tab:",
            f'  {{"Authorization": "Bearer {member}"}}',
            "",
            "Or from a terminal:",
            f"  curl -s {url} -H 'Authorization: Bearer {member}' -H 'Content-Type: application/json' \\",
            '    -d \'{"query": "{ viewer { workspace { key name } member { name } } }"}\'',
            "",
        ]
    )
