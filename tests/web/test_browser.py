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


@pytest.fixture(scope="module")
def kaggle_server(kaggle_records, tmp_path_factory) -> Iterator[str]:
    """The 200 arXiv records of the Kaggle sample: 16 subjects, about 70 categories."""
    from tests.support import build_index

    location = build_index(tmp_path_factory.mktemp("kaggle-index") / "index", kaggle_records)
    yield from serve(Path(location))


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


def subjects(page):
    """The sidebar's Subject facet (subject groups, their categories, the cross-list toggle)."""
    return page.get_by_role("group", name="Subject", exact=True)


def subject_group(page, name: str):
    """The collapsible group of one subject, by the name its summary shows."""
    summary = page.locator("summary", has_text=re.compile("^" + re.escape(name)))
    return subjects(page).locator("details.subject__group", has=summary)


def summary_of(group):
    return group.locator(":scope > summary")


def wait_for_query(page, *pairs: tuple[str, str]) -> None:
    """Wait until the address bar holds exactly these query pairs (in any order)."""
    page.wait_for_url(lambda url: sorted(query_of(url)) == sorted(pairs))


def count_in(locator) -> int:
    """The record count a facet entry (a summary or a label) shows."""
    return int(re.search(r"\d+", locator.locator(".facet__count").first.text_content())[0])


def total_of(page) -> int:
    """The number of records the results heading announces."""
    return int(re.search(r"([\d,]+) records?\b", summary(page))[1].replace(",", ""))


def test_search_filter_page_back_record_and_author(page, seed_server):
    # Search.
    page.goto(seed_server + "/")
    page.get_by_label("Search publications").fill("learning")
    page.get_by_label("Search publications").press("Enter")
    expect(page.locator("#results-heading")).to_have_text("1–10 of 21 records for “learning”")
    assert query_of(page.url) == [("q", "learning")]
    expect(page.locator(".hit__title mark").first).to_be_visible()

    # Tick two categories: each tick submits the form (JavaScript) and lands in the URL.
    facets = subjects(page)
    facets.get_by_label("cs.DC").check()
    expect(page.locator("#results-heading")).to_have_text("7 records for “learning”")
    assert query_of(page.url) == [("q", "learning"), ("category", "cs.DC")]
    assert "year_from" not in page.url  # empty fields stay out of the address
    # The page reloaded; keyboard focus is back on the box just ticked.
    expect(subjects(page).get_by_label("cs.DC")).to_be_focused()
    facets = subjects(page)
    facets.get_by_label("cs.LG").check()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 17 records for “learning”")
    assert sorted(query_of(page.url)) == [
        ("category", "cs.DC"),
        ("category", "cs.LG"),
        ("q", "learning"),
    ]
    expect(subjects(page).get_by_label("cs.DC")).to_be_checked()
    expect(subjects(page).get_by_label("cs.LG")).to_be_checked()
    expect(page.get_by_role("list", name="Active filters")).to_contain_text(
        "Category: Distributed, Parallel, and Cluster Computing"
    )

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
    expect(subjects(page).get_by_label("cs.DC")).to_be_checked()
    expect(subjects(page).get_by_label("cs.NI")).not_to_be_checked()
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
    subjects(page).get_by_label("cs.DC").check()
    expect(page.locator("#results-heading")).to_have_text("7 records for “learning”")
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 21 records for “learning”")
    expect(subjects(page).get_by_label("cs.DC")).not_to_be_checked()
    page.go_forward()
    expect(subjects(page).get_by_label("cs.DC")).to_be_checked()


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
        subjects(page).get_by_label("cs.NI").check()
        page.get_by_role("button", name="Apply filters").click()
        expect(page.locator("#results-heading")).to_have_text("2 records for “learning”")
        assert query_of(page.url) == [("q", "learning"), ("category", "cs.NI")]
        expect(subjects(page).get_by_label("cs.NI")).to_be_checked()
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
            categories = subjects(page)
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


