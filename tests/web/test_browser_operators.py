"""Search operators in the Messages tab (issue 26): suggestions while typing `from:` / `in:`, the
operators in effect as removable chips, the pickers as views of the typed operators, the query
kept in the URL as typed, and operator-only queries.

Debian's chromium driven by Playwright, like tests/web/test_browser.py, on a small workspace of its
own (ann signs in; `secret` is a private channel she may not read).
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from app.data.tokens import issue_actor_token
from app.db import connect
from app.message_search.operators import split_operators
from app.workspace_import.importer import import_fixture
from tests.browser_support import (
    post_gql,
    require_browser,
    running_server,
    screenshot,
    watched_tab,
)
from tests.conftest import migrated_database

pytestmark = pytest.mark.browser

RESULTS = "[data-message-id]"
SEARCH = "input[type=search]"
SUGGESTIONS = "#q-suggestions"


def operators_fixture() -> dict[str, Any]:
    def msg(key: str, scope: str, author: str, at: str, body: str) -> dict[str, Any]:
        return {"key": key, "scope": scope, "author": author, "at": at, "body": body}

    return {
        "workspace": {"key": "ops", "name": "Ops Co"},
        "namespace": "test:ops",
        "members": [
            {"key": "ann", "name": "Ann Lee"},
            {"key": "bob", "name": "Bob Okafor"},
            {"key": "cy", "name": "Cy Park"},
        ],
        "agents": [{"key": "helper", "name": "Helper", "owner": "ann"}],
        "scopes": [
            {"key": "general", "kind": "channel", "visibility": "public", "name": "general",
             "members": ["ann", "bob", "cy", "helper"]},
            {"key": "infra", "kind": "channel", "visibility": "public", "name": "infra",
             "members": ["ann", "bob"]},
            {"key": "secret", "kind": "channel", "visibility": "private", "name": "secret",
             "members": ["bob", "cy"]},
            {"key": "dm-ann-bob", "kind": "dm", "members": ["ann", "bob"]},
        ],
        "messages": [
            # 05:00 on March 1st in Tokyo, still February 28th in UTC.
            msg("g0", "general", "bob", "2026-02-28T20:00:00Z", "early rollback thoughts"),
            msg("g1", "general", "bob", "2026-03-01T09:00:00Z", "rollback plan for the release"),
            msg("g2", "general", "ann", "2026-03-02T09:00:00Z", "the rollback went fine"),
            msg("i1", "infra", "bob", "2026-03-03T09:00:00Z", "infra rollback checklist"),
            msg("i2", "infra", "ann", "2026-03-04T09:00:00Z", "disk alert on infra"),
            msg("h1", "general", "helper", "2026-03-05T09:00:00Z", "summary: rollback done"),
            msg("d1", "dm-ann-bob", "bob", "2026-03-06T09:00:00Z", "a rollback note for you"),
            msg("s1", "secret", "cy", "2026-03-07T09:00:00Z", "secret rollback"),
        ],
    }  # fmt: skip


@dataclass
class Site:
    base: str
    ann: str

    def gql(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        return post_gql(self.base, self.ann, query, variables)

    def search_ids(self, query: str, time_zone: str = "UTC") -> list[str]:
        data = self.gql(
            "query($q: String!, $tz: String!) { messageSearch(query: $q, timeZone: $tz, first: 50)"
            " { edges { node { id } } } }",
            {"q": query, "tz": time_zone},
        )
        return [e["node"]["id"] for e in data["messageSearch"]["edges"]]


@pytest.fixture(scope="module")
async def site(server_dsn: str, template_name: str) -> AsyncIterator[Site]:
    require_browser()
    name = f"recall_b_{uuid.uuid4().hex[:12]}"
    async with migrated_database(server_dsn, template_name, name) as dsn:
        conn = await connect(dsn)
        try:
            await import_fixture(conn, operators_fixture(), io.StringIO())
            ann = await issue_actor_token(conn, "ops", "member", "ann")
        finally:
            await conn.close()
        with running_server(dsn) as base:
            yield Site(base, ann)


@pytest.fixture
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    async with watched_tab(browser, site.base) as tab:
        yield tab


async def sign_in(page: Any, site: Site, q: str = "") -> None:
    state = f"&q={httpx.QueryParams({'q': q})['q']}" if q else ""
    await page.goto(f"{site.base}/#token={site.ann}{state}")
    await page.locator(SEARCH).wait_for()


async def shown_ids(page: Any) -> list[str]:
    ids: list[str] = await page.locator(RESULTS).evaluate_all(
        "els => els.map(e => e.dataset.messageId)"
    )
    return ids


async def expect_results(page: Any, ids: list[str]) -> None:
    """The page lists exactly these messages, in this order (once the search has settled)."""
    try:
        await page.wait_for_function(
            """ids => { const s = document.querySelector('.summary');
                        const shown = [...document.querySelectorAll('[data-message-id]')]
                          .map(e => e.dataset.messageId);
                        return s && !s.textContent.includes('Searching')
                          && JSON.stringify(shown) === JSON.stringify(ids); }""",
            arg=ids,
        )
    except Exception as error:
        shown = await shown_ids(page)
        text = await page.locator("main").inner_text()
        raise AssertionError(f"expected {ids}, the page shows {shown}:\n{text}") from error


def typed_query(url: str) -> str:
    """The `q` kept in the page's URL fragment."""
    fragment = url.split("#", 1)[1] if "#" in url else ""
    return parse_qs(fragment).get("q", [""])[0]


