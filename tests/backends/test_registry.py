"""Index locations (backends/__init__.py): paths and URLs, malformed and unknown ones refused with
a clear message, and register_backend opening a new engine everywhere a location is taken."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from searchsvc import backends
from searchsvc.app import create_app
from searchsvc.backends import (
    BACKENDS,
    SearchBackend,
    WriteResult,
    checked_location,
    location_url,
    open_backend,
    register_backend,
)
from searchsvc.backends.contract import NoProgress, unique_by_id
from searchsvc.backends.whoosh.location import whoosh_path
from searchsvc.config import load
from searchsvc.domain.errors import IndexUnavailable, InvalidLocation, RecordNotFound
from searchsvc.domain.facets import facet_named
from searchsvc.domain.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
)
from searchsvc.domain.querylang import Fuzzy, Phrase, Wildcard, Word
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from tests.support import FIXTURE_RECORDS, build_index

# -- locations ----------------------------------------------------------------------------------


def test_a_relative_path_is_the_whoosh_index_at_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert location_url("index") == f"whoosh://{tmp_path}/index"
    assert location_url("index").startswith("whoosh:///")
    assert checked_location("sub/index") == f"whoosh://{tmp_path}/sub/index"


def test_an_absolute_path_or_a_path_object_is_the_whoosh_index_there(tmp_path):
    assert location_url(str(tmp_path / "index")) == f"whoosh://{tmp_path}/index"
    assert location_url(tmp_path / "index") == f"whoosh://{tmp_path}/index"
    assert whoosh_path(location_url(tmp_path / "index")) == str(tmp_path / "index")


def test_a_whoosh_url_with_three_slashes_is_kept():
    assert location_url("whoosh:///srv/index") == "whoosh:///srv/index"
    assert checked_location("whoosh:///srv/index") == "whoosh:///srv/index"
    assert whoosh_path("whoosh:///srv/index") == "/srv/index"
    assert whoosh_path("whoosh:///srv/my%20index") == "/srv/my index"


def test_the_scheme_of_a_location_is_read_in_any_case():
    assert checked_location("WHOOSH:///srv/index") == "WHOOSH:///srv/index"


@pytest.mark.parametrize(
    "location", ["whoosh://host/x", "whoosh://", "whoosh:///srv/index?x=1", "whoosh:///a#b"]
)
def test_a_malformed_whoosh_url_is_refused_with_a_clear_message(location):
    message = "a Whoosh location is a path or whoosh:///ABSOLUTE/PATH (three slashes)"
    with pytest.raises(InvalidLocation, match=r"three slashes"):
        open_backend(location)
    with pytest.raises(InvalidLocation) as caught:
        SearchService.open(location)
    assert message in caught.value.message and location in caught.value.message
    assert caught.value.code == "invalid_location"


def test_a_whoosh_url_without_slashes_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidLocation, match="whoosh:"):
        open_backend("whoosh:relative")


def test_a_path_with_a_percent_sign_opens_that_very_directory(tmp_path):
    build_index(tmp_path / "a%20b", FIXTURE_RECORDS[:1])
    assert sorted(os.listdir(tmp_path)) == ["a%20b"]


def test_a_path_with_a_hash_or_question_mark_is_a_valid_location(tmp_path):
    for name in ("run#1", "what?", "a%20b"):
        with open_backend(tmp_path / name) as backend:
            # The URL is percent-encoded; its path is the directory as named.
            assert whoosh_path(backend.location) == str(tmp_path / name)


@pytest.mark.parametrize("location", ["foo://x", "http://localhost:9200/index", "memtest://x"])
def test_an_unknown_scheme_is_refused_naming_the_known_ones(location):
    with pytest.raises(InvalidLocation) as caught:
        checked_location(location)
    message = caught.value.message
    scheme = location.split("://")[0]
    assert f"unknown index location scheme {scheme}://" in message
    assert "known: solr://, whoosh://, or a path" in message
    with pytest.raises(InvalidLocation):
        open_backend(location)


@pytest.mark.parametrize("location", ["", "   ", "\t\n"])
def test_an_empty_location_is_refused(location):
    with pytest.raises(InvalidLocation, match="the index location is empty"):
        checked_location(location)


def test_the_app_refuses_an_unknown_scheme_at_start_up():
    with pytest.raises(InvalidLocation, match="unknown index location scheme foo://"):
        create_app({"INDEX": "foo://x", "TESTING": True})
    with pytest.raises(InvalidLocation):
        create_app({"INDEX_DIR": "foo://x", "TESTING": True})
    with pytest.raises(InvalidLocation):
        load(environ={"SEARCHSVC_INDEX": "foo://x"})


def test_the_index_setting_and_its_older_alias_become_locations(tmp_path):
    assert load({"INDEX": tmp_path})["INDEX"] == f"whoosh://{tmp_path}"
    assert load({"INDEX_DIR": tmp_path})["INDEX"] == f"whoosh://{tmp_path}"
    assert load(environ={"SEARCHSVC_INDEX_DIR": str(tmp_path)})["INDEX"] == f"whoosh://{tmp_path}"
    both = {"SEARCHSVC_INDEX": "whoosh:///new", "SEARCHSVC_INDEX_DIR": "/old"}
    assert load(environ=both)["INDEX"] == "whoosh:///new"


def test_the_app_refuses_a_malformed_whoosh_location_at_start_up():
    with pytest.raises(InvalidLocation):
        create_app({"INDEX": "whoosh://host/x", "TESTING": True})


def test_opening_does_not_need_the_index_yet(tmp_path):
    with SearchService.open(tmp_path / "none") as service, pytest.raises(IndexUnavailable):
        service.search()


# -- a new engine through register_backend -------------------------------------------------------

_STORES: dict[str, dict[str, Record]] = {}  # location -> records: what the memtest engine holds


class MemoryBackend(SearchBackend):
    """The contract, minimally, over a dict: words match titles and abstracts (any case)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.opened = True

    @property
    def _records(self) -> dict[str, Record]:
        if self.location not in _STORES:
            raise IndexUnavailable(f"no index at {self.location}")
        return _STORES[self.location]

    # -- read side
    def search(self, request: SearchRequest) -> SearchResult:
        words = [
            (leaf.text if isinstance(leaf, Word | Phrase | Fuzzy) else leaf.pattern).lower()
            for leaf in request.tree.positive_leaves()
            if isinstance(leaf, Word | Phrase | Fuzzy | Wildcard)
        ]
        matches = [
            record
            for record in self._records.values()
            if (not words or any(w in f"{record.title} {record.abstract}".lower() for w in words))
            and all(
                set(facet_named(name).values_of(record)) & set(map(str, values))
                for name, values in request.filters.items()
            )
        ]
        start = (request.page - 1) * request.per_page
        page = matches[start : start + request.per_page]
        facets = {name: self._counts(name, matches, request) for name in request.facets}
        hits = tuple(Hit(record) for record in page)
        return SearchResult(request, len(matches), hits, facets, took_ms=0.0)

    def _counts(self, name: str, records, request: SearchRequest) -> tuple[FacetValue, ...]:
        counts = Counter(v for record in records for v in facet_named(name).values_of(record))
        chosen = request.selected(name)
        return tuple(FacetValue(v, n, v in chosen) for v, n in counts.most_common())

    def get(self, record_id: str) -> Record:
        try:
            return self._records[record_id]
        except KeyError:
            raise RecordNotFound(f"no record with id {record_id!r}", id=record_id) from None

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        self.get(record_id)
        return ()

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        titles = [r.title for r in self._records.values() if r.title.lower().startswith(prefix)]
        return Suggestions(prefix, tuple(titles[:limit]), ())

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        counts = Counter(v for r in self._records.values() for v in facet_named(facet).values_of(r))
        return tuple(
            FacetValue(v, n) for v, n in counts.most_common() if v.lower().startswith(prefix)
        )[:limit]

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        records = tuple(r for r in self._records.values() if name in r.authors)
        if not records:
            raise RecordNotFound(f"no records by {name!r}", name=name)
        return AuthorView(name, len(records), page, per_page, records, (), (), ())

    def stats(self, top: int = 10) -> IndexStats:
        return IndexStats(len(self._records), {}, {}, None, self.version())

    def version(self) -> str:
        return str(hash(tuple(sorted(self._records))))

    def records(self) -> Iterator[Record]:
        return iter(list(self._records.values()))

    # -- write side
    def check_writable(self) -> None:
        pass

    def rebuild(
        self,
        records: Sequence[Record],
        *,
        metadata: Mapping[str, Any] | None = None,
        procs: int | None = None,
        progress=None,
    ) -> WriteResult:
        _STORES[self.location] = {record.id: record for record in records}
        (progress or NoProgress()).advance(len(records))
        return WriteResult(added=len(records), version=self.version())

    def write(
        self,
        upserts: Sequence[Record] = (),
        deletes: Sequence[str] = (),
        *,
        metadata: Mapping[str, Any] | None = None,
        progress=None,
    ) -> WriteResult:
        store = _STORES.setdefault(self.location, {})
        deleted = sum(store.pop(record_id, None) is not None for record_id in deletes)
        replaced = sum(record.id in store for record in upserts)
        store.update({record.id: record for record in unique_by_id(upserts)})
        return WriteResult(len(upserts) - replaced, replaced, deleted, self.version())

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        self.opened = False


