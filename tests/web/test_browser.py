"""The Messages tab (`/`) and GraphiQL (`/graphql`) in a real browser: Debian's chromium driven by
Playwright, against `recall serve`'s app under uvicorn on the demo workspace.

They skip with the reason where no Chromium exists (tests.browser_support); CI sets
RECALL_REQUIRE_BROWSER=1 so they cannot skip there. RECALL_SCREENSHOTS=docs/screenshots keeps
screenshots of the main states (README shows one).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest

from app.data.tokens import issue_actor_token, issue_connector_token
from app.db import connect
from app.demo import ensure_demo
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


@dataclass
class Site:
    base: str
    alice: str  # demo member
    bea: str  # member of the budget workspace
    since_supported: bool

    def gql(self, query: str, variables: dict[str, Any] | None = None, token: str = "") -> Any:
        return post_gql(self.base, token or self.alice, query, variables)


def budget_fixture() -> dict[str, Any]:
    """A workspace where bea's two `zeppelin` messages are older than 250 in a channel she may
    not read: the first page examines its whole candidate budget (200) and finds nothing."""
    hidden = [
        {
            "key": f"v{n}",
            "scope": "vault",
            "author": "vic",
            "at": f"2026-02-{1 + n // 24:02d}T{n % 24:02d}:00:00Z",
            "body": f"zeppelin log {n}",
        }
        for n in range(250)
    ]
    return {
        "workspace": {"key": "budget", "name": "Budget Co"},
        "namespace": "test:budget",
        "members": [{"key": "bea", "name": "Bea"}, {"key": "vic", "name": "Vic"}],
        "scopes": [
            {"key": "lobby", "kind": "channel", "visibility": "public", "name": "lobby",
             "members": ["bea", "vic"]},
            {"key": "vault", "kind": "channel", "visibility": "private", "name": "vault",
             "members": ["vic"]},
        ],
        "messages": [
            {"key": "l1", "scope": "lobby", "author": "vic", "at": "2026-01-10T10:00:00Z",
             "body": "The zeppelin tour is booked"},
            {"key": "l2", "scope": "lobby", "author": "bea", "at": "2026-01-11T10:00:00Z",
             "body": "Zeppelin tickets are in the shared folder"},
            *hidden,
        ],
    }  # fmt: skip


@pytest.fixture(scope="module")
async def site(server_dsn: str, template_name: str) -> AsyncIterator[Site]:
    require_browser()
    name = f"recall_b_{uuid.uuid4().hex[:12]}"
    async with migrated_database(server_dsn, template_name, name) as dsn:
        conn = await connect(dsn)
        try:
            await ensure_demo(conn, progress=io.StringIO())
            await import_fixture(conn, budget_fixture(), io.StringIO())
            alice = await issue_actor_token(conn, "demo", "member", "alice")
            bea = await issue_actor_token(conn, "budget", "member", "bea")
            connector = await issue_connector_token(conn, "demo")
        finally:
            await conn.close()
        with running_server(dsn) as base:
            # An archived agent: still an author, but pickers must not offer it.
            archived = await asyncio.to_thread(
                httpx.post,
                f"{base}/graphql",
                json={
                    "query": 'mutation { applyChanges(changes: [{archiveAgent: {key: "pip"}}]) { applied } }'
                },
                headers={"authorization": f"Bearer {connector}"},
            )
            assert archived.json()["data"]["applyChanges"]["applied"] == 1
            introspection = await asyncio.to_thread(
                Site(base, alice, bea, False).gql,
                '{ __type(name: "Query") { fields { name args { name } } } }',
            )
            search = next(
                f for f in introspection["__type"]["fields"] if f["name"] == "messageSearch"
            )
            yield Site(base, alice, bea, any(a["name"] == "since" for a in search["args"]))


@pytest.fixture
async def page(browser: Any, site: Site) -> AsyncIterator[Any]:
    """A fresh tab (1280 × 800, UTC). Every request to another host fails the test, and so does
    a page error or a Content-Security-Policy violation (browser_support.watched_tab)."""
    async with watched_tab(browser, site.base) as tab:
        yield tab


async def sign_in(page: Any, site: Site, state: str = "", token: str = "") -> None:
    await page.goto(f"{site.base}/#token={token or site.alice}{state}")
    await page.locator(SEARCH).wait_for()


async def result_authors(page: Any) -> list[str]:
    texts: list[str] = await page.locator(f"{RESULTS} .author").all_inner_texts()
    return [t.replace("agent", "").strip() for t in texts]


async def test_sign_in_by_pasting_a_token_or_by_a_link(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await page.goto(site.base + "/")
    token_field = page.get_by_label("Member token")
    await expect(token_field).to_be_visible()
    await expect(page.locator(SEARCH)).to_have_count(0)
    await screenshot(page, "signin-1280")
    await token_field.fill(site.alice)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_text("Alice Chen · Demo Co")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('recall.token')") == site.alice

    await page.get_by_role("button", name="Sign out").click()
    await expect(token_field).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('recall.token')") is None

    # The link `recall serve --demo` prints: the token in the fragment, taken out of the URL.
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    await page.goto(f"{site.base}/#token={site.alice}&q=postgres")
    await expect(page.locator(RESULTS).first).to_be_visible()
    assert "token" not in page.url and page.url.endswith("#q=postgres")
    assert not any(site.alice in url for url in requests)
    assert await page.evaluate("sessionStorage.getItem('recall.token')") == site.alice


async def test_search_as_you_type_newest_first_with_highlights(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site)
    await expect(page.get_by_text('"exact phrase"')).to_be_visible()
    searches: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            searches.append(json.loads(r.post_data)["variables"])
            if r.method == "POST" and "RecallSearch" in (r.post_data or "")
            else None
        ),
    )
    await page.evaluate("window.samePage = true")
    await page.locator(SEARCH).press_sequentially("postgres", delay=40)
    await expect(page.locator(RESULTS).first).to_be_visible()
    assert await page.evaluate("window.samePage") is True, "results came with a page load"
    # Debounced: not one request per keystroke (one per pause; a slow machine may pause twice).
    assert 1 <= len(searches) <= 2 and searches[-1]["query"] == "postgres", searches

    expected = site.gql(
        "query($q: String!) { messageSearch(query: $q, first: 20) { edges { node { id } } } }",
        {"q": "postgres"},
    )["messageSearch"]["edges"]
    ids = await page.locator(RESULTS).evaluate_all("els => els.map(e => e.dataset.messageId)")
    assert ids == [e["node"]["id"] for e in expected]
    times = await page.locator(f"{RESULTS} time").evaluate_all(
        "els => els.map(e => e.getAttribute('datetime'))"
    )
    assert times == sorted(times, reverse=True)
    marks = await page.locator(f"{RESULTS} mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {"postgres"}
    assert "#q=postgres" in page.url
    await screenshot(page, "results-1280")
    await page.set_viewport_size({"width": 360, "height": 740})
    await screenshot(page, "results-360")


async def test_filter_by_author_and_channel_shareable_and_back(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site, "&q=cutover")
    await expect(page.locator(RESULTS).first).to_be_visible()
    author = page.get_by_label("Author")
    offered = await author.locator("option").all_inner_texts()
    assert "Bob Okafor" in offered and "Atlas (agent of Alice Chen)" in offered
    assert "Agents of Alice Chen" in offered
    assert not any(o.startswith("Pip") for o in offered), "archived agents are not offered"

    # The pickers write operators into the query (issue 26), so the URL keeps them as `q`.
    await author.select_option(label="Bob Okafor")
    await expect(page.locator(SEARCH)).to_have_value("cutover from:@bob")
    await expect(page).to_have_url(re.compile(r"q=cutover\+from%3A%40bob$"))
    await page.wait_for_function(
        """() => { const a = [...document.querySelectorAll('[data-message-id] .author')];
                   return a.length > 0 && a.every(e => e.textContent.trim() === 'Bob Okafor'); }"""
    )

    await author.select_option(label="Anyone")
    channel = page.get_by_label("Channel")
    await channel.select_option(label="#db-migration (private)")
    await expect(page).to_have_url(re.compile(r"q=cutover\+in%3A%23db-migration$"))
    await page.wait_for_function(
        """() => { const w = [...document.querySelectorAll('[data-message-id] .where')];
                   return w.length > 0 && w.every(e => e.textContent === '#db-migration (private)'); }"""
    )
    filtered = page.url

    # Shareable: the URL in another tab asks for a token (session storage is per tab), then
    # shows the same search.
    other = await page.context.new_page()
    await other.goto(filtered)
    await other.get_by_label("Member token").fill(site.alice)
    await other.get_by_role("button", name="Sign in").click()
    await expect(other.locator(RESULTS).first).to_be_visible()
    assert other.url == filtered
    assert await other.get_by_label("Channel").input_value() == await channel.input_value()
    await other.close()

    # Back: the channel filter goes, then the author filter comes back.
    await page.go_back()
    await expect(channel).to_have_value("")
    await page.go_back()
    await expect(author).to_have_value(re.compile(r"^MEMBER:"))

    # Agents of a person: only Atlas (alice's agent) writes these.
    await page.goto(f"{site.base}/#q=mysql")
    await author.select_option(label="Agents of Alice Chen")
    await expect(page.locator(SEARCH)).to_have_value("mysql agents-of:@alice")
    await page.wait_for_function(
        """() => { const a = [...document.querySelectorAll('[data-message-id] .author')];
                   return a.length > 0 && a.every(e => e.textContent.startsWith('Atlas')); }"""
    )


async def test_filter_by_date(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site, "&q=postgres")
    await expect(page.locator(RESULTS).first).to_be_visible()
    unfiltered = await page.locator(RESULTS).count()
    since, until = page.get_by_label("From", exact=True), page.get_by_label("To", exact=True)
    await since.fill("2026-03-01")
    await until.fill("2026-03-10")
    # The date pickers write `since:` / `until:` (days of the browser's zone) into the query.
    await expect(page.locator(SEARCH)).to_have_value("postgres since:2026-03-01 until:2026-03-10")
    await expect(page).to_have_url(
        re.compile(r"q=postgres\+since%3A2026-03-01\+until%3A2026-03-10$")
    )
    await page.wait_for_function(
        """n => { const t = [...document.querySelectorAll('[data-message-id] time')];
                  return t.length > 0 && t.length < n; }""",
        arg=unfiltered,
    )
    times = await page.locator(f"{RESULTS} time").evaluate_all(
        "els => els.map(e => e.getAttribute('datetime'))"
    )
    for t in times:
        assert (
            datetime(2026, 3, 1).date()
            <= datetime.fromisoformat(t).date()
            <= datetime(2026, 3, 10).date()
        )


async def test_pages_past_a_budget_exhausted_page(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    first = site.gql(
        '{ messageSearch(query: "zeppelin", first: 20) { edges { cursor }'
        " pageInfo { hasNextPage } candidateBudgetExhausted } }",
        token=site.bea,
    )["messageSearch"]
    assert (
        first["edges"] == []
        and first["candidateBudgetExhausted"]
        and first["pageInfo"]["hasNextPage"]
    )

    afters: list[str | None] = []

    async def slow_continuation(route: Any) -> None:
        body = route.request.post_data or ""
        if "RecallSearch" in body:
            after = json.loads(body)["variables"].get("after")
            afters.append(after)
            if after:
                await asyncio.sleep(0.8)  # long enough to see the page say so
        await route.fallback()

    await page.route("**/graphql", slow_continuation)
    await sign_in(page, site, "&q=zeppelin", token=site.bea)
    await expect(page.get_by_text("Still searching older messages")).to_be_visible()
    await expect(page.get_by_text("No messages match")).to_have_count(0)
    await expect(page.locator(RESULTS)).to_have_count(2)
    await expect(page.get_by_text("No more results.")).to_be_visible()
    assert afters[0] is None and afters[1], "continued from the exhausted page's endCursor"
    marks = await page.locator(f"{RESULTS} mark").all_inner_texts()
    assert {m.lower() for m in marks} == {"zeppelin"}


async def test_open_a_hit_centered_and_highlighted(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site, '&q="cutover is done"')
    await expect(page.locator(RESULTS)).to_have_count(1)
    hit_id = await page.locator(RESULTS).first.get_attribute("data-message-id")

    # Keyboard: arrow down from the search box to the result, Enter opens it.
    await page.locator(SEARCH).press("ArrowDown")
    assert await page.evaluate("document.activeElement.dataset.messageId") == hit_id
    await page.keyboard.press("Enter")
    row = page.locator('[aria-current="true"]')
    await expect(row).to_have_count(1)
    assert await row.get_attribute("data-row-id") == hit_id
    await expect(row).to_have_class(re.compile(r"\bflash\b"))
    marked = " ".join(await row.locator("mark").all_inner_texts()).lower()
    assert "cutover" in marked and "done" in marked
    assert "open=" in page.url

    panel = page.locator(".conversation-body")
    panel_box, row_box = await panel.bounding_box(), await row.bounding_box()
    offset = (row_box["y"] + row_box["height"] / 2) - (panel_box["y"] + panel_box["height"] / 2)
    assert abs(offset) < panel_box["height"] * 0.15, "the hit is centered"
    await screenshot(page, "conversation-1280")

    # Scrolling to the top loads earlier messages, keeping the hit.
    rows = page.locator(".conversation .row")
    before = await rows.count()
    await page.wait_for_timeout(450)
    await panel.evaluate("el => { el.scrollTop = 0; }")
    await expect(rows).not_to_have_count(before)
    assert await rows.count() > before
    await panel.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    await expect(
        page.get_by_text("Latest message").or_(page.get_by_text("Load later messages"))
    ).to_be_visible()

    await page.set_viewport_size({"width": 360, "height": 740})
    await row.scroll_into_view_if_needed()
    await screenshot(page, "conversation-360")
    await page.set_viewport_size({"width": 1280, "height": 800})

    # Escape goes back to the results, with the result focused.
    await row.focus()
    await page.keyboard.press("Escape")
    await expect(page.locator(".conversation")).to_have_count(0)
    await expect(page.locator(RESULTS).first).to_be_focused()
    assert "open=" not in page.url


async def test_cjk_query(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site)
    await page.locator(SEARCH).fill("数据库迁移")
    await expect(page.locator(RESULTS).first).to_be_visible()
    assert await page.locator(RESULTS).count() >= 2
    marks = await page.locator(f"{RESULTS} mark").all_inner_texts()
    assert marks and set(marks) == {"数据库迁移"}


async def test_wrong_or_expired_token_asks_to_sign_in_again(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await page.goto(f"{site.base}/#token=rcm_not-a-real-token")
    await expect(page.get_by_role("alert")).to_contain_text("did not accept the token")
    await expect(page.get_by_label("Member token")).to_be_visible()
    assert await page.evaluate("sessionStorage.getItem('recall.token')") is None

    # Signed in, then the token stops working (HTTP 401): back to sign-in, saying why.
    await sign_in(page, site, "&q=postgres")
    await expect(page.locator(RESULTS).first).to_be_visible()

    async def unauthorized(route: Any) -> None:
        await route.fulfill(
            status=401,
            content_type="application/json",
            body=json.dumps({"errors": [{"message": "missing or unknown bearer token",
                                         "extensions": {"code": "UNAUTHENTICATED"}}]}),
        )  # fmt: skip

    await page.route("**/graphql", unauthorized)
    await page.locator(SEARCH).fill("release")
    await expect(page.get_by_role("alert")).to_contain_text("Sign in again")
    await expect(page.get_by_label("Member token")).to_be_visible()


async def test_search_unavailable_and_network_errors(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    await sign_in(page, site)
    mode = {"now": "unavailable"}

    async def failing(route: Any) -> None:
        if "RecallSearch" not in (route.request.post_data or "") or mode["now"] == "ok":
            await route.fallback()
        elif mode["now"] == "unavailable":
            await route.fulfill(
                content_type="application/json",
                body=json.dumps({"data": None, "errors": [{"message": "search is not ready",
                                 "extensions": {"code": "SEARCH_UNAVAILABLE"}}]}),
            )  # fmt: skip
        else:
            await route.abort("internetdisconnected")

    await page.route("**/graphql", failing)
    await page.locator(SEARCH).fill("postgres")
    await expect(page.get_by_role("alert")).to_contain_text("Search is not available yet")
    mode["now"] = "offline"
    await page.get_by_role("button", name="Try again").click()
    await expect(page.get_by_role("alert")).to_contain_text("Cannot reach Recall")
    mode["now"] = "ok"
    await page.get_by_role("button", name="Try again").click()
    await expect(page.locator(RESULTS).first).to_be_visible()
    await expect(page.get_by_role("alert")).to_have_count(0)


async def test_graphiql_offline_runs_a_query(page: Any, site: Site) -> None:
    from playwright.async_api import expect

    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.post_data or "") if r.method == "POST" else None)
    await page.goto(f"{site.base}/graphql")
    await page.locator(".graphiql-container").wait_for()
    query_editor = ".graphiql-query-editor .CodeMirror"
    opening = await page.evaluate(f"document.querySelector('{query_editor}').CodeMirror.getValue()")
    assert "Recall" in opening and "messageSearch" in opening and "Authorization" in opening
    await page.wait_for_timeout(300)
    assert posts == [], "no schema fetch with the placeholder token"

    await page.evaluate(
        """t => [...document.querySelectorAll('.graphiql-editor-tool .CodeMirror')]
                 .map(e => e.CodeMirror).find(c => c.getValue().includes('Authorization'))
                 .setValue(JSON.stringify({Authorization: 'Bearer ' + t}))""",
        site.alice,
    )
    for _ in range(100):
        if any("IntrospectionQuery" in p for p in posts):
            break
        await asyncio.sleep(0.05)
    assert any("IntrospectionQuery" in p for p in posts), (
        "the schema is fetched once a token is set"
    )
    await page.evaluate(
        "([sel, q]) => document.querySelector(sel).CodeMirror.setValue(q)",
        [query_editor, "{ viewer { workspace { name } } }"],
    )
    await page.wait_for_timeout(400)
    await page.locator(".graphiql-execute-button").click()
    await page.wait_for_function(
        "() => document.querySelector('.result-window .CodeMirror').CodeMirror.getValue().includes('Demo Co')"
    )
    result = await page.evaluate(
        "document.querySelector('.result-window .CodeMirror').CodeMirror.getValue()"
    )
    assert json.loads(result) == {"data": {"viewer": {"workspace": {"name": "Demo Co"}}}}

    await page.get_by_role("button", name="Show Documentation Explorer").click()
    await expect(
        page.locator(".graphiql-doc-explorer").get_by_text("Query", exact=True).first
    ).to_be_visible()
    await screenshot(page, "graphiql-1280")