async def test_from_and_in_suggestions_accepted_by_keyboard(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site)
    box = page.locator(SEARCH)
    listbox = page.locator(SUGGESTIONS)
    await expect(box).to_have_attribute("role", "combobox")
    await expect(box).to_have_attribute("aria-expanded", "false")

    await box.press_sequentially("rollback from:bo", delay=30)
    await expect(listbox).to_be_visible()
    await expect(box).to_have_attribute("aria-expanded", "true")
    options = listbox.get_by_role("option")
    await expect(options.first).to_contain_text("Bob Okafor")
    active = await box.get_attribute("aria-activedescendant")
    assert active and await page.locator(f"#{active}").get_attribute("aria-selected") == "true"

    # Arrow keys move the active option (wrapping), Enter accepts it.
    count = await options.count()
    await box.press("ArrowDown")
    if count > 1:
        assert await box.get_attribute("aria-activedescendant") != active
    await box.press("ArrowUp")
    assert await box.get_attribute("aria-activedescendant") == active
    await box.press("Enter")
    await expect(box).to_have_value("rollback from:@bob ")
    await expect(listbox).to_be_hidden()
    await expect(box).to_have_attribute("aria-expanded", "false")
    await expect(box).to_be_focused()
    await expect(page).to_have_url(re.compile(r"q=rollback\+from%3A%40bob$"))
    bob = site.search_ids("rollback from:@bob")
    assert len(bob) == 4
    await expect_results(page, bob)

    # `in:` offers the conversations ann may read (never the private channel she is not in);
    # `in:#` only channels. Tab accepts too.
    await box.press_sequentially("in:", delay=30)
    await expect(listbox).to_be_visible()
    await screenshot(page, "operators-suggestions-1280")
    offered = await listbox.get_by_role("option").all_inner_texts()
    assert any("#general" in o for o in offered) and any("#infra" in o for o in offered)
    assert not any("secret" in o for o in offered)
    await box.press_sequentially("#inf", delay=30)
    await expect(listbox.get_by_role("option")).to_have_count(1)
    await box.press("Tab")
    await expect(box).to_have_value("rollback from:@bob in:#infra ")
    await expect(box).to_be_focused()
    await expect_results(page, site.search_ids("rollback from:@bob in:#infra"))
    assert len(await shown_ids(page)) == 1

    # Escape closes the suggestions and leaves the text alone; a click accepts as well.
    await box.press_sequentially("agents-of:", delay=30)
    await expect(listbox).to_be_visible()
    await box.press("Escape")
    await expect(listbox).to_be_hidden()
    await expect(box).to_have_value("rollback from:@bob in:#infra agents-of:")
    await box.press("Backspace")
    await box.press_sequentially(":an", delay=30)
    await listbox.get_by_role("option", name=re.compile("Ann Lee")).click()
    await expect(box).to_have_value("rollback from:@bob in:#infra agents-of:@ann ")
    # The tab puts the caret after an accepted value in the next animation frame. Let that
    # frame pass: run after `fill` selected the text, it collapsed the selection, so nothing was
    # cleared (seen once in CI: the name below typed after "agents-of:@ann ").
    await page.evaluate("() => new Promise((done) => requestAnimationFrame(() => done()))")

    # A name with spaces, typed in quotes, is accepted as its key.
    await box.fill("")
    await box.press_sequentially('from:"Bob Ok', delay=30)
    await expect(listbox.get_by_role("option").first).to_contain_text("Bob Okafor")
    await box.press("Enter")
    await expect(box).to_have_value("from:@bob ")


