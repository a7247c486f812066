"""A search as an Atom 1.0 feed (RFC 4287): `/api/v1/search.atom`, to follow new records on a topic.

The XML is built with the standard library's ElementTree, which escapes every text and attribute;
the total and the paging are said with OpenSearch 1.1's response elements, as arXiv's own Atom API
does.

Links start with the configured PUBLIC_URL, or are relative (RFC 4287 resolves them against the
feed's own URL): never made from the request's Host header or forwarded scheme, which the
client chooses, so that a cache or a feed aggregator cannot be handed links to another site.
Ids are URNs of the search and of each record's id, the same wherever the feed is fetched from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode
from xml.etree import ElementTree

from flask import Response, current_app, request, url_for

from searchsvc import __version__
from searchsvc.domain.facets import FACETS
from searchsvc.domain.query import SearchRequest, SearchResult, query_params
from searchsvc.domain.records import Record

MEDIA_TYPE = "application/atom+xml"
ATOM_NAMESPACE = "http://www.w3.org/2005/Atom"
OPENSEARCH_NAMESPACE = "http://a9.com/-/spec/opensearch/1.1/"
TITLE_PREFIX = "searchsvc: "
# Atom ids must be absolute IRIs that never change: URNs of what they name, not of where.
FEED_URN = "urn:searchsvc:feed:"
RECORD_URN = "urn:searchsvc:record:"
# The feed's own parameters, and those it takes no notice of, stay out of its canonical URL.
NOT_IN_FEED_URL = ("sort", "facets", "facet_size", "highlight")
# What the web page's URL leaves to the page itself.
NOT_IN_PAGE_URL = ("sort", "page", "per_page", "facets", "facet_size", "highlight")
# Characters XML 1.0 cannot carry at all, even escaped (C0 controls but tab and newlines,
# surrogates, U+FFFE/U+FFFF): a record or a query holding one would make the feed unreadable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def feed_response(result: SearchResult, asked: SearchRequest | None = None) -> Response:
    """The Atom feed of a search's result, as the response of the current request; its links
    repeat the search as `asked` (the result's request has the mode the service chose)."""
    search = asked or result.request
    links = FeedLinks(
        self_url=_with_query(_url("api.search_feed"), search, NOT_IN_FEED_URL),
        page_url=_page_url(search),
        record_url=_record_url,
        feed_id=FEED_URN + (urlencode(query_params(search, omit=NOT_IN_FEED_URL)) or "all"),
    )
    body = atom_feed(result, links, updated=datetime.now(UTC))
    return Response(body, content_type=f"{MEDIA_TYPE}; charset=utf-8")


@dataclass(frozen=True, slots=True)
class FeedLinks:
    """The URLs a feed names (itself, the same search's web page, each record's page) and its
    id."""

    self_url: str
    page_url: str | None
    record_url: Callable[[Record], str]
    feed_id: str


def atom_feed(result: SearchResult, links: FeedLinks, *, updated: datetime) -> bytes:
    """The feed document, UTF-8 with an XML declaration: one entry per hit, in the hits' order.

    The feed's id names its canonical search, and `updated` is the time it was made: no engine says
    when its index last changed (a build's time misses later updates), and the ETag, keyed to
    the index version, already spares readers an unchanged feed.
    """
    # Namespaces declared by hand: feed readers expect Atom as the default namespace (no prefix),
    # and ElementTree's `default_namespace` refuses the unprefixed attributes Atom uses.
    feed = ElementTree.Element(
        "feed", {"xmlns": ATOM_NAMESPACE, "xmlns:opensearch": OPENSEARCH_NAMESPACE}
    )
    _text(feed, "id", links.feed_id)
    _text(feed, "title", feed_title(result.request))
    _text(feed, "updated", _timestamp(updated))
    _link(feed, "self", MEDIA_TYPE, links.self_url)
    if links.page_url:
        _link(feed, "alternate", "text/html", links.page_url)
    # An entry without authors takes the feed's: the service that made the list.
    _text(ElementTree.SubElement(feed, "author"), "name", "searchsvc")
    _text(feed, "generator", "searchsvc", version=__version__)
    _text(feed, "opensearch:totalResults", str(result.total))
    _text(feed, "opensearch:startIndex", str((result.page - 1) * result.per_page + 1))
    _text(feed, "opensearch:itemsPerPage", str(result.per_page))
    for hit in result.hits:
        _entry(feed, hit.record, links.record_url(hit.record), updated)
    return ElementTree.tostring(feed, encoding="utf-8", xml_declaration=True)


def feed_title(request: SearchRequest) -> str:
    """`searchsvc: <q>`, then the filters: `searchsvc: scheduling; category cs.DC or cs.NI`."""
    parts = [request.q.strip() or "all records"]
    for facet in FACETS:
        values = request.selected(facet.name)
        if values:
            parts.append(f"{facet.label.lower()} {' or '.join(values)}")
    if request.primary_only:
        parts.append("primary categories only")
    if request.year_from is not None or request.year_to is not None:
        low = request.year_from if request.year_from is not None else ""
        high = request.year_to if request.year_to is not None else ""
        parts.append(f"years {low}–{high}")
    return TITLE_PREFIX + "; ".join(parts)


def _entry(feed: ElementTree.Element, record: Record, url: str, feed_updated: datetime) -> None:
    entry = ElementTree.SubElement(feed, "entry")
    # The record's id, every character outside URI's unreserved ones percent-encoded: stable
    # across rebuilds and hosts, as the record's id is.
    _text(entry, "id", RECORD_URN + quote(record.id, safe=""))
    _text(entry, "title", record.title)
    # Records carry a year only. January 1st of it is never later than the real date, so no
    # entry claims to be newer than it is (nor a date in the future), and it is the same on
    # every request, so readers never see an entry as changed. A record without a year gets the
    # feed's time, the only one there is.
    if record.year is not None:
        date = f"{record.year:04d}-01-01T00:00:00Z"
        _text(entry, "updated", date)
        _text(entry, "published", date)
    else:
        _text(entry, "updated", _timestamp(feed_updated))
    _link(entry, "alternate", "text/html", url)
    for name in record.authors:
        _text(ElementTree.SubElement(entry, "author"), "name", name)
    if record.abstract:
        _text(entry, "summary", record.abstract, type="text")
    for category in record.categories:
        ElementTree.SubElement(entry, "category", term=_xml_safe(category))


def _text(parent: ElementTree.Element, tag: str, text: str, **attributes: str) -> None:
    ElementTree.SubElement(parent, tag, attributes).text = _xml_safe(text)


def _link(parent: ElementTree.Element, rel: str, media_type: str, href: str) -> None:
    ElementTree.SubElement(parent, "link", rel=rel, type=media_type, href=href)


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("", text)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with_query(base: str, search: SearchRequest, omit: Iterable[str]) -> str:
    query = urlencode(query_params(search, omit=tuple(omit)))
    return f"{base}?{query}" if query else base


def _page_url(search: SearchRequest) -> str | None:
    """The web page's URL of the same search; None when the app serves no web page."""
    if "web.search" not in current_app.view_functions:
        return None
    return _with_query(_url("web.search"), search, NOT_IN_PAGE_URL)


def _record_url(record: Record) -> str:
    # The record's web page, or its JSON where the app serves no web page.
    endpoint = "web.record" if "web.record" in current_app.view_functions else "api.record"
    return _url(endpoint, record_id=record.id)


def _url(endpoint: str, **values: Any) -> str:
    """PUBLIC_URL and the endpoint's path, or the path alone (relative to the feed's host)."""
    path = url_for(endpoint, **values)
    public = current_app.config["PUBLIC_URL"]
    # PUBLIC_URL holds any prefix the service is served under: the WSGI one is not repeated.
    return public + path.removeprefix(request.script_root) if public else path
