"""What the Messages tab and GraphiQL keep in the browser, whom a sign-in link signs in, and how
text from other people is shown (issue 22: 3, 4 and 8; long messages' excerpts, 2).

Debian's chromium driven by Playwright, like tests/web/test_browser.py, on a workspace of its own.
"""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.data.tokens import issue_actor_token
from app.db import connect
from app.workspace_import.importer import import_fixture
from tests.browser_support import require_browser, running_server
from tests.conftest import migrated_database

pytestmark = pytest.mark.browser

RESULTS = "[data-message-id]"
SEARCH = "input[type=search]"
LONG_NAME = "W" * 500  # the longest name a fixture takes (docs/fixtures.md, Limits)
RLO_BODY = "invoice_\u202efdp.exe and approve"
LONG_BODY = (
    ("routine status line " * 3000)
    + "the zeppelinreport is attached "
    + ("more routine text " * 2000)
)


def spoof_fixture() -> dict[str, Any]:
    return {
        "workspace": {"key": "spoof", "name": "Spoof Co"},
        "namespace": "test:spoof",
        "members": [
            {"key": "ann", "name": "Ann"},
            {"key": "fake", "name": "Al\u200bice"},
            {"key": "wide", "name": LONG_NAME},
        ],
        "scopes": [
            {"key": "lobby", "kind": "channel", "visibility": "public", "name": "lobby",
             "members": ["ann", "fake", "wide"]},
        ],
        "messages": [
            {"key": "s1", "scope": "lobby", "author": "fake", "at": "2026-01-10T10:00:00Z",
             "body": RLO_BODY},
            {"key": "s2", "scope": "lobby", "author": "wide", "at": "2026-01-11T10:00:00Z",
             "body": "please approve " + "x" * 3000},
            {"key": "s3", "scope": "lobby", "author": "ann", "at": "2026-01-12T10:00:00Z",
             "body": LONG_BODY},
        ],
    }  # fmt: skip


@dataclass
class Site:
    base: str
    ann: str
    fake: str


@pytest.fixture(scope="module")
async def site(server_dsn: str, template_name: str) -> AsyncIterator[Site]:
    require_browser()
    name = f"recall_b_{uuid.uuid4().hex[:12]}"
    async with migrated_database(server_dsn, template_name, name) as dsn:
        conn = await connect(dsn)
        try:
            await import_fixture(conn, spoof_fixture(), io.StringIO())
            ann = await issue_actor_token(conn, "spoof", "member", "ann")
            fake = await issue_actor_token(conn, "spoof", "member", "fake")
        finally:
            await conn.close()
        with running_server(dsn) as base:
            yield Site(base, ann, fake)


@pytest.fixture
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id="UTC")
    tab = await context.new_page()
    tab.set_default_timeout(10_000)
    problems: list[str] = []
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    try:
        yield tab
    finally:
        await context.close()
    assert problems == []


async def _stored(page: Any) -> dict[str, Any]:
    stored: dict[str, Any] = await page.evaluate(
        """() => ({local: Object.fromEntries(Object.keys(localStorage)
                       .map(k => [k, localStorage.getItem(k)])),
                  session: Object.fromEntries(Object.keys(sessionStorage)
                       .map(k => [k, sessionStorage.getItem(k)]))})"""
    )
    return stored


async def test_graphiql_keeps_no_token_at_rest_and_sign_out_forgets_everything(
    page: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token={site.ann}")
    await page.locator(SEARCH).wait_for()
    await page.goto(f"{site.base}/graphql")
    await page.locator(".graphiql-container").wait_for()
    # An older page left a token in GraphiQL's saved tabs: cleaned when GraphiQL loads.
    await page.evaluate(
        "t => localStorage.setItem('recall:graphiql:queries', JSON.stringify({queries: "
        "[{query: '{ viewer { member { key } } }', headers: '{\"Authorization\": \"Bearer ' + t"
        " + '\"}'}]}))",
        site.ann,
    )
    await page.reload()
    await page.locator(".graphiql-container").wait_for()
    editor = ".graphiql-query-editor .CodeMirror"
    await page.evaluate(
        "([sel, q]) => document.querySelector(sel).CodeMirror.setValue(q)",
        [editor, "{ viewer { member { key } } }"],
    )
    await page.wait_for_timeout(400)
    await page.locator(".graphiql-execute-button").click()
    await page.wait_for_function(
        "() => document.querySelector('.result-window .CodeMirror').CodeMirror.getValue()"
        ".includes('ann')"
    )
    await page.wait_for_timeout(500)
    stored = await _stored(page)
    assert stored["local"], "GraphiQL keeps its tabs"
    assert not any(site.ann in value for value in stored["local"].values()), stored["local"]

    await page.get_by_role("button", name="Forget token").click()
    await page.locator(".graphiql-container").wait_for()
    stored = await _stored(page)
    assert not any(
        site.ann in str(v) for v in [*stored["local"].values(), *stored["session"].values()]
    )

    # The Messages tab's sign-out clears what either page kept.
    await page.goto(f"{site.base}/#token={site.ann}")
    await page.locator(SEARCH).wait_for()
    await page.evaluate("localStorage.setItem('recall:graphiql:tabState', 'kept by GraphiQL')")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_label("Member token")).to_be_visible()
    stored = await _stored(page)
    assert not [k for k in stored["local"] if k.startswith("recall:")]
    assert "recall.token" not in stored["session"]


