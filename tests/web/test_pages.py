"""The HTML pages through the test client, on real indexes: content, URL state, errors, escaping."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.etree import ElementTree

import pytest
from flask import render_template

from searchsvc.app import create_app
from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.records import Record
from searchsvc.web.bibtex import citation_key, to_bibtex
from searchsvc.web.params import FACET_SIZE, SearchLinks, parse_search_args
from tests.support import FIXTURE_RECORDS, HOSTILE_TITLE, build_index

OLD_STYLE_ID = "hep-th/9901001"
PROLIFIC = "Grace Hopper"  # has enough records in the extra index for two author pages


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """The fixture records, plus an old-style (slashed) id, a `javascript:` URL and a prolific
    author with 25 records."""
    extra = [
        replace(FIXTURE_RECORDS[3], id=OLD_STYLE_ID, title="Old Style Identifier Paper"),
        Record(
            id="seed-jsurl0001",
            title="A record whose source link is a script",
            authors=("Mallory O'Brien",),
            year=2019,
            categories=("cs.CR",),
            url="javascript:alert(document.domain)",
        ),
        *(
            Record(
                id=f"hopper-{n:04d}",
                title=f"Compilers and Programming Note {n}",
                abstract="About compilers.",
                authors=(PROLIFIC, "Ada Lovelace") if n % 5 == 0 else (PROLIFIC,),
                year=1950 + n,
                categories=("cs.PL",),
                url=f"https://example.org/hopper/{n}",
            )
            for n in range(25)
        ),
    ]
    location = build_index(tmp_path_factory.mktemp("web-index"), (*FIXTURE_RECORDS, *extra))
    return create_app({"INDEX": location, "TESTING": True}).test_client()


def page(client, url, status=200):
    response = client.get(url)
    text = response.get_data(as_text=True)
    assert response.status_code == status, text[:2000]
    assert response.mimetype == "text/html"
    return text


def text_of(markup: str) -> str:
    """Roughly what a person reads: tags dropped, entities decoded, whitespace collapsed."""
    markup = re.sub(r"</?mark>", "", markup)  # highlights sit inside words
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def checked_values(markup: str, name: str) -> set[str]:
    boxes = re.findall(rf'<input type="checkbox"[^>]*name="{name}"[^>]*>', markup)
    return {
        html.unescape(re.search(r'value="([^"]*)"', box).group(1))
        for box in boxes
        if "checked" in box
    }


def hrefs(markup: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'href="([^"]*)"', markup)]


# -- the search page -----------------------------------------------------------------------


def test_front_page_browses_every_record_newest_first(seed_client):
    markup = page(seed_client, "/")
    assert "1–10 of 33 records" in text_of(markup)
    years = [int(y) for y in re.findall(r'class="hit__year">(\d{4})<', markup)]
    assert years == sorted(years, reverse=True) and len(years) == 10
    assert 'role="search"' in markup and '<label class="visually-hidden" for="q">' in markup
    assert "<details" in markup and "Search syntax help" in markup


def test_results_show_highlights_authors_year_categories_and_time(seed_client):
    markup = page(seed_client, "/?q=scheduling")
    titles = re.findall(r'class="hit__title"[^>]*><a href="([^"]+)">(.*?)</a>', markup)
    assert "<mark>Scheduling</mark>" in titles[0][1]
    assert text_of(titles[0][1]).startswith(("Shockwave", "CASSINI"))
    assert re.search(r"in [\d.]+ ms", text_of(markup))
    assert "/authors/Aditya%20Akella" in markup or "/authors/Shivaram%20Venkataraman" in markup
    assert 'class="tag"' in markup and 'class="hit__year"' in markup


def test_ticked_categories_are_checked_counted_and_removable(seed_client):
    markup = page(seed_client, "/?category=cs.DC&category=cs.LG")
    assert checked_values(markup, "category") == {"cs.DC", "cs.LG"}
    # Disjunctive counts: choosing cs.DC does not zero cs.LG (Machine Learning).
    assert re.search(
        r"Machine Learning<[^>]*> \(cs\.LG\)</span></span> <[^>]*facet__count.*?11", markup
    )
    assert "of 23 records" in text_of(markup)
    chips = re.findall(r'<a class="chip" href="([^"]+)"', markup)
    assert sorted(parse_qsl(urlsplit(html.unescape(h)).query) for h in chips) == [
        [("category", "cs.DC")],
        [("category", "cs.LG")],
    ]
    assert "Clear all filters" in markup


def spoken(markup: str) -> str:
    """The text of a bit of markup with its hidden parts, as a screen reader reads it."""
    return re.sub(r"\(\s+", "(", text_of(markup))


def subject_groups(markup: str) -> dict[str, tuple[bool, str]]:
    """The sidebar's subject groups: code -> (open, the summary as read)."""
    groups = re.findall(
        r'<details class="subject__group"( open)?>\s*<summary title="([^"]+)">(.*?)</summary>',
        markup,
        flags=re.S,
    )
    return {code: (bool(is_open), spoken(summary)) for is_open, code, summary in groups}


