"""The Messages tab updates live (docs/live.md, The Messages tab): two people's tabs in the acme
personas' workspace, while its connector posts, edits and deletes through applyChanges. Each tab
sees a new hit arrive on top with its <mark>, an edit and a removal, in its results and in the
conversation it has open, and never a message it may not read; "N new" while scrolled down; a
lost connection shown, and what was missed delivered once it is back.

Debian's chromium driven by Playwright (tests/browser_support.py), like tests/web/test_browser.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from app.data.tokens import issue_actor_token, issue_connector_token
from app.db import connect
from tests.browser_support import (
    post_gql,
    require_browser,
    running_server,
    screenshot,
    watched_tab,
)
from tests.changes_support import APPLY, delete, edit, post
from tests.conftest import migrated_database
from tests.live_support import open_subscriptions
from tests.personas import load_personas

pytestmark = pytest.mark.browser

RESULTS = "[data-message-id]"
SEARCH = "input[type=search]"
# Polled predicates are functions: Playwright evaluates a function's source once, but an
# expression on every poll, and the tab's CSP (no 'unsafe-eval') refuses that after the first.
SCROLLED_BELOW = "y => window.scrollY > y"
SCROLLED_ABOVE = "y => window.scrollY < y"


@dataclass
class Site:
    base: str
    tokens: dict[str, str]
    connector: str

    async def apply(self, *changes: dict[str, Any]) -> None:
        """The connector's applyChanges, as a connector sends it (over HTTP)."""
        await asyncio.to_thread(
            post_gql, self.base, self.connector, APPLY, {"changes": list(changes)}
        )


@pytest.fixture(scope="module")
async def site(server_dsn: str, template_name: str) -> AsyncIterator[Site]:
    require_browser()
    name = f"recall_b_{uuid.uuid4().hex[:12]}"
    async with migrated_database(server_dsn, template_name, name) as dsn:
        conn = await connect(dsn)
        try:
            await load_personas(conn)
            tokens = {
                m: await issue_actor_token(conn, "acme", "member", m) for m in ("alice", "bob")
            }
            connector = await issue_connector_token(conn, "acme")
        finally:
            await conn.close()
        with running_server(dsn) as base:
            yield Site(base, tokens, connector)


async def _search(tab: Any, site: Site, who: str, query: str) -> None:
    await tab.goto(f"{site.base}/#token={site.tokens[who]}")
    await tab.locator(SEARCH).fill(query)
    await tab.locator(SEARCH).press("Enter")
    await tab.locator(RESULTS).first.wait_for()


async def _bodies(tab: Any) -> list[str]:
    texts: list[str] = await tab.locator(f"{RESULTS} .body").all_inner_texts()
    return texts