async def test_chips_show_operators_and_removing_one_reruns_the_search(
    page: Any, site: Site
) -> None:
    from playwright.async_api import expect

    await sign_in(page, site, "rollback from:@bob in:#general")
    await expect_results(page, site.search_ids("rollback from:@bob in:#general"))
    chips = page.locator(".operators .op-chip")
    await expect(chips).to_have_count(2)
    await expect(chips.nth(0)).to_contain_text("from:@bob")
    await expect(chips.nth(0)).to_contain_text("Bob Okafor")
    await expect(chips.nth(1)).to_contain_text("in:#general")
    await expect(chips.nth(1)).to_have_attribute("data-known", "true")
    await expect(page.locator(".op-chip.unknown")).to_have_count(0)
    narrow = await shown_ids(page)
    assert len(narrow) == 2  # g0 and g1
    await screenshot(page, "operators-chips-1280")

    await page.get_by_role("button", name="Remove in:#general").click()
    await expect(page.locator(SEARCH)).to_have_value("rollback from:@bob")
    await expect(chips).to_have_count(1)
    assert typed_query(page.url) == "rollback from:@bob"
    wider = site.search_ids("rollback from:@bob")
    await expect_results(page, wider)
    assert set(narrow) < set(wider)
    # Focus stays on the chips: the remaining one's button.
    await expect(page.get_by_role("button", name="Remove from:@bob")).to_be_focused()

    await page.keyboard.press("Enter")
    await expect(page.locator(SEARCH)).to_have_value("rollback")
    await expect(chips).to_have_count(0)
    await expect_results(page, site.search_ids("rollback"))

    # Back brings the removed operator back (each removal is a history entry).
    await page.go_back()
    await expect(page.locator(SEARCH)).to_have_value("rollback from:@bob")