def option_label(markup: str, name: str, value: str) -> tuple[str | None, str]:
    """A facet checkbox's label: (its title, its text as a screen reader reads it)."""
    box = re.search(rf'<input type="checkbox" id="([^"]+)" name="{name}" value="{value}"', markup)
    assert box, (name, value)
    label = re.search(
        rf'<label for="{box.group(1)}"( title="([^"]*)")?>(.*?)</label>', markup, re.S
    )
    return label.group(2), spoken(label.group(3))


def test_subjects_group_their_categories_by_name_with_codes_on_hover(client):
    markup = page(client, "/")
    # One group per subject, named and counted, closed until something in it is chosen.
    groups = subject_groups(markup)
    assert groups["cs"] == (False, "Computer Science (30 records)")
    assert groups["hep-ph"] == (False, "High Energy Physics - Phenomenology (2 records)")
    # Inside: the whole subject, then its categories by name, the code on hover and read out.
    # The whole subject is one more value of the category filter (the panel is one facet).
    assert option_label(markup, "category", "cs") == (
        "cs",
        "All of Computer Science (cs) (30 records)",
    )
    assert option_label(markup, "category", "cs.DC") == (
        "cs.DC",
        "Distributed, Parallel, and Cluster Computing (cs.DC) (2 records)",
    )
    assert option_label(markup, "category", "cs.PL")[1].startswith("Programming Languages (cs.PL)")
    cs_group = re.search(r'(?s)<summary title="cs">.*?</details>', markup).group(0)
    assert 'value="cs.DC"' in cs_group and 'value="cs.PL"' in cs_group
    # A one-category archive (hep-ph holds hep-ph) lists only its "all of" box.
    assert markup.count('name="category" value="hep-ph"') == 1
    assert option_label(markup, "category", "hep-ph")[1].startswith("All of High Energy")
    # The whole page works without script of its own: no inline script or handler.
    assert not re.search(r"<script(?![^>]*\bsrc=)", markup)
    assert not re.search(r"<[a-z][^>]*\son[a-z]+=", markup)


def test_a_chosen_subject_or_category_opens_its_group_and_is_a_named_chip(client):
    markup = page(client, "/?category=cs.DC&subject=hep-ph")
    groups = subject_groups(markup)
    assert groups["cs"][0] and groups["hep-ph"][0]
    assert checked_values(markup, "category") == {"cs.DC"}
    assert checked_values(markup, "subject") == {"hep-ph"}
    chips = re.findall(r'<a class="chip" href="([^"]+)"( title="([^"]+)")?>(.*?)</a>', markup)
    # Each chip reads by name (the code on hover) and its link drops only its own filter.
    assert {
        spoken(text): (title, parse_qsl(urlsplit(html.unescape(href)).query))
        for href, _, title, text in chips
    } == {
        "Category: Distributed, Parallel, and Cluster Computing (cs.DC) × (remove filter)": (
            "cs.DC",
            [("subject", "hep-ph")],
        ),
        "Subject: High Energy Physics - Phenomenology (hep-ph) × (remove filter)": (
            "hep-ph",
            [("category", "cs.DC")],
        ),
    }


