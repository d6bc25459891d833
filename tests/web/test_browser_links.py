"""Linked accounts in the Messages tab (issues 27 and 33): one person signed in as two identities
(Slack and the web app) starts a link on one, confirms it on the other, approves the confirmer
on the first (shown by name, key and namespace), both see it live, one revokes it; a stranger
who confirms someone's code gets a pending link the starter declines; refusals
(BAD_USER_INPUT) are shown as such.

Debian's chromium driven by Playwright, like tests/web/test_browser.py: two tabs in two browser
contexts (session storage is per tab), one per identity, on a workspace of their own.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.data.tokens import issue_actor_token
from app.db import connect
from app.workspace_import.importer import import_fixture
from tests.browser_support import (
    require_browser,
    running_server,
    screenshot,
    watched_tab,
)
from tests.conftest import migrated_database

pytestmark = pytest.mark.browser

SEARCH = "input[type=search]"


def links_fixture() -> dict[str, Any]:
    return {
        "workspace": {"key": "duo", "name": "Duo Co"},
        "namespace": "slack:duo",
        "members": [
            {"key": "ann", "name": "Ann Lee"},
            {"key": "ann-web", "name": "Ann Lee", "namespace": "web:duo"},
            {"key": "bob", "name": "Bob Okafor"},
            {"key": "eve", "name": "Eve Stone", "namespace": "web:duo"},
            {"key": "cy", "name": "Cy Park"},
        ],
        "scopes": [
            {"key": "general", "kind": "channel", "visibility": "public", "name": "general",
             "members": ["ann", "bob"]},
        ],
        "messages": [
            {"key": "m1", "scope": "general", "author": "bob", "at": "2026-03-01T09:00:00Z",
             "body": "hello"},
        ],
    }  # fmt: skip


@dataclass
class Site:
    base: str
    ann: str  # slack:duo
    ann_web: str  # web:duo, the same person
    bob: str  # slack:duo, someone else
    eve: str  # web:duo, someone else
    cy: str  # slack:duo, someone else


@pytest.fixture(scope="module")
async def site(server_dsn: str, template_name: str) -> AsyncIterator[Site]:
    require_browser()
    name = f"recall_b_{uuid.uuid4().hex[:12]}"
    async with migrated_database(server_dsn, template_name, name) as dsn:
        conn = await connect(dsn)
        try:
            await import_fixture(conn, links_fixture(), io.StringIO())
            tokens = [
                await issue_actor_token(conn, "duo", "member", k)
                for k in ("ann", "ann-web", "bob", "eve", "cy")
            ]
        finally:
            await conn.close()
        with running_server(dsn) as base:
            yield Site(base, *tokens)


async def open_links(page: Any, site: Site, token: str) -> Any:
    """Signed in with `token`, the Linked accounts panel open; returns the panel."""
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token={token}")
    await page.locator(SEARCH).wait_for()
    toggle = page.get_by_role("button", name="Linked accounts", exact=True)
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    panel = page.get_by_role("region", name="Linked accounts")
    await expect(panel).to_be_visible()
    await expect(panel.get_by_role("heading", name="Linked accounts")).to_be_focused()
    return panel


async def test_start_on_one_identity_confirm_on_the_other_approve_on_the_first_and_revoke(
    browser: Any, site: Site
) -> None:
    from playwright.async_api import expect

    async with (
        watched_tab(browser, site.base) as slack,
        watched_tab(browser, site.base) as web,
    ):
        a = await open_links(slack, site, site.ann)
        await expect(a).to_contain_text("slack:duo")
        await expect(a.get_by_text("No linked accounts yet.")).to_be_visible()

        # A: start a link — a code, and when it expires.
        await a.get_by_role("button", name="Start a link").click()
        code_box = a.get_by_label("Your link code")
        await expect(code_box).to_have_text(re.compile(r"\S"))
        code = (await code_box.inner_text()).strip()
        await expect(a.locator(".link-code time")).to_have_attribute(
            "datetime", re.compile(r"^\d{4}-")
        )
        await expect(a).to_contain_text("Single use; it expires at")
        await screenshot(slack, "linked-accounts-code-1280", a)

        # B: a mistyped code is refused, clearly; then the right one links the two.
        b = await open_links(web, site, site.ann_web)
        await expect(b).to_contain_text("web:duo")
        await b.get_by_label("Code from your other identity").fill("NOPE-NOPE")
        await b.get_by_role("button", name="Confirm link").click()
        alert = b.get_by_role("alert")
        await expect(alert).to_contain_text("That code was not accepted")
        await expect(alert).to_contain_text("BAD_USER_INPUT")
        await b.get_by_label("Code from your other identity").fill(code)
        await b.get_by_role("button", name="Confirm link").click()
        # Whom the code links to is shown first; nothing is linked before an explicit yes.
        preview = b.locator(".link-preview")
        await expect(preview).to_contain_text("Ann Lee (ann, slack:duo)")
        await expect(b.locator(".link-row")).to_have_count(0)
        await b.get_by_role("button", name="Yes, link them").click()
        await expect(b.get_by_role("alert")).to_have_count(0)
        # Confirmed, it is pending: it opens nothing until A approves B.
        await expect(b.get_by_role("status").filter(has_text="Confirmed")).to_contain_text(
            "Ann Lee (ann, slack:duo)"
        )
        b_row = b.locator(".link-row")
        await expect(b_row).to_have_count(1)
        await expect(b_row).to_contain_text("slack:duo")
        await expect(b_row).to_contain_text("Waiting for approval")

        # A sees who confirmed the code without reloading (name, key, namespace) and approves.
        a_row = a.locator(".link-row")
        await expect(a_row).to_have_count(1, timeout=15_000)
        await expect(a_row).to_contain_text("Waiting for your approval")
        await expect(a_row).to_contain_text("Ann Lee (ann-web, web:duo) confirmed your code")
        await expect(a.get_by_role("status").filter(has_text="confirmed your code")).to_be_visible()
        await expect(a.get_by_label("Your link code")).to_have_count(0)
        await screenshot(slack, "linked-accounts-pending-1280", a)
        await a.get_by_role(
            "button", name="Approve the link with Ann Lee (ann-web, web:duo)"
        ).click()
        await expect(a_row).to_contain_text("Live")
        await expect(a.get_by_role("status").filter(has_text="Linked to")).to_contain_text(
            "Ann Lee (ann-web, web:duo)"
        )
        assert await a_row.get_attribute("data-link-id") == await b_row.get_attribute(
            "data-link-id"
        )

        # B sees it turn live without reloading, and is told.
        await expect(b_row).to_contain_text("Live", timeout=15_000)
        await expect(b.get_by_role("status").filter(has_text="Linked to")).to_contain_text(
            "Ann Lee (ann, slack:duo)"
        )
        await screenshot(slack, "linked-accounts-live-1280", a)

        # A revokes it (asked once more first); B sees it revoked on the next load.
        await a.get_by_role(
            "button", name="Revoke the link with Ann Lee (ann-web, web:duo)"
        ).click()
        await a.get_by_role("button", name="Revoke link").click()
        await expect(a_row).to_contain_text("Revoked")
        await expect(a_row.get_by_role("button", name="Revoke", exact=True)).to_have_count(0)
        await expect(a.get_by_role("status").filter(has_text="revoked")).to_be_visible()

        await b.get_by_role("button", name="Close linked accounts").click()
        await expect(web.get_by_role("button", name="Linked accounts", exact=True)).to_be_focused()
        await web.get_by_role("button", name="Linked accounts", exact=True).click()
        await expect(web.locator(".link-row")).to_contain_text("Revoked")
        await expect(web.locator(".link-row").get_by_role("button", name="Revoke")).to_have_count(0)


async def test_refusals_are_shown_and_change_nothing(browser: Any, site: Site) -> None:
    from playwright.async_api import expect

    async with watched_tab(browser, site.base) as tab:
        panel = await open_links(tab, site, site.bob)
        await panel.get_by_role("button", name="Start a link").click()
        code = (await panel.get_by_label("Your link code").inner_text()).strip()

        # The identity that started a code cannot confirm it.
        await panel.get_by_label("Code from your other identity").fill(code)
        await panel.get_by_role("button", name="Confirm link").click()
        alert = panel.get_by_role("alert")
        await expect(alert).to_contain_text("That code was not accepted")
        await expect(alert).to_contain_text("your other identity")
        await expect(panel.get_by_text("No linked accounts yet.")).to_be_visible()

        # Escape closes the panel; the search is still there.
        await panel.get_by_label("Code from your other identity").press("Escape")
        await expect(tab.get_by_role("region", name="Linked accounts")).to_have_count(0)
        await expect(tab.locator(SEARCH)).to_be_visible()


async def test_a_stranger_who_confirms_a_code_waits_and_the_starter_declines(
    browser: Any, site: Site
) -> None:
    """Eve (web:duo) confirms a code Cy (slack:duo) handed around: Cy's tab shows Eve by name,
    key and namespace, waiting for approval; Cy declines and both see it declined."""
    from playwright.async_api import expect

    async with (
        watched_tab(browser, site.base) as starter,
        watched_tab(browser, site.base) as stranger,
    ):
        c = await open_links(starter, site, site.cy)
        await c.get_by_role("button", name="Start a link").click()
        code = (await c.get_by_label("Your link code").inner_text()).strip()

        e = await open_links(stranger, site, site.eve)
        await e.get_by_label("Code from your other identity").fill(code)
        await e.get_by_role("button", name="Confirm link").click()
        await e.get_by_role("button", name="Yes, link them").click()
        e_row = e.locator(".link-row")
        await expect(e_row).to_contain_text("Waiting for approval")
        await expect(e_row.get_by_role("button", name="Approve", exact=True)).to_have_count(0)

        c_row = c.locator(".link-row")
        await expect(c_row).to_contain_text("Eve Stone (eve, web:duo) confirmed your code",
                                            timeout=15_000)  # fmt: skip
        # Back later (the page reloaded, still signed in): the top bar says a link waits.
        await starter.reload()
        await starter.locator(SEARCH).wait_for()
        toggle = starter.get_by_role("button", name="Linked accounts", exact=True)
        await expect(toggle).to_have_accessible_description("1 to approve")
        await screenshot(starter, "linked-accounts-waiting-1280", starter.locator(".topbar"))
        await toggle.click()
        c = starter.get_by_role("region", name="Linked accounts")
        c_row = c.locator(".link-row")
        await expect(c_row).to_contain_text("Eve Stone (eve, web:duo) confirmed your code")
        await expect(c_row).to_contain_text("web:duo")
        await c.get_by_role("button", name="Decline the link with Eve Stone (eve, web:duo)").click()
        await expect(c_row).to_contain_text("Declined")
        await expect(c_row.get_by_role("button")).to_have_count(0)
        await expect(c.get_by_role("status").filter(has_text="declined")).to_be_visible()
        await expect(toggle).not_to_have_accessible_description("1 to approve")

        await expect(e_row).to_contain_text("Declined", timeout=15_000)
        await expect(e.get_by_role("status").filter(has_text="was not approved")).to_be_visible()
