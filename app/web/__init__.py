"""The browser pages: the Messages tab at `/` and GraphiQL's page (rendered for app.api.view).

Everything they load is inside the package under `static/` (plain ES modules and the vendored
builds in `static/vendor/`, see its README): no build step, no CDN. Both pages are sent with a
strict Content-Security-Policy: scripts and styles only from this origin, no inline script, and
requests only to this origin.
"""

from __future__ import annotations

import html
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # The Messages tab keeps its state in the URL fragment; nothing of it goes to another host.
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

_PACKAGE = "app.web"
_STATIC = resources.files(_PACKAGE) / "static"


def _page(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


_INDEX = _page("index.html")
_GRAPHIQL = _page("graphiql.html")


async def messages_tab(_request: Request) -> HTMLResponse:
    return HTMLResponse(_INDEX, headers=PAGE_HEADERS)


def graphiql_page(default_query: str) -> HTMLResponse:
    """GraphiQL from the vendored build, opening on `default_query` (static/graphiql.js)."""
    body = _GRAPHIQL.replace("{{DEFAULT_QUERY}}", html.escape(default_query, quote=True))
    return HTMLResponse(body, headers=PAGE_HEADERS)


def routes() -> list[BaseRoute]:
    """`/` (the Messages tab) and `/static/…` (its files, GraphiQL's and the vendored ones)."""
    return [
        Route("/", messages_tab, methods=["GET"]),
        Mount("/static", app=StaticFiles(packages=[(_PACKAGE, "static")]), name="static"),
    ]