def test_chosen_values_outside_the_counts_stay_listed_and_ticked(client):
    # An archive as a category filter: its group's "all of" box, ticked and counted as the
    # group is (not a category box of its own); a group as a subject filter: listed flat, by
    # name, counted as the panel's headings are.
    markup = page(client, "/?category=cs&subject=grp_cs")
    assert "of 30 records" in spoken(markup)
    assert checked_values(markup, "category") == {"cs"}
    assert checked_values(markup, "subject") == {"grp_cs"}
    assert subject_groups(markup)["cs"] == (True, "Computer Science (30 records)")
    assert option_label(markup, "category", "cs") == (
        "cs",
        "All of Computer Science (cs) (30 records)",
    )
    assert len(re.findall(r'type="checkbox" id="[^"]+" name="category" value="cs"', markup)) == 1
    assert option_label(markup, "subject", "grp_cs") == (
        "grp_cs",
        "Computer Science (grp_cs) (30 records)",
    )
    # A chosen category no record of this search has: in its subject's group, counted 0.
    markup = page(client, "/?q=compilers&category=cs.DC")
    assert subject_groups(markup)["cs"][0]
    assert checked_values(markup, "category") == {"cs.DC"}
    assert option_label(markup, "category", "cs.DC")[1] == (
        "Distributed, Parallel, and Cluster Computing (cs.DC) (0 records)"
    )
    # A group chosen as a category: flat, counted as the categories are.
    markup = page(client, "/?category=grp_physics")
    assert option_label(markup, "category", "grp_physics") == (
        "grp_physics",
        "Physics (grp_physics) (2 records)",
    )


def test_a_chosen_value_outside_the_top_n_is_listed_ticked_with_its_count(tmp_path):
    # More authors than the page asks the engine for (params.FACET_SIZE): the chosen one,
    # last in the top N's order, is beyond it.
    records = [
        Record(
            id=f"many-{n:03d}",
            title=f"Paper {n}",
            authors=("Common Author", f"Author {n:03d}"),
            year=2000 + n % 20,
            categories=("cs.DC",),
        )
        for n in range(FACET_SIZE + 10)
    ]
    location = build_index(tmp_path / "index", records)
    client = create_app({"INDEX": location, "TESTING": True}).test_client()
    chosen = f"Author {FACET_SIZE + 9:03d}"
    assert chosen not in page(client, "/")
    markup = page(client, f"/?author={chosen}&year=1999")
    assert checked_values(markup, "author") == {chosen}
    assert checked_values(markup, "year") == {"1999"}
    # Counted without the author filter and with the year filter: no record of 1999.
    assert option_label(markup, "author", chosen) == (None, f"{chosen} (0 records)")
    assert option_label(markup, "year", "1999") == (None, "1999 (0 records)")
    markup = page(client, f"/?author={chosen}")
    assert checked_values(markup, "author") == {chosen}
    assert option_label(markup, "author", chosen) == (None, f"{chosen} (1 records)")


def test_categories_of_other_sources_stay_flat_by_their_code(tmp_path):
    records = [
        Record(id="eco-1", title="Bees", authors=("A",), year=2020, categories=("Ecology",)),
        Record(
            id="eco-2", title="Ants", authors=("B",), year=2021, categories=("Ecology", "cs.DC")
        ),
    ]
    location = build_index(tmp_path / "index", records)
    client = create_app({"INDEX": location, "TESTING": True}).test_client()
    markup = page(client, "/")
    assert set(subject_groups(markup)) == {"cs"}
    assert option_label(markup, "category", "Ecology") == (None, "Ecology (2 records)")
    assert 'name="subject" value="Ecology"' not in markup  # its category says it all
    markup = page(client, "/?category=Ecology")
    assert checked_values(markup, "category") == {"Ecology"}
    assert "Category: Ecology ×" in spoken(markup)
    record = page(client, "/records/eco-2")
    assert re.search(r'<a href="[^"]*category=Ecology" class="tag">Ecology</a>', record)


def test_crosslists_toggle_counts_primary_categories_and_stays_in_the_links(client):
    markup = page(client, "/")
    assert (
        'name="crosslists" value="exclude"' in markup
        and checked_values(markup, "crosslists") == set()
    )
    assert option_label(markup, "category", "cs.LG")[1].endswith("(2 records)")
    markup = page(client, "/?crosslists=exclude&sort=title")
    assert checked_values(markup, "crosslists") == {"exclude"}
    # cs.LG is the first category of one fixture record, a cross-list of the other.
    assert option_label(markup, "category", "cs.LG")[1].endswith("(1 records)")
    assert "Filters (1 active)" in markup
    chip = re.search(r'<a class="chip" href="([^"]+)">(.*?)</a>', markup)
    assert spoken(chip.group(2)) == "Primary category only × (remove filter)"
    assert parse_qsl(urlsplit(html.unescape(chip.group(1))).query) == [("sort", "title")]
    next_link = html.unescape(re.search(r'<a rel="next" href="([^"]+)"', markup).group(1))
    assert parse_qsl(urlsplit(next_link).query) == [
        ("sort", "title"),
        ("page", "2"),
        ("crosslists", "exclude"),
    ]
    assert '<input type="hidden" name="crosslists" value="exclude">' in markup  # the sort form
    feed = re.search(
        r'<link rel="alternate" type="application/atom\+xml"[^>]*href="([^"]+)"', markup
    )
    assert ("crosslists", "exclude") in parse_qsl(urlsplit(html.unescape(feed.group(1))).query)
    assert "crosslists" not in html.unescape(re.search(r'href="([^"]+)">Clear all', markup)[1])