async def test_new_hits_edits_and_removals_arrive_in_each_readers_results_and_conversation(
    browser: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await site.apply(post("q0", "general", "bob", "the first quokka sighting"))
    async with (
        watched_tab(browser, site.base) as alice,
        watched_tab(browser, site.base) as bob,
    ):
        await _search(alice, site, "alice", "quokka")
        await _search(bob, site, "bob", "quokka")
        # alice has the hit's conversation open too.
        await alice.locator(RESULTS).first.click()
        await expect(alice.locator('.rows [aria-current="true"]')).to_contain_text("first quokka")

        await site.apply(
            post("q1", "general", "bob", "a quokka in general"),
            post("q-secret", "secret", "alice", "a quokka in the secret channel"),
            post("q-dm-bob", "dm-bob", "bob", "a quokka in bob's DM"),
        )
        # Each at its place (the newest on top), with the term marked, for its readers only.
        await expect(alice.locator(f"{RESULTS} .body")).to_have_text(
            ["a quokka in the secret channel", "a quokka in general", "the first quokka sighting"]
        )
        await expect(bob.locator(f"{RESULTS} .body")).to_have_text(
            ["a quokka in bob's DM", "a quokka in general", "the first quokka sighting"]
        )
        for tab in (alice, bob):
            await expect(tab.locator(f"{RESULTS} >> nth=1 >> mark")).to_have_text("quokka")
            await expect(tab.locator(f"{RESULTS}").nth(1)).to_have_attribute("data-live", "added")
        # The conversation (general) gets its new message, and nothing of another one.
        rows = alice.locator(".rows .row .body")
        await expect(rows.last).to_have_text("a quokka in general")
        await expect(alice.locator(".rows")).not_to_contain_text("secret channel")

        await site.apply(edit("q1", "a quokka in general, edited"))
        for tab in (alice, bob):
            edited = tab.locator(RESULTS).nth(1)
            await expect(edited.locator(".body")).to_have_text("a quokka in general, edited")
            await expect(edited.locator("mark")).to_have_text("quokka")
            await expect(edited).to_have_attribute("data-live", "edited")
        await expect(rows.last).to_have_text("a quokka in general, edited")
        await screenshot(alice, "live-edited-1280")

        await site.apply(delete("q1"))
        await expect(alice.locator(f"{RESULTS} .body")).to_have_text(
            ["a quokka in the secret channel", "the first quokka sighting"]
        )
        await expect(bob.locator(f"{RESULTS} .body")).to_have_text(
            ["a quokka in bob's DM", "the first quokka sighting"]
        )
        await expect(rows.last).to_have_text("the first quokka sighting")
        # Every update after the posts has arrived: what each may not read never came.
        assert "a quokka in bob's DM" not in await _bodies(alice)
        assert "a quokka in the secret channel" not in await _bodies(bob)
        await expect(alice.get_by_test_id("live-status")).to_have_attribute("data-state", "live")


async def test_new_hits_wait_in_n_new_while_the_viewer_has_scrolled_down(
    browser: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await site.apply(
        *(post(f"w{n}", "general", "bob", f"wombat report number {n}") for n in range(25))
    )
    async with watched_tab(browser, site.base) as tab:
        await _search(tab, site, "alice", "wombat")
        await expect(tab.locator(RESULTS)).to_have_count(20)
        await tab.evaluate("window.scrollTo(0, 700)")
        await tab.wait_for_function(SCROLLED_BELOW, arg=600)

        await site.apply(
            post("w-new1", "general", "bob", "wombat news one"),
            post("w-new2", "general", "bob", "wombat news two"),
        )
        fresh = tab.get_by_test_id("new-results")
        await expect(fresh).to_have_text("2 new")
        await expect(tab.get_by_role("button", name="2 new")).to_be_visible()
        await screenshot(tab, "live-new-1280")
        # What the viewer is reading did not move.
        await expect(tab.locator(f"{RESULTS} .body").first).to_have_text("wombat report number 24")

        await fresh.click()
        await expect(fresh).to_have_count(0)
        await expect(tab.locator(f"{RESULTS} .body").nth(0)).to_have_text("wombat news two")
        await expect(tab.locator(f"{RESULTS} .body").nth(1)).to_have_text("wombat news one")
        await expect(tab.locator(RESULTS).first.locator("mark")).to_have_text("wombat")
        await tab.wait_for_function(SCROLLED_ABOVE, arg=100)

        # Back at the top, a new hit comes straight in.
        await site.apply(post("w-new3", "general", "bob", "wombat news three"))
        await expect(tab.locator(f"{RESULTS} .body").first).to_have_text("wombat news three")
        await expect(fresh).to_have_count(0)

        # Another query ends this search's subscription: one stays open, the new search's.
        # (A post of its own: no other test may be relied on to have run first.)
        await site.apply(post("w-echidna", "general", "bob", "an echidna beside the wombats"))
        await tab.locator(SEARCH).fill("echidna")
        await tab.locator(SEARCH).press("Enter")
        await expect(tab.locator(f"{RESULTS} .body").first).to_contain_text("echidna")
        for _ in range(100):
            if await open_subscriptions(site.base) == 1:
                break
            await asyncio.sleep(0.05)
        assert await open_subscriptions(site.base) == 1


async def test_a_lost_connection_is_shown_and_what_was_missed_arrives_when_it_is_back(
    browser: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await site.apply(post("n0", "general", "bob", "a numbat at dawn"))
    down = False
    open_routes: list[Any] = []

    async def socket(ws: Any) -> None:
        if down:
            await ws.close(code=1011, reason="test: the server is away")
            return
        ws.connect_to_server()
        open_routes.append(ws)

    async with watched_tab(browser, site.base) as tab:
        await tab.route_web_socket("**/graphql", socket)
        await _search(tab, site, "alice", "numbat")
        await tab.locator(RESULTS).first.click()
        await expect(tab.locator('.rows [aria-current="true"]')).to_contain_text("at dawn")
        status = tab.get_by_test_id("live-status")
        await expect(status).to_have_attribute("data-state", "live")

        down = True
        for ws in open_routes:
            await ws.close(code=1001, reason="test: connection lost")
        await expect(tab.get_by_role("status").filter(has_text="Reconnecting…")).to_be_visible()
        await screenshot(tab, "live-reconnecting-1280")
        await site.apply(post("n1", "general", "bob", "a numbat at dusk"))
        await tab.wait_for_timeout(600)
        await expect(tab.locator(RESULTS)).to_have_count(1)
        await expect(status).to_have_attribute("data-state", "reconnecting")

        down = False
        await expect(tab.locator(f"{RESULTS} .body")).to_have_text(
            ["a numbat at dusk", "a numbat at dawn"], timeout=15_000
        )
        await expect(tab.locator(RESULTS).first.locator("mark")).to_have_text("numbat")
        await expect(tab.locator(".rows .row .body").last).to_have_text("a numbat at dusk")
        await expect(status).to_have_attribute("data-state", "live")
        await expect(status).to_contain_text("Reconnected")


async def test_a_message_posted_before_the_subscription_started_is_not_missed(
    browser: Any, site: Site
) -> None:
    """The gap between the first page and the subscription: the page's liveEvent, read before
    the page, is where the subscription starts, however late it starts."""
    from playwright.async_api import expect

    await site.apply(post("b0", "general", "bob", "a bilby in the shade"))
    held = True

    async def socket(ws: Any) -> None:
        if held:
            await ws.close(code=1011, reason="test: not yet")
            return
        ws.connect_to_server()

    async with watched_tab(browser, site.base) as tab:
        await tab.route_web_socket("**/graphql", socket)
        await _search(tab, site, "alice", "bilby")
        await site.apply(post("b1", "general", "bob", "a bilby in the sun"))
        await tab.wait_for_timeout(300)
        await expect(tab.locator(RESULTS)).to_have_count(1)
        held = False
        await expect(tab.locator(f"{RESULTS} .body")).to_have_text(
            ["a bilby in the sun", "a bilby in the shade"], timeout=15_000
        )


async def test_a_resume_the_log_no_longer_reaches_searches_again_and_says_so(
    browser: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await site.apply(post("k0", "general", "bob", "a kiwi in the morning"))
    forget = False
    open_routes: list[Any] = []

    async def socket(ws: Any) -> None:
        server = ws.connect_to_server()
        open_routes.append(ws)

        def to_server(message: str | bytes) -> None:
            nonlocal forget
            # Once, as if the page had been away longer than the live log keeps: its resume
            # names a position the log does not hold (INVALID_CURSOR).
            if forget and isinstance(message, str) and '"after":"' in message:
                forget = False
                message = message.replace('"after":"', '"after":"0000000000000000-')
            server.send(message)

        ws.on_message(to_server)

    async with watched_tab(browser, site.base) as tab:
        await tab.route_web_socket("**/graphql", socket)
        await _search(tab, site, "alice", "kiwi")
        await expect(tab.get_by_test_id("live-status")).to_have_attribute("data-state", "live")
        forget = True
        for ws in open_routes:
            await ws.close(code=1001, reason="test: connection lost")
        await site.apply(post("k1", "general", "bob", "a kiwi at night"))
        await expect(tab.get_by_role("status").filter(has_text="search ran again")).to_be_visible(
            timeout=15_000
        )
        await expect(tab.locator(f"{RESULTS} .body")).to_have_text(
            ["a kiwi at night", "a kiwi in the morning"]
        )
        # The search that ran again is live from its own page on.
        await site.apply(post("k2", "general", "bob", "a kiwi at noon"))
        await expect(tab.locator(f"{RESULTS} .body").first).to_have_text("a kiwi at noon")