async def test_a_sign_in_link_asks_before_replacing_whoever_is_signed_in(
    page: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token={site.ann}")
    who = page.locator(".who")
    await expect(who).to_contain_text("Signed in as Ann")
    await page.goto(f"{site.base}/#token={site.fake}&q=approve")
    dialog = page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text("Switch accounts?")
    await expect(dialog).to_contain_text("(fake)")
    await expect(dialog).to_contain_text("You are signed in as Ann")
    assert "token" not in page.url
    assert await page.evaluate("sessionStorage.getItem('recall.token')") == site.ann
    await page.get_by_role("button", name="Stay signed in as Ann").click()
    await expect(dialog).to_have_count(0)
    await expect(who).to_contain_text("Ann")
    assert await page.evaluate("sessionStorage.getItem('recall.token')") == site.ann

    await page.goto(f"{site.base}/#token={site.fake}")
    await page.get_by_role("button", name="Switch to").click()
    await expect(who).to_have_attribute("data-signed-in", "fake")
    assert await page.evaluate("sessionStorage.getItem('recall.token')") == site.fake
    # The same person's link again: nothing to ask.
    await page.goto(f"{site.base}/#token={site.fake}&q=approve")
    await expect(page.locator(RESULTS).first).to_be_visible()
    await expect(page.get_by_role("alertdialog")).to_have_count(0)


async def test_hidden_characters_show_and_long_names_never_widen_the_page(
    page: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token={site.ann}&q=approve")
    await expect(page.locator(RESULTS)).to_have_count(2)
    spoofed = page.locator(f"{RESULTS}").filter(has_text="invoice")
    # The override is shown as a mark, so the text reads as written: no "exe.pdf".
    await expect(spoofed.locator(".body .hidden-char")).to_have_text("U+202E")
    body = await spoofed.locator(".body").inner_text()
    assert body.startswith("invoice_U+202Efdp.exe and approve"), body
    # "Al\u200bice" is not shown as "Alice"; names are isolated from the text around them.
    await expect(spoofed.locator(".author .hidden-char")).to_have_text("U+200B")
    assert await spoofed.locator(".author bdi").count() == 1
    # A 500-character unbroken name wraps or is cut, in the results and in the pickers.
    for width in (1280, 360):
        await page.set_viewport_size({"width": width, "height": 800})
        await asyncio.sleep(0.2)
        scroll = await page.evaluate("document.documentElement.scrollWidth")
        if scroll > width + 1:
            wide = await page.evaluate(
                "w => [...document.querySelectorAll('*')].filter(e => e.getBoundingClientRect()"
                ".right > w + 1).map(e => e.tagName + '.' + e.className).slice(0, 12)",
                width,
            )
            raise AssertionError((width, scroll, wide))
    options = await page.get_by_label("Author").locator("option").all_inner_texts()
    assert max(len(o) for o in options) <= 60


async def test_a_long_message_is_listed_by_its_excerpt(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token={site.ann}&q=zeppelinreport")
    result = page.locator(RESULTS)
    await expect(result).to_have_count(1)
    await expect(result.locator("mark")).to_have_text("zeppelinreport")
    text = await result.locator(".body").inner_text()
    assert text.startswith("… ") and text.endswith(" …") and len(text) < 520, len(text)
    # Opened, the conversation shows the whole message with its highlight.
    await result.click()
    row = page.locator("[aria-current=true]")
    await expect(row.locator("mark")).to_have_text("zeppelinreport")
    assert len(await row.locator(".body").inner_text()) > 90_000