def test_every_state_is_in_the_links(seed_client):
    url = "/?q=learning&category=cs.DC&category=cs.LG&year_from=2021&year_to=2023&sort=newest"
    markup = page(seed_client, url)
    assert "1–10 of 12 records for “learning”" in text_of(markup)
    next_link = html.unescape(re.search(r'<a rel="next" href="([^"]+)"', markup).group(1))
    assert parse_qsl(urlsplit(next_link).query) == [
        ("q", "learning"),
        ("category", "cs.DC"),
        ("category", "cs.LG"),
        ("year_from", "2021"),
        ("year_to", "2023"),
        ("sort", "newest"),
        ("page", "2"),
    ]
    second = page(seed_client, next_link)
    assert "11–12 of 12 records" in text_of(second)
    assert checked_values(second, "category") == {"cs.DC", "cs.LG"}
    assert 'name="year_from" type="number"' in second and 'value="2021"' in second
    assert '<option value="newest" selected>' in second
    assert "Years: 2021–2023" in text_of(second)


def test_year_histogram_shows_the_distribution_of_matches(seed_client):
    markup = page(seed_client, "/")
    assert "Matches by year" in markup
    bars = re.findall(r'<span class="year-chart__year[^"]*">(\d{4})</span>', markup)
    assert bars == ["2019", "2020", "2021", "2022", "2023", "2024"]
    assert "2023: 10 records" in text_of(markup).replace(" : ", ": ")


def test_did_you_mean_links_to_the_corrected_search(seed_client):
    markup = page(seed_client, "/?q=schedulng")
    assert re.search(r'Did you mean <a href="/\?q=scheduling">scheduling</a>\?', markup)
    assert "No records found" in text_of(markup)


def test_no_results_page_helps(seed_client):
    text = text_of(page(seed_client, "/?q=zzzzqqq&category=cs.DC"))
    assert "Nothing matches “zzzzqqq” with the filters you chose" in text
    assert "search again without the filters" in text and "browse every record" in text


def test_a_page_past_the_end_is_empty_with_links_back(seed_client):
    markup = page(seed_client, "/?page=99")
    assert "No records on page 99" in text_of(markup)
    assert "/?page=4" in markup


def test_the_page_offers_the_feed_of_its_search(seed_client):
    markup = page(seed_client, "/?q=learning&category=cs.DC&sort=title&page=2")
    head = re.search(
        r'<link rel="alternate" type="application/atom\+xml"[^>]* href="([^"]+)"', markup
    )
    link = re.search(
        r'<a href="([^"]+)" rel="alternate" type="application/atom\+xml">Subscribe', markup
    )
    href = html.unescape(link.group(1))
    assert html.unescape(head.group(1)) == href
    assert "Subscribe to new records of this search" in text_of(markup)
    # The same search from its first page, in the feed's one order (newest first).
    assert urlsplit(href).path == "/api/v1/search.atom"
    assert parse_qsl(urlsplit(href).query) == [("q", "learning"), ("category", "cs.DC")]
    response = seed_client.get(href)
    assert response.status_code == 200 and response.mimetype == "application/atom+xml"
    atom = "{http://www.w3.org/2005/Atom}"
    entries = ElementTree.fromstring(response.data).iter(f"{atom}entry")
    ids = [unquote(entry.findtext(f"{atom}id").rsplit(":", 1)[1]) for entry in entries]
    body = seed_client.get(f"/api/v1/search?{urlsplit(href).query}&sort=newest").get_json()
    assert ids == [hit["id"] for hit in body["hits"]] and len(ids) == 7