# -- the subject facet ----------------------------------------------------------------------

# What a code looks like (cs.DC, hep-ph, math.CO): never what the sidebar shows as a name.
CODE = re.compile(r"[a-z-]+(\.[A-Za-z-]+)?")


def test_subject_groups_show_names_fold_and_round_trip_through_the_url(page, fixture_server):
    page.goto(fixture_server + "/")
    expect(page.locator("#results-heading")).to_have_text("5 records")
    cs = subject_group(page, "Computer Science")
    expect(summary_of(cs)).to_have_attribute("title", "cs")
    assert count_in(summary_of(cs)) == 4
    # Boxes in a closed group are out of the accessibility tree: include_hidden finds them.
    dc = cs.get_by_role(
        "checkbox", name="Distributed, Parallel, and Cluster Computing", include_hidden=True
    )
    label = cs.locator("label[title='cs.DC']")

    # A group starts closed when nothing in it is chosen; its summary opens and closes it.
    expect(dc).to_be_hidden()
    summary_of(cs).click()
    expect(dc).to_be_visible()
    # The name is what one reads; the code is on hover and after the name for screen readers.
    expect(label).to_contain_text("Distributed, Parallel, and Cluster Computing")
    expect(dc).to_have_accessible_name(
        re.compile(r"^Distributed, Parallel, and Cluster Computing \(cs\.DC\) \( ?2 records\)$")
    )
    label.hover()
    expect(label).to_have_attribute("title", "cs.DC")
    code = label.locator(".visually-hidden", has_text="cs.DC").bounding_box()
    assert code["width"] <= 1 and code["height"] <= 1  # not shown on screen
    summary_of(cs).click()
    expect(dc).to_be_hidden()
    summary_of(cs).click()

    # Ticking a category narrows the results and lands in the URL; its group reopens.
    dc.check()
    expect(page.locator("#results-heading")).to_have_text("2 records")
    wait_for_query(page, ("category", "cs.DC"))
    expect(dc).to_be_checked()
    expect(dc).to_be_focused()
    expect(page.get_by_role("list", name="Active filters")).to_contain_text(
        "Category: Distributed, Parallel, and Cluster Computing"
    )
    page.reload()
    expect(page.locator("#results-heading")).to_have_text("2 records")
    expect(dc).to_be_checked()

    # A whole subject: its "All of" box, inside its group.
    dc.uncheck()
    expect(page.locator("#results-heading")).to_have_text("5 records")
    wait_for_query(page)
    hep = subject_group(page, "High Energy Physics - Phenomenology")
    whole = hep.get_by_role(
        "checkbox", name="All of High Energy Physics - Phenomenology", include_hidden=True
    )
    expect(whole).to_be_hidden()
    summary_of(hep).click()
    whole.check()
    expect(page.locator("#results-heading")).to_have_text("1 record")
    # One more value of the category filter: the panel's boxes are OR'ed.
    wait_for_query(page, ("category", "hep-ph"))
    expect(page.locator(".hit__title")).to_have_text(
        ["Calculation of prompt diphoton production cross sections"]
    )
    expect(page.get_by_role("link", name=re.compile("^Category: High Energy"))).to_be_visible()
    page.reload()
    expect(whole).to_be_checked()
    expect(whole).to_be_visible()

    # Back and Forward show the state of each URL.
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("5 records")
    expect(whole).not_to_be_checked()
    expect(dc).not_to_be_checked()
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("2 records")
    wait_for_query(page, ("category", "cs.DC"))
    expect(dc).to_be_checked()
    page.go_forward()
    page.go_forward()
    expect(page.locator("#results-heading")).to_have_text("1 record")
    expect(whole).to_be_checked()
    assert page.dialogs == []


