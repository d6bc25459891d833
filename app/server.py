"""The ASGI application (Starlette) and `recall serve`."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypedDict

import asyncpg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api import scalars
from app.api.view import RecallGraphQL
from app.changes.erasure_worker import finish_erasures
from app.db import Pools, open_pools
from app.errors import RecallError
from app.live.hub import Hub
from app.live.pruning import prune_live_log
from app.mcp.http import metadata_routes as mcp_metadata_routes
from app.mcp.server import http_app as mcp_http_app
from app.message_search.keys import KeyRing
from app.migrate import pending
from app.observability import logging as recall_logging
from app.observability import metrics, tracing
from app.observability.middleware import RequestMiddleware
from app.settings import Settings, hand_database_url_to_workers
from app.web import routes as web_routes

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


class State(TypedDict):
    """The lifespan's state: Starlette hands a copy to every request (request.state)."""

    # The custom-planned pool (readiness, metrics) and both pools (requests: app.db.Pools).
    pool: asyncpg.Pool
    pools: Pools
    keys: KeyRing
    # The process's live push hub (app.live.hub): its LISTEN connection and subscribers.
    hub: Hub


def create_app(
    settings: Settings,
    dsn: str,
    *,
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    tracer_provider: TracerProvider | None = None,
) -> Starlette:
    """The app, with one asyncpg pool opened and closed by the lifespan, and `background`
    work (the demo's live stream) running while it serves, besides the removal of deleted
    messages' text (app.changes.erasure_worker; off when RECALL_TEXT_REMOVAL_INTERVAL is 0).
    With a tracer provider, requests and statements are traced (app.observability.tracing).

    What the app needs of the process's libraries is installed here, explicitly: strict ID
    and String input on graphql-core's scalars (app.api.scalars) and the request id on every
    log record (app.observability.logging); each has an uninstall()."""
    scalars.install()
    recall_logging.install()

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[State]:
        pools = await open_pools(settings, dsn)
        pool = pools.custom
        metrics.watch_pools(pools.named())
        master = settings.master_key
        keys = KeyRing(
            pool,
            master.get_secret_value() if master else None,
            timeout=settings.db_acquire_timeout,
        )
        # Read now if the database answers; otherwise by the first request that needs them.
        with contextlib.suppress(RecallError):
            await keys.keys()
        hub = Hub(
            dsn,
            max_per_token=settings.live_max_per_token,
            max_per_process=settings.live_max_per_process,
            poll_interval=settings.live_poll_interval,
            # Half the pool at most for subscribers' reads: requests keep the other half.
            database_share=max(1, settings.pool_max_size // 2),
            # Every subscriber not too far behind to go on is served from the shared feed.
            feed_keep=settings.live_max_backlog,
        )
        tasks = [asyncio.create_task(work()) for work in background]
        # Every process prunes the live log (app.live.pruning); concurrent prunes are harmless.
        tasks.append(asyncio.create_task(prune_live_log(pool, settings.live_retention)))
        if settings.text_removal_interval > 0:
            # Every process runs it; they take turns per workspace (app.changes.erasure_worker).
            tasks.append(asyncio.create_task(finish_erasures(pool, settings.text_removal_interval)))
        try:
            # /mcp (app.mcp): its tools use the same pools and keys; its SDK session manager
            # runs as long as the app.
            async with mcp.running(pools, keys):
                yield {"pool": pool, "pools": pools, "keys": keys, "hub": hub}
        finally:
            await hub.close()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            metrics.watch_pools({})
            await pools.close()

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

    async def metrics_endpoint(request: Request) -> Response:
        pool: asyncpg.Pool | None = getattr(request.state, "pool", None)
        if pool is not None:
            await metrics.refresh_search_readiness(pool)
            await metrics.refresh_text_removal_pending(pool)
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    graphql = RecallGraphQL(settings)
    mcp = mcp_http_app(settings)
    # Outermost first: the request id and headers wrap everything, CORS answers preflights.
    middleware = [Middleware(RequestMiddleware, traced=tracer_provider is not None)]
    if tracer_provider is not None:
        # The server span around everything else, so the request id and outcome land on it.
        middleware.insert(0, Middleware(tracing.instrument, tracer_provider))
    if settings.cors_origin_list:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_origin_list,
                allow_methods=["GET", "POST"],
                # mcp-protocol-version: what a browser-based MCP client sends on every /mcp
                # request after initialize (docs/mcp.md).
                allow_headers=[
                    "authorization",
                    "content-type",
                    "accept",
                    "x-request-id",
                    "mcp-protocol-version",
                ],
                expose_headers=["x-request-id"],
                max_age=600,
            )
        )
    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            # Subscriptions (docs/live.md): graphql-transport-ws on the same path.
            WebSocketRoute("/graphql", graphql),
            # MCP over Streamable HTTP (docs/mcp.md): the SDK's app (which routes /mcp itself)
            # inside app.mcp.http's JSON-RPC framing, and /mcp's RFC 9728 metadata.
            Route("/mcp", mcp.app),
            *mcp_metadata_routes(),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics_endpoint),
            *web_routes(),
        ],
        middleware=middleware,
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
    workers: int = 1,
) -> None:
    import uvicorn

    from app.db import connect, resolve_database_url
    from app.migrate import migrate

    tracing.check_configuration(settings.tracing)
    dsn = resolve_database_url(settings)
    host = host or settings.host
    port = port or settings.port

    async def prepare() -> str | None:
        conn = await connect(dsn)
        try:
            await migrate(conn)
            if demo:
                from app.demo import demo_banner

                return await demo_banner(
                    conn,
                    host,
                    port,
                    settings.recall_data_dir,
                    external_database=settings.database_url is not None,
                )
            return None
        finally:
            await conn.close()

    banner = asyncio.run(prepare())
    if banner:
        print(banner, file=sys.stderr)
    processes = f" ({workers} worker processes)" if workers > 1 else ""
    print(
        f"recall: Messages at http://{host}:{port}/ , GraphiQL at /graphql, MCP at /mcp{processes}",
        file=sys.stderr,
    )
    # uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown. Turning them into a normal
    # exit lets atexit run, so the embedded PostgreSQL stops if this was its last user. (With
    # workers, uvicorn's supervisor handles them: it stops the workers and returns.)
    signal.signal(signal.SIGTERM, _exit_quietly)
    signal.signal(signal.SIGINT, _exit_quietly)
    from app.observability.logging import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    # Logging is configured here and in each worker (JSON lines); uvicorn's access log would
    # print query strings.
    if workers > 1:
        # Several processes accept on one listening socket (uvicorn's supervisor binds it and
        # starts them), each with its own app and pool (`worker_app`). They read their settings
        # from the environment like this process, with the database this process resolved:
        # the embedded server's, if that is what it started, which it keeps running.
        hand_database_url_to_workers(dsn)
        uvicorn.run(
            "app.server:worker_app",
            factory=True,
            workers=workers,
            host=host,
            port=port,
            log_config=None,
            log_level=settings.log_level,
            access_log=False,
            timeout_graceful_shutdown=settings.shutdown_grace,
        )
        return
    background = []
    if demo_live:
        from app.demo_live import replay_demo_changes

        background.append(lambda: replay_demo_changes(dsn))
    app = create_app(
        settings,
        dsn,
        background=background,
        tracer_provider=tracing.provider_from_environment(settings.tracing),
    )
    _freeze()
    # A stop waits for open requests and subscriptions at most this long, then cancels them:
    # an orchestrator's SIGTERM must end the process promptly, busy or not.
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_config=None,
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=settings.shutdown_grace,
    )


def worker_app() -> Starlette:
    """The app of one process of `recall serve --workers N`: uvicorn imports this module in
    each worker and calls it. Its own settings (from the environment `serve` left it, with the
    database resolved) and, through create_app's lifespan, its own pool."""
    from app.observability.logging import configure_logging

    settings = Settings()
    assert settings.database_url is not None  # set by serve() for its workers
    configure_logging(settings.log_format, settings.log_level)
    app = create_app(
        settings,
        settings.database_url,
        tracer_provider=tracing.provider_from_environment(settings.tracing),
    )
    _freeze()
    return app


def _freeze() -> None:
    """What exists now (modules, the schema, the app) lives as long as the process: moved out
    of the collector's generations, it is not traversed again by every full collection, which
    otherwise pauses a request now and then. Process-wide, so not in create_app."""
    gc.collect()
    gc.freeze()


def _exit_quietly(_signum: int, _frame: object) -> None:
    raise SystemExit(0)