def test_a_page_without_results_still_offers_the_feed_and_an_error_page_none(seed_client):
    assert "/api/v1/search.atom?q=zzzzqqq" in page(seed_client, "/?q=zzzzqqq")
    assert "application/atom+xml" not in page(seed_client, "/?q=%22abc", status=400)


@pytest.mark.parametrize(
    "query, message",
    [
        ("page=abc", "The page number must be a whole number"),
        ("page=0", "The page number must be from 1"),
        ("year=zzzz", "A year must be a whole number"),
        ("year=99999", "Years must be from 1000 to 2999"),
        ("year_from=2025&year_to=2020", "The year range starts after it ends"),
        ("sort=sideways", "Sort must be one of"),
        ("q=" + "x" * 10_001, "The search text is too long"),
        ("q=learning%20year:abc", "year:abc is not a year"),
        ("q=%22learned%20caches", "this quote is never closed (at character 1)"),
        ("q=title:", "title: needs a word"),
        ("q=learning%20AND", "AND needs a word or a group after it (at character 10)"),
        ("q=year:2023..2020", "ends before it starts"),
        ("q=quantum%20%7Ba%20TO%20z%7D", "ranges are for years only"),
        ("q=author:%5Ba%20TO%20b%5D", "ranges are for years only"),
    ],
)
def test_bad_input_is_a_friendly_400(seed_client, query, message):
    markup = page(seed_client, f"/?{query}", status=400)
    assert message in text_of(markup)
    assert "Traceback" not in markup
    assert 'role="search"' in markup  # the search box is there to try again


QUERY_ERROR = re.compile(
    r'<p class="query-error"><code>(.*?)<mark class="query-error__at">(.*?)</mark>(.*?)</code></p>',
    re.DOTALL,
)
MALFORMED_QUERIES = [
    # (q as typed, a fragment of the message, the 0-based position of its cause)
    ("title:", "title: needs a word", 0),  # a dangling field prefix
    ("learning author:", "author: needs a word", 9),
    ('"learned caches', "this quote is never closed", 0),  # an unclosed quote
    ('learning "caches', "this quote is never closed", 9),
    ("((learning", "this ( is never closed", 1),  # an unclosed parenthesis
    ("learning))", "this ) has no ( before it", 8),
    ("year:2023..2020", "the year range 2023..2020 ends before it starts", 5),  # reversed
    ("learning year:abc", "year:abc is not a year", len("learning year:")),
    ("AND", "AND needs a word or a group before it", 0),  # lone operators
    ("NOT", "NOT needs a word or a group after it", 0),
    ("learning AND", "AND needs a word or a group after it", 9),
    ("<b>x</b> title:", "title: needs a word", 9),  # the typed text is escaped around the mark
]


@pytest.mark.parametrize(
    ("q", "message", "position"), MALFORMED_QUERIES, ids=[repr(q) for q, _, _ in MALFORMED_QUERIES]
)
def test_a_malformed_query_page_marks_the_character_the_message_points_at(
    seed_client, q, message, position
):
    response = seed_client.get("/", query_string={"q": q})
    markup = response.get_data(as_text=True)
    assert response.status_code == 400 and response.mimetype == "text/html"
    text = text_of(markup)
    assert "That query cannot be searched" in text
    assert message in text and f"(at character {position + 1})" in text
    before, marked, after = (html.unescape(part) for part in QUERY_ERROR.search(markup).groups())
    assert (before, marked, after) == (q[:position], q[position], q[position + 1 :])
    assert "<b>x</b>" not in markup
    # The search box keeps what was typed, to correct it.
    box = re.search(r'<input[^>]*name="q"[^>]*>', markup).group(0)
    assert html.unescape(re.search(r'value="([^"]*)"', box).group(1)) == q


def test_a_parameter_error_marks_no_character_of_the_query(seed_client):
    markup = page(seed_client, "/?q=learning&page=abc", status=400)
    assert "query-error__at" not in markup


def test_the_mark_is_on_the_right_character_when_the_query_starts_with_spaces(seed_client):
    q = "  title:"
    markup = page(seed_client, "/?q=%20%20title:", status=400)
    before, marked, _ = (html.unescape(part) for part in QUERY_ERROR.search(markup).groups())
    assert (before, marked) == (q[:2], "t")