def open_memory(location: str) -> MemoryBackend:
    """The memtest engine's factory, also reachable as
    "tests.backends.test_registry:open_memory"."""
    return MemoryBackend(location)


@pytest.fixture
def memtest():
    """The memtest:// scheme registered for one test, BACKENDS restored afterwards."""
    saved = dict(BACKENDS)
    register_backend("memtest", open_memory)
    _STORES.clear()
    yield "memtest://x"
    _STORES.clear()
    BACKENDS.clear()
    BACKENDS.update(saved)


def test_a_registered_scheme_opens_its_backend(memtest):
    assert checked_location(memtest) == memtest
    backend = open_backend(memtest)
    assert isinstance(backend, MemoryBackend) and backend.location == memtest
    with pytest.raises(InvalidLocation) as caught:
        checked_location("foo://x")
    assert "known: memtest://, solr://, whoosh://, or a path" in caught.value.message


def test_a_scheme_is_registered_in_lower_case(memtest):
    register_backend("MemUpper", open_memory)
    assert isinstance(open_backend("memupper://y"), MemoryBackend)
    assert isinstance(open_backend("MEMUPPER://y"), MemoryBackend)


def test_a_backend_may_be_registered_by_its_import_path(memtest):
    register_backend("memlazy", "tests.backends.test_registry:open_memory")
    assert isinstance(open_backend("memlazy://y"), MemoryBackend)
    register_backend("memlazy2", "tests.backends.test_registry:MemoryBackend")
    assert isinstance(open_backend("memlazy2://y"), MemoryBackend)


