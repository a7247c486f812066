"""The web page in headless Chromium (Playwright) against a live server on real indexes.

Each step asserts what a person sees: text, counts, checkbox state and the address bar.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from searchsvc.app import create_app
from tests.support import CHROMIUM, CHROMIUM_ARGS, HOSTILE_TITLE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is missing (apt-get install chromium) for the browser tests",
    ),
]

sync_api = pytest.importorskip("playwright.sync_api")
expect = sync_api.expect
expect.set_options(timeout=10_000)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def serve(index_dir: Path) -> Iterator[str]:
    """The real app on `index_dir`, served by a werkzeug server thread on a free port."""
    from werkzeug.serving import make_server

    app = create_app({"INDEX": str(index_dir), "TESTING": True})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def seed_server(seed_index) -> Iterator[str]:
    yield from serve(seed_index)


@pytest.fixture(scope="module")
def fixture_server(fixture_index) -> Iterator[str]:
    yield from serve(fixture_index)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    dialogs: list[str] = []
    tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    tab.dialogs = dialogs  # type: ignore[attr-defined]
    yield tab
    context.close()


def query_of(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query)


def summary(page) -> str:
    return page.locator("#results-heading").inner_text()


def test_search_filter_page_back_record_and_author(page, seed_server):
    # Search.
    page.goto(seed_server + "/")
    page.get_by_label("Search publications").fill("learning")
    page.get_by_label("Search publications").press("Enter")
    expect(page.locator("#results-heading")).to_have_text("1–10 of 21 records for “learning”")
    assert query_of(page.url) == [("q", "learning")]
    expect(page.locator(".hit__title mark").first).to_be_visible()

    # Tick two categories: each tick submits the form (JavaScript) and lands in the URL.
    facets = page.get_by_role("group", name="Category")
    facets.get_by_label("cs.DC").check()
    expect(page.locator("#results-heading")).to_have_text("7 records for “learning”")
    assert query_of(page.url) == [("q", "learning"), ("category", "cs.DC")]
    assert "year_from" not in page.url  # empty fields stay out of the address
    # The page reloaded; keyboard focus is back on the box just ticked.
    expect(page.get_by_role("group", name="Category").get_by_label("cs.DC")).to_be_focused()
    facets = page.get_by_role("group", name="Category")
    facets.get_by_label("cs.LG").check()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 17 records for “learning”")
    assert sorted(query_of(page.url)) == [
        ("category", "cs.DC"),
        ("category", "cs.LG"),
        ("q", "learning"),
    ]
    expect(page.get_by_role("group", name="Category").get_by_label("cs.DC")).to_be_checked()
    expect(page.get_by_role("group", name="Category").get_by_label("cs.LG")).to_be_checked()
    expect(page.get_by_role("list", name="Active filters")).to_contain_text("Category: cs.DC")

    # A year range.
    page.get_by_label("From").fill("2021")
    page.get_by_label("To", exact=True).fill("2023")
    page.get_by_role("button", name="Apply filters").click()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 12 records for “learning”")
    assert ("year_from", "2021") in query_of(page.url) and ("year_to", "2023") in query_of(page.url)
    expect(page.get_by_role("link", name=re.compile("Years: 2021–2023"))).to_be_visible()
    first_page_titles = page.locator(".hit__title").all_inner_texts()

    # Page forward.
    page.get_by_role("navigation", name="Result pages").get_by_role("link", name="Next").click()
    expect(page.locator("#results-heading")).to_have_text("11–12 of 12 records for “learning”")
    assert ("page", "2") in query_of(page.url)
    expect(page.locator(".hit")).to_have_count(2)

    # Back: the first page again, with its filters still ticked.
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 12 records for “learning”")
    assert ("page", "2") not in query_of(page.url)
    assert page.locator(".hit__title").all_inner_texts() == first_page_titles
    expect(page.get_by_role("group", name="Category").get_by_label("cs.DC")).to_be_checked()
    expect(page.get_by_role("group", name="Category").get_by_label("cs.NI")).not_to_be_checked()
    expect(page.get_by_label("From")).to_have_value("2021")

    # Open a record.
    first = page.locator(".hit__title a").first
    title = first.inner_text()
    first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(title)
    assert "/records/" in page.url
    expect(page.get_by_role("link", name="BibTeX")).to_be_visible()
    expect(page.get_by_role("heading", name="More like this")).to_be_visible()

    # Open an author page from the record.
    author = page.locator(".record__authors a").first
    name = author.inner_text()
    author.click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Publications attributed to {name}")
    expect(page.locator(".author-head__count")).to_contain_text("18 records")
    expect(page.get_by_text("Records by year")).to_be_visible()
    expect(page.get_by_role("heading", name="Co-attributed authors")).to_be_visible()
    assert page.dialogs == []


def test_back_shows_the_state_of_the_url_not_the_last_click(page, seed_server):
    page.goto(seed_server + "/?q=learning")
    page.get_by_role("group", name="Category").get_by_label("cs.DC").check()
    expect(page.locator("#results-heading")).to_have_text("7 records for “learning”")
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 21 records for “learning”")
    expect(page.get_by_role("group", name="Category").get_by_label("cs.DC")).not_to_be_checked()
    page.go_forward()
    expect(page.get_by_role("group", name="Category").get_by_label("cs.DC")).to_be_checked()


def test_did_you_mean(page, seed_server):
    page.goto(seed_server + "/?q=schedulng")
    expect(page.locator("#results-heading")).to_have_text("No records found")
    page.get_by_role("link", name="scheduling", exact=True).click()
    expect(page.locator("#results-heading")).to_contain_text("records for “scheduling”")
    assert query_of(page.url) == [("q", "scheduling")]
    expect(page.get_by_label("Search publications")).to_have_value("scheduling")
    top = page.locator(".hit__title").all_inner_texts()[:3]
    assert any(t.startswith("Shockwave") for t in top) and any(t.startswith("CASSINI") for t in top)


def test_subscribe_link_is_visible_and_leads_to_the_feed_of_the_search(page, seed_server):
    page.goto(seed_server + "/?q=learning&category=cs.DC&sort=title")
    subscribe = page.get_by_role("link", name=re.compile("^Subscribe"))
    expect(subscribe).to_be_visible()
    href = subscribe.get_attribute("href")
    assert urlsplit(href).path == "/api/v1/search.atom"
    assert query_of(href) == [("q", "learning"), ("category", "cs.DC")]
    feed = page.request.get(seed_server + href)
    assert feed.ok and feed.headers["content-type"].startswith("application/atom+xml")
    assert feed.text().count("<entry>") == 7


def test_filters_work_without_javascript(browser, seed_server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(seed_server + "/?q=learning")
        page.get_by_role("group", name="Category").get_by_label("cs.NI").check()
        page.get_by_role("button", name="Apply filters").click()
        expect(page.locator("#results-heading")).to_have_text("2 records for “learning”")
        assert query_of(page.url) == [("q", "learning"), ("category", "cs.NI")]
        expect(page.get_by_role("group", name="Category").get_by_label("cs.NI")).to_be_checked()
        page.get_by_role("button", name="Sort").click()  # visible without JavaScript
        assert ("sort", "relevance") in query_of(page.url)
    finally:
        context.close()


def test_keyboard_skip_link_and_visible_focus(page, seed_server):
    page.goto(seed_server + "/?q=learning")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to results")
    expect(skip).to_be_focused()
    assert skip.evaluate("e => getComputedStyle(e).top") != "-48px"  # slid into view
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"


def test_hostile_record_renders_as_text_on_every_page(page, fixture_server):
    for path in ("/?q=quoted", "/?category=cs.CR", "/records/seed-hostile0001"):
        page.goto(fixture_server + path)
        expect(page.get_by_text(HOSTILE_TITLE)).to_be_visible()
    expect(page.get_by_text("<script>document.cookie</script>", exact=False)).to_be_visible()
    page.get_by_role("link", name="Mallory O'Brien").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Publications attributed to Mallory O'Brien"
    )
    expect(page.get_by_text(HOSTILE_TITLE)).to_be_visible()
    assert page.locator("img").count() == 0
    assert page.dialogs == []


@pytest.mark.parametrize("path", ["/?q=learning&category=cs.DC", "/authors/Aditya%20Akella"])
def test_phone_width_has_no_sideways_scrolling(browser, seed_server, path):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(seed_server + path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        if path.startswith("/?"):
            # The filters fold behind one button on a phone...
            categories = page.get_by_role("group", name="Category")
            expect(categories).to_be_hidden()
            page.get_by_text("Filters (1 active)").click()
            expect(categories).to_be_visible()
            page.get_by_text("Filters (1 active)").click()
            expect(categories).to_be_hidden()
            # ...and come back when the screen widens (a rotated tablet has no toggle).
            page.set_viewport_size({"width": 1280, "height": 900})
            expect(categories).to_be_visible()
    finally:
        context.close()