def test_unknown_record_and_author_are_404_pages(client):
    assert "Not found" in text_of(page(client, "/records/9999.99999", status=404))
    assert "No records are attributed to" in text_of(page(client, "/authors/Nobody", status=404))


# -- record pages ----------------------------------------------------------------------------


def test_record_page_shows_the_full_record_links_and_exports(client):
    markup = page(client, "/records/2301.00001")
    text = text_of(markup)
    assert "Fair Cluster Scheduling for Deep Learning Jobs" in text
    assert "We study scheduling of deep learning training jobs on shared GPU clusters." in text
    assert {"/authors/Ada%20Lovelace", "https://arxiv.org/abs/2301.00001"} <= set(hrefs(markup))
    assert {"/records/2301.00001.bib", "/records/2301.00001.json"} <= set(hrefs(markup))
    assert "More like this" in text
    similar = re.search(r'(?s)id="similar-heading".*?</section>', markup).group(0)
    assert "/records/" in similar and '/records/2301.00001"' not in similar


def test_record_pages_carry_the_citation_tags_reference_managers_import(client):
    """Zotero's and Mendeley's connectors read Highwire `citation_*` meta tags (issue 34)."""
    markup = page(client, "/records/2301.00001")
    tags: dict[str, list[str]] = {}
    for name, content in re.findall(r'<meta name="(citation_[a-z_]+)" content="([^"]*)">', markup):
        tags.setdefault(name, []).append(html.unescape(content))
    assert tags["citation_title"] == ["Fair Cluster Scheduling for Deep Learning Jobs"]
    assert tags["citation_author"] == ["Ada Lovelace", "Shivaram Venkataraman"]
    assert tags["citation_publication_date"] == ["2023"]
    assert tags["citation_arxiv_id"] == ["2301.00001"]
    assert tags["citation_pdf_url"] == ["https://arxiv.org/pdf/2301.00001"]
    alternates = dict(re.findall(r'<link rel="alternate" type="([^"]+)" href="([^"]+)">', markup))
    assert alternates["application/json"] == "/records/2301.00001.json"
    assert alternates["application/x-bibtex"] == "/records/2301.00001.bib"


def test_citation_tags_escape_what_a_record_holds(tmp_path):
    hostile = Record(id="x-1", title='A "quoted" <b>title</b>', authors=('Eve "><script>',))
    with create_app({"INDEX": tmp_path / "none", "TESTING": True}).test_request_context():
        markup = render_template(
            "web/record.html", record=hostile, arxiv_id=None, similar=[], category_href=str
        )
    assert "<script>" not in markup and "<b>" not in markup
    titles = re.findall(r'<meta name="citation_title" content="([^"]*)">', markup)
    assert [html.unescape(t) for t in titles] == ['A "quoted" <b>title</b>']
    assert "citation_arxiv_id" not in markup


def test_record_and_author_pages_name_categories_with_codes_on_hover(client):
    markup = page(client, "/records/2301.00001")
    tags = re.findall(r'<a href="([^"]+)" class="tag" title="([^"]+)">(.*?)</a>', markup)
    assert [(html.unescape(h), t, spoken(x)) for h, t, x in tags] == [
        ("/?category=cs.DC", "cs.DC", "Distributed, Parallel, and Cluster Computing (cs.DC)"),
        ("/?category=cs.LG", "cs.LG", "Machine Learning (cs.LG)"),
    ]
    author = page(client, "/authors/Aditya%20Akella")
    by_category = re.search(r'(?s)id="cat-heading".*?</ul>', author).group(0)
    assert 'title="cs.NI">Networking and Internet Architecture<' in by_category
    assert "category=cs.NI" in html.unescape(by_category)
    listed = re.search(r'(?s)class="author-records".*', author).group(0)
    assert '<span class="tag" title="cs.LG">Machine Learning<' in listed


def test_record_exports_as_bibtex_and_json(client):
    bib = client.get("/records/2301.00001.bib")
    assert bib.status_code == 200 and bib.mimetype == "application/x-bibtex"
    assert bib.mimetype_params == {"charset": "utf-8"}
    assert bib.get_data(as_text=True).startswith("@misc{lovelace2023fair,")
    assert client.get("/records/2301.00001?format=bibtex").data == bib.data
    record = client.get("/records/2301.00001.json").get_json()
    assert record == FIXTURE_RECORDS[0].to_dict()
    assert client.get("/records/2301.00001?format=json").get_json() == record
    assert client.get("/records/2301.00001?format=pdf").status_code == 400


