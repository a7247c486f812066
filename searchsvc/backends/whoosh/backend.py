"""WhooshBackend: the engine contract over an index directory of generations (see store.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, overload
from urllib.parse import quote

import numpy as np
from whoosh.index import LockError

from searchsvc.backends.contract import (
    CheckedPart,
    NoProgress,
    Progress,
    SearchBackend,
    WriteResult,
    unique_by_id,
)
from searchsvc.backends.shared.vectors import (
    VECTORS_METADATA,
    embed_for_index,
    encoder_for,
    model_of,
    vectors_metadata,
)
from searchsvc.backends.whoosh.build.writer import (
    add_records,
    apply_changes,
    choose_procs,
    describe_writer,
    segment_records,
)
from searchsvc.backends.whoosh.documents import from_stored
from searchsvc.backends.whoosh.location import whoosh_path
from searchsvc.backends.whoosh.search.authors import author_view
from searchsvc.backends.whoosh.search.execute import execute_search
from searchsvc.backends.whoosh.search.results import hits_for
from searchsvc.backends.whoosh.search.searcher import REFRESH_INTERVAL, SearcherManager
from searchsvc.backends.whoosh.search.stats import index_stats
from searchsvc.backends.whoosh.search.suggest import autocomplete, facet_values
from searchsvc.backends.whoosh.store import IndexDirectory
from searchsvc.domain.errors import BuildInProgress, RecordNotFound
from searchsvc.domain.facets import facet_named
from searchsvc.domain.query import (
    MAX_FACET_SIZE,
    MAX_PER_PAGE,
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
    check_int,
)
from searchsvc.domain.records import Record
from searchsvc.embeddings import shared_encoder
from searchsvc.embeddings.encoder import QUANTISATION_SCALE

# Key words drawn from a record to find similar ones ("more like this").
SIMILAR_KEY_TERMS = 10


class WhooshBackend(SearchBackend):
    """Search over the live generation of an index directory; safe to share between threads.

    Opening does not need an index to exist yet: reads raise IndexUnavailable until one does,
    and a rebuild or an update (by this process or another) becomes visible within a second.
    """

    def __init__(
        self, directory: IndexDirectory, refresh_interval: float = REFRESH_INTERVAL
    ) -> None:
        self.directory = directory
        self.location = "whoosh://" + quote(str(directory.root))
        self._searchers = SearcherManager(directory, refresh_interval)

    @classmethod
    def open(cls, index_dir: str | os.PathLike[str]) -> WhooshBackend:
        return cls(IndexDirectory(index_dir))

    @classmethod
    def from_location(cls, url: str) -> WhooshBackend:
        """The backend of a `whoosh:///abs/path` location."""
        return cls(IndexDirectory(whoosh_path(url)))

    # -- read side ---------------------------------------------------------------------------
    def search(
        self, request: SearchRequest, vector: np.ndarray | Future[np.ndarray] | None = None
    ) -> SearchResult:
        with self._searchers.view() as view:
            return execute_search(view, request, vector)

    def vector_model(self) -> str | None:
        with self._searchers.view() as view:
            return view.vector_model

    def get(self, record_id: str) -> Record:
        with self._searchers.view() as view:
            stored = view.searcher.document(id=record_id)
        if stored is None:
            raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
        return from_stored(stored)

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        limit = _check_limit(limit)
        with self._searchers.view() as view:
            searcher = view.searcher
            docnum = searcher.document_number(id=record_id)
            if docnum is None:
                raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
            record = from_stored(searcher.stored_fields(docnum))
            if view.vector_model is not None:
                table = view.vectors
                if table.present[docnum]:
                    return _nearest_to(view, docnum, table, limit)
            results = searcher.more_like(
                docnum,
                "content",
                text=f"{record.title}\n{record.abstract}",
                top=limit,
                numterms=SIMILAR_KEY_TERMS,
            )
            ranked = [(docnum, score) for score, docnum in results.top_n]
            return hits_for(searcher, ranked, terms=None)

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        limit = _check_limit(limit)
        with self._searchers.view() as view:
            return autocomplete(view, prefix, limit)

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        facet_named(facet)
        limit = _check_limit(limit, MAX_FACET_SIZE)
        with self._searchers.view() as view:
            return facet_values(view.facets, facet, prefix, limit)

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        # Reuse the request's validation of page and per_page.
        SearchRequest(page=page, per_page=per_page)
        with self._searchers.view() as view:
            return author_view(view.searcher, view.facets, name, page, per_page)

    def stats(self, top: int = 10) -> IndexStats:
        with self._searchers.view() as view:
            table = view.facets
            reader = view.searcher.reader()
            return index_stats(self.directory, view.snapshot.generation, reader, table, top)

    def version(self) -> str:
        return self._searchers.version()

    def warning(self) -> str | None:
        return self._searchers.warning()

    def check(self) -> tuple[CheckedPart, ...]:
        return self.directory.check()

    def records(self) -> Iterator[Record]:
        # The generation served (the previous one when the live one is damaged), with a
        # searcher of its own: an export may outlive many refreshes of the shared ones.
        with self._searchers.view() as view:
            generation = view.snapshot.generation
        return self.directory.records(generation)

    # -- write side --------------------------------------------------------------------------
    def check_writable(self) -> None:
        # Taking the lock for a moment fails a second writer at once (BuildInProgress), before
        # it reads any input. (No directory yet: nobody can hold its lock, and none is made
        # here, so a write that then fails on its input leaves no directory behind.)
        if self.directory.root.exists():
            with self.directory.lock():
                pass

    def rebuild(
        self,
        records: Sequence[Record],
        *,
        metadata: Mapping[str, Any] | None = None,
        procs: int | None = None,
        progress: Progress | None = None,
        vectors: bool = False,
        memory_budget: int | None = None,
    ) -> WriteResult:
        records = unique_by_id(records)
        progress = progress or NoProgress()
        procs = choose_procs(len(records), procs, memory_budget)
        segment_size = segment_records(procs, memory_budget)
        saved = {**(metadata or {}), "writer": describe_writer(procs), "documents": len(records)}
        embedded = None
        if vectors:
            encoder = shared_encoder()
            embedded = _column_values(embed_for_index(encoder, records, progress))
            saved[VECTORS_METADATA] = vectors_metadata(encoder)
        with self.directory.build(saved) as index:
            add_records(
                index,
                records,
                procs,
                progress.advance,
                lambda: progress.stage("commit"),
                embedded,
                segment_size,
            )
        self.refresh()
        return WriteResult(
            added=len(records), version=self.version(), writer=describe_writer(procs)
        )

    def write(
        self,
        upserts: Sequence[Record] = (),
        deletes: Sequence[str] = (),
        *,
        metadata: Mapping[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> WriteResult:
        upserts = unique_by_id(upserts)
        if not self.directory.exists():
            # No index yet: the first write builds one (deleting from nothing deletes nothing).
            if not upserts:
                return WriteResult(version="")
            return self.rebuild(upserts, metadata=metadata, progress=progress)
        progress = progress or NoProgress()
        try:
            return self._update(upserts, deletes, metadata, progress)
        except LockError as exc:
            # Whoosh's own lock inside a generation, held by a writer not yet collected.
            error = BuildInProgress("the index is locked by another writer")
            error.local_message = f"the index at {self.directory.root} is locked"
            raise error from exc

    def _update(
        self,
        upserts: Sequence[Record],
        deletes: Sequence[str],
        metadata: Mapping[str, Any] | None,
        progress: Progress,
    ) -> WriteResult:
        last_update = dict(metadata or {})
        # An index with vectors keeps one for every record: upserts get theirs before the
        # index is locked (embedding is the slow part of a write).
        model = model_of(self.directory.metadata())
        embedded = None
        if model is not None and upserts:
            embedded = _column_values(embed_for_index(encoder_for(model), upserts, progress))
        with self.directory.update({"last_update": last_update}) as index:
            with index.searcher() as searcher:
                present = {
                    record_id
                    for record_id in {*(r.id for r in upserts), *deletes}
                    if searcher.document_number(id=record_id) is not None
                }
            replaced = sum(1 for record in upserts if record.id in present)
            upserted = {record.id for record in upserts}
            deleted = sum(1 for record_id in set(deletes) - upserted if record_id in present)
            apply_changes(
                index,
                upserts,
                deletes,
                progress.advance,
                lambda: progress.stage("commit"),
                embedded,
            )
            last_update.update(
                {"added": len(upserts) - replaced, "replaced": replaced, "deleted": deleted}
            )
        self.refresh()
        return WriteResult(
            added=len(upserts) - replaced,
            replaced=replaced,
            deleted=deleted,
            version=self.version(),
            writer=describe_writer(1),
        )

    def refresh(self) -> None:
        self._searchers.refresh()

    def close(self) -> None:
        self._searchers.close()


def _column_values(vectors: np.ndarray) -> Sequence[bytes]:
    """int8 vectors as the index's `vector` column holds them (made row by row as they are
    written: the matrix may be a memory map, see backends.vectors.embed_for_index)."""
    return _RowBytes(vectors)


class _RowBytes(Sequence[bytes]):
    def __init__(self, matrix: np.ndarray) -> None:
        self._matrix = matrix

    def __len__(self) -> int:
        return len(self._matrix)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> _RowBytes: ...
    def __getitem__(self, index: int | slice) -> bytes | _RowBytes:
        if isinstance(index, slice):
            return _RowBytes(self._matrix[index])
        return self._matrix[index].tobytes()


def _nearest_to(view, docnum: int, table, limit: int) -> tuple[Hit, ...]:
    """The records whose vectors are nearest this one's (itself left out)."""
    allowed = view.facets.live.copy()
    allowed[docnum] = False
    own = table.vectors[docnum].astype(np.float32) / QUANTISATION_SCALE
    docnums, scores = table.nearest(own, allowed, limit)
    ranked = list(zip(docnums.tolist(), scores.tolist(), strict=True))
    return hits_for(view.searcher, ranked, terms=None)


def _check_limit(limit: int, maximum: int = MAX_PER_PAGE) -> int:
    return check_int("limit", limit, 1, maximum)