async def test_pickers_and_typed_operators_agree(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site, "rollback")
    await expect_results(page, site.search_ids("rollback"))
    box = page.locator(SEARCH)
    author = page.get_by_label("Author")
    channel = page.get_by_label("Channel")

    # Picker → query.
    await author.select_option(label="Bob Okafor")
    await expect(box).to_have_value("rollback from:@bob")
    await expect_results(page, site.search_ids("rollback from:@bob"))
    await channel.select_option(label="#infra")
    await expect(box).to_have_value("rollback from:@bob in:#infra")
    await author.select_option(label="Helper (agent of Ann Lee)")
    await expect(box).to_have_value("rollback in:#infra from:@helper")
    await author.select_option(label="Agents of Ann Lee")
    await expect(box).to_have_value("rollback in:#infra agents-of:@ann")
    await author.select_option(label="Anyone")
    await expect(box).to_have_value("rollback in:#infra")
    await channel.select_option(label="All")
    await expect(box).to_have_value("rollback")
    await page.get_by_label("From", exact=True).fill("2026-03-02")
    await expect(box).to_have_value("rollback since:2026-03-02")

    # Query → picker: a typed operator shows in its picker (by key, name or `me`).
    await box.fill('rollback from:"Bob Okafor" in:general')
    await expect(author.locator("option:checked")).to_have_text("Bob Okafor")
    await expect(channel.locator("option:checked")).to_have_text("#general")
    await box.fill("rollback from:@BOB")
    await expect(author.locator("option:checked")).to_have_text("Bob Okafor")
    await box.fill("rollback FROM:me")
    await expect(author.locator("option:checked")).to_have_text("Ann Lee")
    await expect(channel).to_have_value("")
    await box.fill("rollback -from:@bob until:2026-03-04")
    await expect(author).to_have_value("")  # a negated operator is no author choice
    await expect(page.get_by_label("To", exact=True)).to_have_value("2026-03-04")
    # Two authors are more than the picker can show: it says so, and a pick replaces both.
    await box.fill("rollback from:@bob from:@ann")
    await expect(author.locator("option:checked")).to_have_text("As in the query")
    await author.select_option(label="Cy Park")
    await expect(box).to_have_value("rollback from:@cy")
    await expect(author.locator("option:checked")).to_have_text("Cy Park")