def test_record_ids_with_slashes(client):
    assert "Old Style Identifier Paper" in page(client, f"/records/{OLD_STYLE_ID}")
    bib = client.get(f"/records/{OLD_STYLE_ID}.bib").get_data(as_text=True)
    assert "eprint = {hep-th/9901001}" in bib
    assert client.get(f"/records/{OLD_STYLE_ID}.json").get_json()["id"] == OLD_STYLE_ID


def test_only_http_source_urls_become_links(client):
    markup = page(client, "/records/seed-jsurl0001")
    assert "javascript:" not in markup
    search = page(client, "/?q=source%20link%20script")
    assert "javascript:" not in search


# -- author pages ----------------------------------------------------------------------------


def test_author_page_lists_records_newest_first_with_counts(seed_client):
    markup = page(seed_client, "/authors/Aditya%20Akella")
    text = text_of(markup)
    assert "Publications attributed to Aditya Akella" in text
    assert "18 records" in text
    years = [int(y) for y in re.findall(r'class="hit__year">(\d{4})<', markup)]
    assert years == sorted(years, reverse=True) and len(years) == 18
    assert "Records by year" in text and "By category" in text
    assert "/authors/Shivaram%20Venkataraman" in hrefs(markup)  # co-attributed


def test_author_page_is_paged(client):
    first = text_of(page(client, f"/authors/{PROLIFIC}"))
    assert "25 records · page 1 of 2" in first and "Compilers and Programming Note 24" in first
    second = page(client, f"/authors/{PROLIFIC}?page=2")
    assert "page 2 of 2" in text_of(second)
    assert len(re.findall(r'class="hit__year"', second)) == 5
    assert "/authors/Grace%20Hopper?page=1" in hrefs(second)
    assert "Ada Lovelace" in text_of(second)
    assert "There is no page 3" in text_of(page(client, f"/authors/{PROLIFIC}?page=3"))
    assert "must be a whole number" in text_of(page(client, "/authors/x?page=abc", status=400))


# -- a hostile record renders as text everywhere ---------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "/",
        "/?q=quoted",
        "/?q=script",
        "/?category=cs.CR",
        "/records/seed-hostile0001",
        "/authors/Mallory%20O%27Brien",
        "/records/2301.00001",  # may list the hostile record as similar
    ],
)
def test_hostile_record_renders_as_text(client, url):
    markup = page(client, url)
    assert "<script>alert" not in markup and "<script>document" not in markup
    assert "<img src=x" not in markup and "<b>bold</b>" not in markup
    assert re.findall(r"<script\b[^>]*>", markup) == [re.search(r"<script src=[^>]*>", markup)[0]]
    if url != "/records/2301.00001":
        assert HOSTILE_TITLE in text_of(markup)


def test_hostile_title_is_the_record_pages_heading(client):
    markup = page(client, "/records/seed-hostile0001")
    heading = re.search(r'<h1 id="record-title">(.*?)</h1>', markup).group(1)
    assert html.unescape(heading) == HOSTILE_TITLE
    assert "Mallory O&#39;Brien" in markup


# -- the pieces ------------------------------------------------------------------------------


def test_search_args_parse_into_a_request_and_back_into_links():
    from werkzeug.datastructures import MultiDict

    args = MultiDict(
        [("q", "gpu"), ("category", "cs.DC"), ("category", ""), ("year_from", ""), ("page", "2")]
    )
    request = parse_search_args(args)
    assert (request.q, request.selected("category"), request.year_from, request.page) == (
        "gpu",
        ("cs.DC",),
        None,
        2,
    )
    links = SearchLinks(request)
    assert links.page(3) == "/?q=gpu&category=cs.DC&page=3"
    assert links.adding("category", "cs.LG") == "/?q=gpu&category=cs.DC&category=cs.LG"
    assert links.removing("category", value="cs.DC") == "/?q=gpu"
    assert links.only_year(2020) == "/?q=gpu&category=cs.DC&year=2020"
    with pytest.raises(InvalidRequest):
        parse_search_args(MultiDict([("year", "²")]))


