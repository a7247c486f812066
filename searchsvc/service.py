"""The in-process Python API: `SearchService.open("index").search("q", category=[...])`.

The same object serves HTTP requests (one per process, see extension.py), the web page, the CLI
and Python applications that embed the engine. Arguments are validated by the domain
(`SearchRequest`) and the backend, raising `InvalidRequest` like the HTTP API does. Nothing here
knows Flask or an engine: the engine is whatever the location names (backends.open_backend).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from searchsvc.backends import SearchBackend, open_backend
from searchsvc.domain.errors import ModelUnavailable, ModeUnavailable, SearchsvcError
from searchsvc.domain.facets import CROSSLISTS, FACET_NAMES
from searchsvc.domain.index_reports import CheckedPart, WriteResult
from searchsvc.domain.modes import meaning_text
from searchsvc.domain.query import (
    DEFAULT_FACET_SIZE,
    DEFAULT_PER_PAGE,
    SEARCH_FIELDS,
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
    check_int,
    check_text,
    labelled,
)
from searchsvc.domain.records import Record
from searchsvc.embeddings import shared_encoder
from searchsvc.tasks import TaskQueue, TaskWriter

DEFAULT_LIMIT = 10
DEFAULT_AUTHOR_PER_PAGE = 20
STATS_TOP = 10
MAX_STATS_TOP = 1_000


# A word no index holds, so that warm_up's search looks for a correction.
_UNKNOWN_WORD = "qzxjqvkw"


class SearchService:
    """Search, records, suggestions, facets and stats of one index, through a SearchBackend."""

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend
        self._stats: IndexStats | None = None

    @classmethod
    def open(cls, location: str | os.PathLike[str]) -> SearchService:
        """The index at `location` (a path, `whoosh:///abs/path`, `solr://host:port/solr/NAME`);
        reads raise IndexUnavailable while there is no index.

        Rebuilds and updates of the index are picked up by the backend without reopening.
        """
        return cls(open_backend(location))

    def search(
        self,
        q: str = "",
        *,
        year_from: int | None = None,
        year_to: int | None = None,
        sort: str | None = None,
        page: int = 1,
        per_page: int = DEFAULT_PER_PAGE,
        facets: Iterable[str] = FACET_NAMES,
        facet_size: int = DEFAULT_FACET_SIZE,
        highlight: bool = True,
        fields: Iterable[str] = SEARCH_FIELDS,
        crosslists: str = "include",
        mode: str | None = None,
        **filters: Iterable[str | int] | str | int,
    ) -> SearchResult:
        """One page of ranked, filtered, faceted and highlighted hits.

        Filters are keywords named after the facets: `author=[...]`, `category="cs.DC"`,
        `subject="cs"`, `year=2021` (OR within a facet, AND across facets). A subject filter
        takes a category, archive or group (`category="cs"` is every cs.* record);
        `crosslists="exclude"` keeps subject filters and counts to primary categories.
        Facet values carry `label` and `parent` (subjects named from arXiv's taxonomy).
        `mode` is lexical, hybrid or semantic (searchsvc.domain.modes); by default hybrid where the
        index has vectors, else lexical. `result.mode` says which one ranked the hits.
        """
        request = SearchRequest.from_params(
            q,
            **filters,
            year_from=year_from,
            year_to=year_to,
            sort=sort,
            page=page,
            per_page=per_page,
            facets=facets,
            facet_size=facet_size,
            highlight=highlight,
            fields=fields,
            crosslists=crosslists,
            mode=mode,
        )
        return self.search_request(request)

    def search_request(self, request: SearchRequest) -> SearchResult:
        """Run an already-built SearchRequest."""
        mode = self.mode_for(request)
        resolved = request.with_mode(mode)
        # Lexical requests reach the engine as before vectors existed (an engine of another
        # package may not take a vector).
        if mode == "lexical":
            result = self.backend.search(resolved)
        else:
            # Embedded beside the engine's matching of the words; the engine waits for it.
            text = meaning_text(request.tree)
            vector = shared_encoder(threads=1).embed_query_soon(text)
            result = self.backend.search(resolved, vector)
        facets = {name: labelled(name, values) for name, values in result.facets.items()}
        return replace(result, facets=facets)

    def mode_for(self, request: SearchRequest) -> str:
        """The mode a request runs in, decided here once for every engine: the one asked for,
        else hybrid where the index has vectors made by the installed model, else lexical.
        A query with nothing to mean (no text, `*`, only fields such as `category:cs.NI` or
        `year:2023`, or only NOT parts: modes.meaning_text) is lexical in every mode. Asking
        for hybrid or semantic where they cannot run is an error that says why; the default
        never fails for want of vectors or of the model."""
        if request.mode == "lexical" or not meaning_text(request.tree):
            return "lexical"
        if not self._meaning_available(request.mode):
            return "lexical"
        return request.mode or "hybrid"

    def _meaning_available(self, mode: str | None) -> bool:
        """Whether the index's vectors and the installed model can rank by meaning; where
        they cannot, False for the default mode (None), an error saying why for one asked."""
        model = self.backend.vector_model()
        if model is None:
            if mode is None:
                return False
            raise ModeUnavailable(
                f"mode={mode} needs an index with vectors, and this one has none "
                "(rebuild it with the embedding model installed: searchsvc index --vectors)",
                parameter="mode",
            )
        try:
            encoder = shared_encoder(threads=1)
        except ModelUnavailable:
            if mode is None:
                return False
            raise
        if encoder.fingerprint != model:
            if mode is None:
                return False
            raise ModelUnavailable(
                f"mode={mode}: the index's vectors were made by another model version "
                "than the one installed; rebuild the index"
            )
        return True

    def get(self, record_id: str) -> Record:
        """The record with this id; raises RecordNotFound."""
        return self.backend.get(check_text("id", record_id, empty=False))

    def similar(self, record_id: str, limit: int = DEFAULT_LIMIT) -> tuple[Hit, ...]:
        """Records like this one (more-like-this on its text); raises RecordNotFound."""
        return self.backend.similar(check_text("id", record_id, empty=False), limit)

    def suggest(self, prefix: str, limit: int = DEFAULT_LIMIT) -> Suggestions:
        """Autocomplete: titles and author names starting with `prefix`."""
        return self.backend.suggest(check_text("prefix", prefix), limit)

    def facet_values(
        self, facet: str, prefix: str = "", limit: int = DEFAULT_LIMIT
    ) -> tuple[FacetValue, ...]:
        """The most frequent values of a facet, optionally only those with a word starting with
        `prefix` (subjects by code or name: "distributed" finds cs.DC); UnknownFacet for a
        name that is not a facet."""
        values = self.backend.facet_values(facet, check_text("prefix", prefix), limit)
        return labelled(facet, values)

    def author(
        self, name: str, page: int = 1, per_page: int = DEFAULT_AUTHOR_PER_PAGE
    ) -> AuthorView:
        """An author's records (newest first, paged) with counts per year/category, coauthors."""
        view = self.backend.author(check_text("name", name, empty=False), page, per_page)
        return replace(view, categories=labelled("category", view.categories))

    def stats(self, top: int = STATS_TOP) -> IndexStats:
        """Document count, the `top` values of each facet, cardinalities and build time
        (computed once per index version for the default `top`)."""
        check_int("top", top, 1, MAX_STATS_TOP)
        if top != STATS_TOP:
            return self._labelled_stats(top)
        version = self.backend.version()
        stats = self._stats
        if stats is None or stats.version != version:
            stats = self._stats = self._labelled_stats(top)
        return stats

    def _labelled_stats(self, top: int) -> IndexStats:
        stats = self.backend.stats(top)
        facets = {name: labelled(name, values) for name, values in stats.facets.items()}
        return replace(stats, facets=facets)

    def warm_up(self) -> None:
        """Open the index and build its per-version caches now, not on the first request.

        A search builds the facet arrays and ranking caches, subject filters their columns; a
        word found nowhere loads the spelling words of did-you-mean. Autocomplete's author-name
        index is left to the first suggestion: it takes long on a large index, and gunicorn
        restarts a worker whose start-up (this) outlasts its timeout.
        """
        self.backend.search(SearchRequest(q="a", per_page=1))
        # Subject filters and counts, with and without cross-lists (their columns are derived
        # from the categories once per index version on the Whoosh engine).
        for crosslists in CROSSLISTS:
            self.backend.search(
                SearchRequest(per_page=1, crosslists=crosslists, filters={"subject": ("cs",)})
            )
        self.backend.search(SearchRequest(q=_UNKNOWN_WORD, per_page=1, facets=()))
        # The embedding model (loading it takes most of a second) and the index's vectors.
        request = SearchRequest(q="a", per_page=1)
        if self.mode_for(request) != "lexical":
            self.search_request(request)

    def version(self) -> str:
        """A token that changes whenever the index content changes."""
        return self.backend.version()

    @property
    def location(self) -> str:
        """The index's location, as a URL (`whoosh:///abs/path`, `solr://...`)."""
        return self.backend.location

    def warning(self) -> str | None:
        """What is served instead of the live index, and why (a damaged live generation, the
        previous one answering), or None when the live index answers."""
        return self.backend.warning()

    def check(self) -> tuple[CheckedPart, ...]:
        """Check every part of the index (the live one, the one kept to fall back on) and say
        what is damaged."""
        return self.backend.check()

    def has_vectors(self) -> bool:
        """Whether searches can rank by meaning here: the index has vectors, made by the
        installed model."""
        try:
            return self._meaning_available(None)
        except SearchsvcError:
            return False

    def task_writer(self, queue: TaskQueue, **options: Any) -> TaskWriter:
        """A writer applying `queue`'s tasks to this index (TaskWriter's options): writes it
        commits are visible to this service's searches at once."""
        return TaskWriter(queue, self.backend, **options)

    def records(self) -> Iterator[Record]:
        """Every record in the index."""
        return self.backend.records()

    def upsert(self, records: Iterable[Record]) -> WriteResult:
        """Add or replace records by id, visible to searches when this returns."""
        return self.backend.upsert(records)

    def delete(self, record_ids: Iterable[str] | str) -> WriteResult:
        """Delete records by id, one or many (ids not indexed are ignored), visible when this
        returns."""
        return self.backend.delete(record_ids)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> SearchService:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()