def test_primary_category_toggle_changes_counts_and_round_trips(page, fixture_server):
    page.goto(fixture_server + "/")
    cs = subject_group(page, "Computer Science")
    machine_learning = cs.get_by_role(
        "checkbox", name=re.compile("^Machine Learning"), include_hidden=True
    )
    toggle = subjects(page).get_by_role("checkbox", name="Primary category only")
    # Two records are in cs.LG: one as its primary category, one as a cross-list.
    summary_of(cs).click()
    expect(machine_learning).to_have_accessible_name(re.compile(r"\( ?2 records\)$"))
    expect(toggle).not_to_be_checked()

    toggle.check()
    wait_for_query(page, ("crosslists", "exclude"))
    expect(toggle).to_be_checked()
    expect(page.get_by_role("link", name=re.compile("^Primary category only"))).to_be_visible()
    summary_of(cs).click()
    expect(machine_learning).to_have_accessible_name(re.compile(r"\( ?1 records\)$"))
    machine_learning.check()
    expect(page.locator("#results-heading")).to_have_text("1 record")
    wait_for_query(page, ("category", "cs.LG"), ("crosslists", "exclude"))
    page.reload()
    expect(toggle).to_be_checked()
    expect(machine_learning).to_be_checked()
    expect(page.locator("#results-heading")).to_have_text("1 record")

    # Unticked: every category counts again.
    toggle.uncheck()
    wait_for_query(page, ("category", "cs.LG"))
    expect(page.locator("#results-heading")).to_have_text("2 records")
    page.go_back()
    expect(page.locator("#results-heading")).to_have_text("1 record")
    expect(toggle).to_be_checked()
    page.go_back()
    page.go_back()
    wait_for_query(page)
    expect(toggle).not_to_be_checked()
    summary_of(cs).click()
    expect(machine_learning).to_have_accessible_name(re.compile(r"\( ?2 records\)$"))


def test_many_subjects_fold_and_a_category_and_subject_select_on_arxiv_records(page, kaggle_server):
    page.goto(kaggle_server + "/")
    expect(page.locator("#results-heading")).to_have_text("1–10 of 200 records")
    facet = subjects(page)
    names = facet.locator("details.subject__group > summary .facet__value").all_text_contents()
    assert len(names) >= 12 and {"Mathematics", "Computer Science", "Astrophysics"} <= set(names)
    assert not [name for name in names if CODE.fullmatch(name)]
    # Eight subjects show; the rest fold under one "more".
    more = facet.locator(":scope > details.facet__more > summary")
    expect(more).to_have_text(f"{len(names) - 8} more subjects")
    expect(subject_group(page, names[-1])).to_be_hidden()
    more.click()
    expect(subject_group(page, names[-1])).to_be_visible()
    counts = facet.locator("details.subject__group > summary")
    included = [count_in(counts.nth(i)) for i in range(counts.count())]
    assert sum(included) > 200  # a cross-listed record counts in each of its subjects

    # A category, by its name, inside its subject.
    maths = subject_group(page, "Mathematics")
    maths_total = count_in(summary_of(maths))
    summary_of(maths).click()
    combinatorics = maths.get_by_role(
        "checkbox", name=re.compile("^Combinatorics"), include_hidden=True
    )
    label = maths.locator("label", has_text="Combinatorics")
    expect(label).to_have_attribute("title", "math.CO")
    listed = count_in(label)
    combinatorics.check()
    wait_for_query(page, ("category", "math.CO"))
    expect(page.locator("#results-heading")).to_have_text(
        f"{listed} record{'' if listed == 1 else 's'}"
    )
    tags = page.locator(".hit .tags")
    for n in range(tags.count()):
        expect(tags.nth(n)).to_contain_text("Combinatorics")
    expect(combinatorics).to_be_checked()

    # The whole subject instead.
    combinatorics.uncheck()
    expect(page.locator("#results-heading")).to_have_text("1–10 of 200 records")
    maths.get_by_role("checkbox", name=re.compile("^All of Mathematics")).check()
    wait_for_query(page, ("category", "math"))
    expect(page.locator("#results-heading")).to_contain_text(f"{maths_total} records")
    page.reload()
    expect(maths.get_by_role("checkbox", name=re.compile("^All of Mathematics"))).to_be_checked()
    assert total_of(page) == maths_total
    page.go_back()
    page.go_back()
    wait_for_query(page, ("category", "math.CO"))
    expect(combinatorics).to_be_checked()

    # Primary categories only: fewer subject entries, and back again.
    page.goto(kaggle_server + "/")
    subjects(page).get_by_role("checkbox", name="Primary category only").check()
    wait_for_query(page, ("crosslists", "exclude"))
    counts = subjects(page).locator("details.subject__group > summary")
    primary = [count_in(counts.nth(i)) for i in range(counts.count())]
    assert sum(primary) < sum(included)
    page.go_back()
    expect(subjects(page).get_by_role("checkbox", name="Primary category only")).not_to_be_checked()
    counts = subjects(page).locator("details.subject__group > summary")
    assert sum(count_in(counts.nth(i)) for i in range(counts.count())) == sum(included)