def test_bibtex_escapes_tex_specials_and_keeps_unicode():
    record = Record(
        id="0704.0001",
        title="Cost & 100% of $x_1$ {braces}",
        authors=("C. Balázs", "E. L. Berger"),
        year=2007,
        categories=("hep-ph",),
        journal_ref="Phys. Rev. D 76:013009 (2007)",
    )
    entry = to_bibtex(record)
    assert entry.startswith("@article{balazs2007cost,")
    assert r"title = {{Cost \& 100\% of \$x\_1\$ \{braces\}}}" in entry
    assert "author = {C. Balázs and E. L. Berger}" in entry
    assert "primaryClass = {hep-ph}" in entry
    assert citation_key(Record(id="x", title="On")) == "anonpaper"


TEX_SPECIALS = "\\{}%&$#_~^"
_UNESCAPED = {
    r"\textbackslash{}": "\\",
    r"\textasciitilde{}": "~",
    r"\textasciicircum{}": "^",
    **{"\\" + ch: ch for ch in "{}%&$#_"},
}


def _bibtex_fields(entry: str) -> dict[str, str]:
    lines = entry.strip().splitlines()[1:-1]
    fields = {}
    for line in lines:
        name, _, value = line.strip().rstrip(",").partition(" = ")
        assert value.startswith("{") and value.endswith("}"), line
        fields[name] = value[1:-1]
    return fields


def test_bibtex_escapes_every_field_by_one_rule():
    """Issue 33, item 16: no field passes TeX's specials through (a URL's `%` began a comment,
    its `\\` a command); each field, unescaped, is the record's text (text fields by TeX's
    escapes, the URL and DOI by a URL's, as \\url{} reads them)."""
    odd = f"a{TEX_SPECIALS}b"
    record = Record(
        id="2301.00001",
        title=odd,
        authors=(odd,),
        year=2023,
        categories=(odd,),
        url=f"https://example.org/a%20b\\c_d?x=1&y=~#{odd}",
        doi=f"10.1000/{odd}",
        journal_ref=odd,
        comments=odd,
        abstract=odd,
    )
    fields = _bibtex_fields(to_bibtex(record))
    # The verbatim fields, which styles hand to \url{}: a URL's own escapes, not TeX's; every
    # `%` written `\%`, no other backslash, no brace; the same URL once read.
    assert fields["url"].startswith(r"https://example.org/a\%20b\%5Cc_d?x=1&y=~#")
    for name in ("url", "doi"):
        value = fields.pop(name)
        assert not re.search(r"(?<!\\)%", value), (name, value)
        assert not re.search(r"\\(?!%)", value) and not set(value) & set("{} "), (name, value)
        assert unquote(value.replace("\\%", "%")) == unquote(getattr(record, name)), name
    special = re.compile(r"\\textbackslash\{\}|\\textasciitilde\{\}|\\textasciicircum\{\}|\\.")
    for name, value in fields.items():
        if name == "title":
            value = value.removeprefix("{").removesuffix("}")  # braces that keep the case
        # Every special character is part of an escape, and each escape stands for its character.
        bare = special.sub("", value)
        assert not set(bare) & set(TEX_SPECIALS), (name, value)
        original = special.sub(lambda m: _UNESCAPED[m.group(0)], value)
        expected = {
            "year": "2023",
            "eprint": record.id,
            "archivePrefix": "arXiv",
        }.get(name, odd)
        assert original == expected, name


def test_without_an_index_pages_say_so_politely(tmp_path):
    client = create_app({"INDEX": tmp_path / "missing", "TESTING": True}).test_client()
    for url in ("/", "/records/2301.00001", "/authors/Ada%20Lovelace"):
        text = text_of(page(client, url, status=503))
        assert "Search is not available right now" in text
        assert str(tmp_path) not in text


def test_highlights_render_marks_and_nothing_else():
    from searchsvc.domain.query import Hit
    from searchsvc.web.views import highlighted

    hit = Hit(
        FIXTURE_RECORDS[4],
        highlights={"title": "&lt;script&gt; <mark>Quoted</mark>", "abstract": "<img src=x>"},
    )
    assert str(highlighted(hit, "title")) == "&lt;script&gt; <mark>Quoted</mark>"
    abstract = str(highlighted(hit, "abstract"))  # a stray tag: fall back to escaped text
    assert "<img" not in abstract and "&lt;script&gt;document.cookie" in abstract
    with pytest.raises(ValueError):
        highlighted(hit, "authors")