def test_the_service_searches_a_registered_backend(memtest):
    build_index(memtest, FIXTURE_RECORDS)
    with SearchService.open(memtest) as service:
        assert isinstance(service.backend, MemoryBackend)
        result = service.search("caches", category="cs.LG")
        assert [hit.record.id for hit in result.hits] == ["2201.00002"]
        assert service.search(author="Aditya Akella").total == 2
        assert service.get("0704.0001") == FIXTURE_RECORDS[3]
        assert service.stats().documents == len(FIXTURE_RECORDS)
        service.delete(["0704.0001"])
        assert service.search().total == len(FIXTURE_RECORDS) - 1
    assert service.backend.opened is False


def test_the_app_serves_a_registered_backend(memtest):
    build_index(memtest, FIXTURE_RECORDS)
    app = create_app({"INDEX": memtest, "TESTING": True})
    assert app.config["INDEX"] == memtest
    client = app.test_client()
    response = client.get("/api/v1/search", query_string={"q": "congestion"})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert [hit["id"] for hit in body["hits"]] == ["2101.00003"]
    assert body["query"]["q"] == "congestion"
    assert client.get("/api/v1/records/0704.0001").get_json()["id"] == "0704.0001"
    page = client.get("/?q=congestion")
    assert page.status_code == 200
    assert "Congestion Control in Datacenter Networks" in page.get_data(as_text=True)


def test_a_registered_backend_without_an_index_is_unavailable(memtest):
    client = create_app({"INDEX": memtest, "TESTING": True}).test_client()
    response = client.get("/api/v1/search")
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "index_unavailable"


def test_backends_are_restored_after_a_registration(memtest):
    assert set(BACKENDS) == {"whoosh", "solr", "memtest"}
    assert backends.BACKENDS is BACKENDS
