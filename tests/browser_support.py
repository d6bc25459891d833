"""Browser tests' harness: Recall under a real uvicorn on 127.0.0.1 (a background thread), and
Debian's chromium driven by Playwright for Python (no browser download).

Without /usr/bin/chromium (or the playwright package) the browser tests skip with the reason;
with RECALL_REQUIRE_BROWSER=1 (CI, .ci/run) they fail instead.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = os.environ.get("RECALL_SCREENSHOTS", "")


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def require_browser() -> None:
    reason = browser_missing()
    if reason is None:
        return
    if os.environ.get("RECALL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RECALL_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(f"browser tests skipped: {reason}")


@contextmanager
def running_server(dsn: str) -> Iterator[str]:
    """`recall serve`'s app on a free port of 127.0.0.1, in a thread; yields its base URL."""
    import uvicorn

    from app.server import create_app
    from app.settings import Settings

    port = free_port()
    app = create_app(Settings(), dsn)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="recall-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def screenshot(page: Any, name: str, element: Any = None) -> None:
    """With RECALL_SCREENSHOTS=DIR, keep a screenshot of this state (of the page, or of one
    element: a locator) as DIR/NAME.png."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        await (element or page).screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"))


def chromium_path() -> str:
    return str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium") or CHROMIUM)


@asynccontextmanager
async def watched_tab(browser: Any, base: str, timezone_id: str = "UTC") -> AsyncIterator[Any]:
    """A fresh tab (its own context: 1280 × 800, `timezone_id`) on the site at `base`, as
    tests/web/test_browser.py's `page` fixture: a request to another host, a page error or a
    Content-Security-Policy violation fails the test."""
    context = await browser.new_context(
        viewport={"width": 1280, "height": 800}, timezone_id=timezone_id
    )
    outside: list[str] = []
    problems: list[str] = []

    async def only_this_server(route: Any) -> None:
        if route.request.url.startswith(base + "/"):
            await route.fallback()
        else:
            outside.append(route.request.url)
            await route.abort()

    await context.route("**/*", only_this_server)
    tab = await context.new_page()
    tab.set_default_timeout(10_000)
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and "Content Security Policy" in m.text
            else None
        ),
    )
    try:
        yield tab
    finally:
        await context.close()
    assert outside == [], "the page loaded something from another host"
    assert problems == []


def post_gql(base: str, token: str, query: str, variables: dict[str, Any] | None = None) -> Any:
    """A GraphQL request to a running site, outside the browser (set-up and cross-checks);
    fails the test on any error."""
    response = httpx.post(
        f"{base}/graphql",
        json={"query": query, "variables": variables or {}},
        headers={"authorization": f"Bearer {token}"},
    )
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body["data"]