async def test_url_keeps_the_query_as_typed_and_reload_restores_it(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    typed = 'Rollback  FROM:"Bob Okafor" -in:#infra'
    await sign_in(page, site)
    await page.locator(SEARCH).fill(typed)
    expected = site.search_ids(typed)
    await expect_results(page, expected)
    assert typed_query(page.url) == typed
    chips = await page.locator(".op-chip code").all_inner_texts()
    assert chips == ['from:"Bob Okafor"', "-in:#infra"]

    await page.reload()
    await expect(page.locator(SEARCH)).to_have_value(typed)
    await expect_results(page, expected)
    assert await page.locator(".op-chip code").all_inner_texts() == chips

    # A link from before the pickers wrote operators still means the same search.
    members = site.gql("{ viewer { workspace { members { id key } } } }")["viewer"]["workspace"]
    bob_id = next(m["id"] for m in members["members"] if m["key"] == "bob")
    await page.goto(
        f"{site.base}/#{httpx.QueryParams({'q': 'rollback', 'author': f'MEMBER:{bob_id}'})}"
    )
    await expect(page.locator(SEARCH)).to_have_value("rollback from:@bob")
    assert "author=" not in page.url


async def test_unknown_values_show_a_matches_nothing_chip(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    # A private channel ann is not in and a channel that does not exist look the same.
    for query in ("rollback in:#secret", "rollback in:#nowhere"):
        await sign_in(page, site, query)
        chip = page.locator(".op-chip")
        await expect(chip).to_have_count(1)
        await expect(chip).to_have_class(re.compile(r"\bunknown\b"))
        await expect(chip).to_contain_text("matches nothing")
        await expect(page.get_by_text("No messages match")).to_be_visible()
        assert await page.locator(RESULTS).count() == 0
    await screenshot(page, "operators-unknown-1280")

    # Negated, an unknown value excludes nothing.
    await page.locator(SEARCH).fill("rollback -from:@nobody")
    await expect(page.locator(".op-chip.unknown")).to_contain_text("excludes nothing")
    await expect_results(page, site.search_ids("rollback"))


async def test_operator_only_query_lists_newest_first(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    searches: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            searches.append(json.loads(r.post_data)["variables"])
            if r.method == "POST" and "RecallSearch" in (r.post_data or "")
            else None
        ),
    )
    await sign_in(page, site)
    await page.locator(SEARCH).fill("from:@bob")
    expected = site.search_ids("from:@bob")
    assert len(expected) == 4
    await expect_results(page, expected)
    times = await page.locator(f"{RESULTS} time").evaluate_all(
        "els => els.map(e => e.getAttribute('datetime'))"
    )
    assert times == sorted(times, reverse=True)
    await expect(page.locator(f"{RESULTS} mark")).to_have_count(0)
    assert searches[-1] == {
        "query": "from:@bob",
        "timeZone": "UTC",
        "first": 20,
        "after": None,
        # The first page also reads the live log's position (docs/live.md, The Messages tab).
        "live": True,
    }


async def test_dates_are_days_of_the_browsers_time_zone(browser: Any, site: Site) -> None:
    """`on:2026-03-01` in Tokyo includes a message of 20:00 UTC on February 28th."""
    async with watched_tab(browser, site.base, timezone_id="Asia/Tokyo") as tab:
        sent: list[str] = []
        tab.on(
            "request",
            lambda r: (
                sent.append(json.loads(r.post_data)["variables"]["timeZone"])
                if r.method == "POST" and "RecallSearch" in (r.post_data or "")
                else None
            ),
        )
        await sign_in(tab, site, "rollback on:2026-03-01")
        tokyo = site.search_ids("rollback on:2026-03-01", "Asia/Tokyo")
        assert len(tokyo) == 2 and len(site.search_ids("rollback on:2026-03-01")) == 1
        await expect_results(tab, tokyo)
        assert sent and set(sent) == {"Asia/Tokyo"}


QUERIES = [
    "from:@bob in:#infra rollback since:2026-03-01",
    'FROM:"Bob  Okafor" -in:#"release train" "exact phrase" -word',
    "http://example.com/x 10:30 foo:bar from:me",
    'from:"unclosed rollback in:general',
    'agents-of:@ann "a from:x phrase" on:2026-03-04T10:00:00Z',
    "-from:bob-from:x until:2026-03-31 数据库迁移",
]


async def test_the_tabs_reading_of_a_query_is_the_servers(page: Any, site: Site) -> None:
    """js/query.js splits a query into operators as app.message_search.operators does, so chips and
    pickers point at exactly the text the server read as each operator."""
    await sign_in(page, site)
    read = await page.evaluate(
        """async queries => {
             const q = await import('/static/js/query.js');
             return queries.map(s => q.operators(s).map(t => [t.name, t.value, t.negated]));
           }""",
        QUERIES,
    )
    for query, tab in zip(QUERIES, read, strict=True):
        server = [[o.name, o.value, o.negated] for o in split_operators(query).operators]
        assert tab == server, query


async def test_typing_right_after_accepting_a_suggestion_is_kept(page: Any, site: Site) -> None:
    """The box shows a query changed elsewhere (back/forward, a link, a chip) by an effect
    that runs after the next frame; it once ran for the query the form had just committed
    itself too, and replaced what was typed within that frame with the accepted query. Here
    the box is cleared inside that frame, deterministically, and must stay clear."""
    from playwright.async_api import expect

    await sign_in(page, site)
    box = page.locator(SEARCH)
    await box.press_sequentially("rollback from:bo", delay=30)
    await expect(page.locator(SUGGESTIONS).get_by_role("option").first).to_be_visible()
    value = await page.evaluate(
        """async ([search, suggestions]) => {
            const box = document.querySelector(search);
            document.querySelector(`${suggestions} [role=option]`).click();
            await Promise.resolve();  // the accepted query rendered, its effect not yet run
            box.value = "";
            box.dispatchEvent(new Event("input", { bubbles: true }));
            for (let i = 0; i < 3; i++) await new Promise((r) => requestAnimationFrame(r));
            await new Promise((r) => setTimeout(r, 50));
            return box.value;
        }""",
        [SEARCH, SUGGESTIONS],
    )
    assert value == ""
