"""GET /api/v1/search.atom: a search as an Atom feed, through the real app over real indexes."""

from __future__ import annotations

import gzip
from datetime import datetime
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.etree import ElementTree

import pytest

from searchsvc.app import create_app
from searchsvc.domain.records import Record
from tests.support import FIXTURE_RECORDS, HOSTILE_TITLE, build_index

NS = {"atom": "http://www.w3.org/2005/Atom", "os": "http://a9.com/-/spec/opensearch/1.1/"}
FEED = "/api/v1/search.atom"


def feed(client, query_string=None, **headers) -> ElementTree.Element:
    response = client.get(FEED, query_string=query_string, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "application/atom+xml"
    assert response.mimetype_params["charset"] == "utf-8"
    root = ElementTree.fromstring(response.data)
    assert root.tag == "{http://www.w3.org/2005/Atom}feed"
    return root


def entry_ids(root: ElementTree.Element) -> list[str]:
    """The record id of each entry, read from its id (a URN of the record's id)."""
    prefix = "urn:searchsvc:record:"
    ids = [entry.findtext("atom:id", namespaces=NS) for entry in root.iterfind("atom:entry", NS)]
    assert all(i.startswith(prefix) for i in ids), ids
    return [unquote(i.removeprefix(prefix)) for i in ids]


def newest_first(client, query_string) -> dict:
    """The same search through the JSON API, newest first."""
    response = client.get("/api/v1/search", query_string=[*query_string, ("sort", "newest")])
    assert response.status_code == 200, response.get_json()
    return response.get_json()


@pytest.mark.parametrize(
    "query_string",
    [
        [],
        [("q", "learning")],
        [("q", "learning"), ("category", "cs.DC"), ("category", "cs.NI")],
        [("q", "scheduling"), ("year_from", "2021"), ("year_to", "2023"), ("per_page", "3")],
        [("author", "Aditya Akella"), ("year", "2023"), ("year", "2022")],
        [("q", "learn*"), ("fields", "title"), ("per_page", "2"), ("page", "2")],
    ],
)
def test_entries_are_the_newest_first_hits_of_the_same_search(seed_client, query_string):
    root = feed(seed_client, query_string)
    body = newest_first(seed_client, query_string)
    assert entry_ids(root) == [hit["id"] for hit in body["hits"]]
    assert root.findtext("os:totalResults", namespaces=NS) == str(body["total"])
    assert root.findtext("os:itemsPerPage", namespaces=NS) == str(body["per_page"])
    start = (body["page"] - 1) * body["per_page"] + 1
    assert root.findtext("os:startIndex", namespaces=NS) == str(start)


def test_a_filter_changes_the_entries(seed_client):
    everything = entry_ids(feed(seed_client, {"q": "learning", "per_page": 100}))
    root = feed(seed_client, {"q": "learning", "category": "cs.NI", "per_page": 100})
    networking = entry_ids(root)
    assert networking and set(networking) < set(everything)
    for entry in root.iterfind("atom:entry", NS):
        terms = [c.get("term") for c in entry.iterfind("atom:category", NS)]
        assert "cs.NI" in terms


def test_the_feed_names_the_search_and_links_to_itself_and_to_the_web_page(seed_client):
    root = feed(seed_client, [("category", "cs.DC"), ("q", "learning"), ("year_from", "2021")])
    assert root.findtext("atom:title", namespaces=NS) == (
        "searchsvc: learning; category cs.DC; years 2021–"
    )
    primary = feed(seed_client, [("subject", "cs"), ("crosslists", "exclude")])
    assert primary.findtext("atom:title", namespaces=NS) == (
        "searchsvc: all records; subject cs; primary categories only"
    )
    links = {link.get("rel"): link for link in root.iterfind("atom:link", NS)}
    self_url = links["self"].get("href")
    assert links["self"].get("type") == "application/atom+xml"
    # The canonical URL of the search, whatever order its parameters came in; relative, as no
    # public URL is set (the client's Host header names no link).
    assert self_url == "/api/v1/search.atom?q=learning&category=cs.DC&year_from=2021"
    assert root.findtext("atom:id", namespaces=NS) == (
        "urn:searchsvc:feed:q=learning&category=cs.DC&year_from=2021"
    )
    assert entry_ids(feed(seed_client, urlsplit(self_url).query)) == entry_ids(root)
    page = links["alternate"]
    assert page.get("type") == "text/html"
    assert parse_qsl(urlsplit(page.get("href")).query) == [
        ("q", "learning"),
        ("category", "cs.DC"),
        ("year_from", "2021"),
    ]
    updated = datetime.fromisoformat(root.findtext("atom:updated", namespaces=NS))
    assert updated.utcoffset() is not None
    assert root.find("atom:author/atom:name", NS).text == "searchsvc"
    assert feed(seed_client).findtext("atom:title", namespaces=NS) == "searchsvc: all records"


def test_an_entry_carries_the_record(client):
    root = feed(client, {"q": "fair cluster scheduling", "per_page": 1})
    (entry,) = root.iterfind("atom:entry", NS)
    record = FIXTURE_RECORDS[0]
    url = f"/records/{record.id}"
    assert entry.findtext("atom:id", namespaces=NS) == f"urn:searchsvc:record:{record.id}"
    assert entry.findtext("atom:title", namespaces=NS) == record.title
    (link,) = entry.iterfind("atom:link", NS)
    assert (link.get("rel"), link.get("type"), link.get("href")) == ("alternate", "text/html", url)
    assert client.get(url).mimetype == "text/html"
    names = [a.text for a in entry.iterfind("atom:author/atom:name", NS)]
    assert names == list(record.authors)
    # The abstract as written: plain text, without the search's highlight marks.
    summary = entry.find("atom:summary", NS)
    assert summary.get("type") == "text" and summary.text == record.abstract
    assert [c.get("term") for c in entry.iterfind("atom:category", NS)] == list(record.categories)
    # Records have a year only: the feed dates them January 1st of it.
    assert entry.findtext("atom:published", namespaces=NS) == "2023-01-01T00:00:00Z"
    assert entry.findtext("atom:updated", namespaces=NS) == "2023-01-01T00:00:00Z"


def test_hostile_text_stays_text(client):
    (entry,) = feed(client, {"q": "quoted"}).iterfind("atom:entry", NS)
    assert entry.findtext("atom:title", namespaces=NS) == HOSTILE_TITLE
    assert "<script>" in entry.findtext("atom:summary", namespaces=NS)


def test_characters_xml_cannot_carry_are_left_out_and_a_yearless_record_gets_the_feeds_date(
    tmp_path,
):
    records = (
        Record(
            id="bell-0001",
            title="Bell\x07 and escape\x1b characters",
            abstract="Form\x0cfeed in an abstract.",
            authors=("Null\x00 Author",),
            categories=("cs.DL",),
        ),
    )
    client = create_app({"INDEX": build_index(tmp_path, records), "TESTING": True}).test_client()
    root = feed(client, {"q": "bell\x01"})
    assert root.findtext("atom:title", namespaces=NS) == "searchsvc: bell"
    (entry,) = root.iterfind("atom:entry", NS)
    assert entry.findtext("atom:title", namespaces=NS) == "Bell and escape characters"
    assert entry.findtext("atom:summary", namespaces=NS) == "Formfeed in an abstract."
    assert entry.findtext("atom:author/atom:name", namespaces=NS) == "Null Author"
    assert entry.find("atom:published", NS) is None
    assert entry.findtext("atom:updated", namespaces=NS) == root.findtext("atom:updated", None, NS)


@pytest.mark.parametrize(
    "query_string",
    [
        {"per_page": 0},
        {"per_page": 101},
        {"page": "two"},
        {"year_from": "abc"},
        {"year": 99999},
        {"fields": "colour"},
        {"q": '"learned caches'},
        {"q": "x" * 10_001},
    ],
)
def test_a_bad_parameter_is_the_same_json_400_as_the_searchs(client, query_string):
    response = client.get(FEED, query_string=query_string)
    assert response.status_code == 400
    assert response.mimetype == "application/json"
    assert response.get_json() == client.get("/api/v1/search", query_string=query_string).get_json()
    assert "ETag" not in response.headers


def test_the_feed_is_newest_first_only(client):
    assert entry_ids(feed(client, {"sort": "newest"})) == entry_ids(feed(client))
    for order in ("relevance", "oldest", "title"):
        response = client.get(FEED, query_string={"q": "learning", "sort": order})
        assert response.status_code == 400
        error = response.get_json()["error"]
        assert error["code"] == "invalid_parameter" and set(error["details"]["errors"]) == {"sort"}


def test_parameters_a_feed_has_no_use_for_are_ignored(client):
    plain = feed(client, {"q": "learning"})
    ignored = feed(client, {"q": "learning", "facets": "colour", "facet_size": 0, "highlight": 1})
    assert entry_ids(ignored) == entry_ids(plain)


def test_the_feed_revalidates_with_its_etag_and_is_gzipped(seed_client):
    first = seed_client.get(FEED, query_string={"q": "learning"})
    etag = first.headers["ETag"]
    again = seed_client.get(FEED, query_string={"q": "learning"}, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    zipped = seed_client.get(FEED, headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["Content-Encoding"] == "gzip"
    assert ElementTree.fromstring(gzip.decompress(zipped.data)).tag.endswith("feed")


# -- issue 33, item 15: links from the configured public URL, never from the client's Host -------
HOSTILE_HOST = {
    "Host": "evil.example",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Host": "evil.example",
}


def links_and_ids(root: ElementTree.Element) -> tuple[list[str], list[str]]:
    links = [link.get("href") for link in root.iter(f"{{{NS['atom']}}}link")]
    ids = [element.text for element in root.iter(f"{{{NS['atom']}}}id")]
    return links, ids


def test_without_a_public_url_links_are_relative_and_name_no_host(client):
    root = feed(client, {"q": "learning"}, **HOSTILE_HOST)
    links, ids = links_and_ids(root)
    assert links and all(link.startswith("/") and not link.startswith("//") for link in links)
    assert all(i.startswith("urn:searchsvc:") for i in ids)
    assert b"evil" not in ElementTree.tostring(root)
    assert links_and_ids(feed(client, {"q": "learning"})) == (links, ids)


def test_with_a_public_url_links_are_absolute_from_it_and_ids_stay_the_same(fixture_index, client):
    public = create_app(
        {"INDEX": fixture_index, "TESTING": True, "PUBLIC_URL": "https://search.example.org/s/"}
    ).test_client()
    root = feed(public, {"q": "learning", "per_page": 3}, **HOSTILE_HOST)
    links = {link.get("rel"): link.get("href") for link in root.iterfind("atom:link", NS)}
    assert links["self"] == "https://search.example.org/s/api/v1/search.atom?q=learning&per_page=3"
    assert links["alternate"] == "https://search.example.org/s/?q=learning"
    entry_links = [link.get("href") for link in root.iterfind("atom:entry/atom:link", NS)]
    assert entry_links == [
        f"https://search.example.org/s/records/{quote(record_id)}" for record_id in entry_ids(root)
    ]
    assert b"evil" not in ElementTree.tostring(root)
    # Ids do not depend on where the service is reached.
    relative = feed(client, {"q": "learning", "per_page": 3})
    assert links_and_ids(root)[1] == links_and_ids(relative)[1]


def test_an_odd_record_id_makes_a_valid_entry_id_and_link(tmp_path):
    odd = Record(id='notes/a b"c%?#é', title="An odd identifier", authors=("A",), year=2020)
    client = create_app({"INDEX": build_index(tmp_path, [odd]), "TESTING": True}).test_client()
    (entry,) = feed(client, {"q": "odd"}).iterfind("atom:entry", NS)
    entry_id = entry.findtext("atom:id", namespaces=NS)
    assert entry_id == "urn:searchsvc:record:" + quote(odd.id, safe="")
    assert all(c.isascii() and c not in ' "?#<>' for c in entry_id)
    href = entry.find("atom:link", NS).get("href")
    assert client.get(href).status_code == 200