# -- accessibility: axe-core, WCAG 2.1 A and AA -----------------------------------------------

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_violations(page) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations on the page as shown, then with every fold open."""
    axe = pytest.importorskip("axe_playwright_python.sync_playwright").Axe()
    options = {"runOnly": {"type": "tag", "values": WCAG_21_AA}, "resultTypes": ["violations"]}
    found = []
    for state in ("as loaded", "every <details> open"):
        if state != "as loaded":
            page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        for violation in axe.run(page, options=options).response["violations"]:
            targets = [" ".join(node["target"]) for node in violation["nodes"]]
            found.append(f"{page.url} ({state}): {violation['id']}: {violation['help']} {targets}")
    return found


@pytest.mark.parametrize(
    ("server", "subject"), [("fixture_server", "cs"), ("kaggle_server", "math")]
)
def test_search_record_and_author_pages_have_no_axe_violations(request, page, server, subject):
    base = request.getfixturevalue(server)
    page.goto(f"{base}/?subject={subject}&crosslists=exclude")
    expect(subjects(page).get_by_role("checkbox", name=re.compile("^All of"))).to_be_checked()
    violations = axe_violations(page)
    page.goto(f"{base}/?subject={subject}")
    page.locator(".hit__title a").first.click()
    expect(page.locator(".record .tags")).to_be_visible()
    violations += axe_violations(page)
    page.locator(".record__authors a").first.click()
    expect(page.get_by_role("heading", name="By category")).to_be_visible()
    violations += axe_violations(page)
    assert violations == []


# -- search modes ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vector_server(seed_records, tmp_path_factory) -> Iterator[str]:
    """The seed corpus with vectors: the page offers the Match menu."""
    from searchsvc.indexing.indexer import build_index_from_records

    location = tmp_path_factory.mktemp("vector-index") / "index"
    build_index_from_records(seed_records, location, vectors=True)
    yield from serve(location)


def test_the_match_menu_switches_modes_and_keeps_them(page, vector_server):
    page.goto(vector_server + "/?q=faster+neural+network+training")
    menu = page.get_by_label("Match")
    expect(menu).to_be_visible()
    expect(menu).to_have_value("hybrid")
    menu.select_option("semantic")  # submits itself
    page.wait_for_url(lambda url: ("mode", "semantic") in query_of(url))
    expect(page.get_by_label("Match")).to_have_value("semantic")
    # The records near enough the query's meaning, as the API counts them.
    api = f"{vector_server}/api/v1/search?q=faster+neural+network+training&mode=semantic"
    total = page.request.get(api).json()["total"]
    expect(page.locator("#results-heading")).to_contain_text(f"{total} record")
    # A new query from the box keeps the mode.
    page.get_by_label("Search publications").fill("graph embeddings")
    page.get_by_role("button", name="Search", exact=True).click()
    page.wait_for_url(lambda url: ("q", "graph embeddings") in query_of(url))
    assert ("mode", "semantic") in query_of(page.url)
    assert axe_violations(page) == []
