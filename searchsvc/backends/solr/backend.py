"""SolrBackend: the engine contract over a SolrCloud collection (a `solr://` location)."""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson

from searchsvc.backends.contract import (
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
from searchsvc.backends.solr import browse
from searchsvc.backends.solr.admin import Collections
from searchsvc.backends.solr.compile import id_set
from searchsvc.backends.solr.connection import CollectionMissing, SolrConnection
from searchsvc.backends.solr.documents import (
    LAYOUT,
    META_ID,
    VECTOR_DIMENSIONS,
    to_document,
)
from searchsvc.backends.solr.location import SolrLocation, parse_location
from searchsvc.backends.solr.search import execute_search
from searchsvc.backends.solr.terms import IndexStems, Vocabulary
from searchsvc.backends.solr.vector_search import execute_vector_search, nearest_to_record
from searchsvc.domain.errors import IndexUnavailable, ModelUnavailable
from searchsvc.domain.facets import facet_named
from searchsvc.domain.modes import resolved
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

# Documents sent to Solr per update request.
BATCH_DOCUMENTS = 500
# Seconds an update request may take at least (whatever the location's read timeout).
WRITE_TIMEOUT = 60.0
# How long a version token is reused before Solr is asked again (as the Whoosh backend looks
# at its directory at most every half second).
VERSION_INTERVAL = 0.5
# Ids looked up per request to tell added from replaced records.
ID_LOOKUP_BATCH = 1_000


class SolrBackend(SearchBackend):
    """Search over a SolrCloud collection; safe to share between threads.

    Opening does not reach Solr: reads raise IndexUnavailable until the collection exists (and
    while no node answers), and the first write creates it with the shipped configset.
    """

    def __init__(self, location: SolrLocation) -> None:
        self.settings = location
        self.location = location.url
        self.connection = SolrConnection(location)
        self.vocabulary = Vocabulary(self.connection, self._index_state)
        self.index_stems = IndexStems(self.connection)
        self.collections = Collections(
            self.connection, location.collection, location.shards, location.replicas
        )
        self._version: tuple[float, str, dict[str, Any]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_location(cls, url: str) -> SolrBackend:
        return cls(parse_location(url))

    # -- read side ---------------------------------------------------------------------------
    def search(
        self, request: SearchRequest, vector: np.ndarray | Future[np.ndarray] | None = None
    ) -> SearchResult:
        # An older layout lacks fields the search asks for: say "rebuild", not "refused".
        self._check_layout(force=False)
        # The mode is the service's (SearchService.mode_for); without a vector a request is
        # lexical, as on Whoosh.
        if vector is None or request.mode in (None, "lexical"):
            return execute_search(self.connection, self.vocabulary, self.index_stems, request)
        return execute_vector_search(
            self.connection,
            self.vocabulary,
            self.index_stems,
            request,
            resolved(vector),
            request.mode,
        )

    def vector_model(self) -> str | None:
        # From the meta document, read again at most every VERSION_INTERVAL: cheap per search.
        return model_of(self._meta()[1])

    def get(self, record_id: str) -> Record:
        return browse.get_record(self.connection, record_id)

    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        limit = _check_limit(limit)
        if self.vector_model() is not None:
            nearest = nearest_to_record(self.connection, record_id, limit)
            if nearest is not None:
                return nearest
        return browse.similar(self.connection, record_id, limit)

    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        return browse.suggest(
            self.connection, self.vocabulary, self.index_stems, prefix, _check_limit(limit)
        )

    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        facet_named(facet)
        self._check_layout(force=False)
        return browse.facet_values(
            self.connection, facet, prefix, _check_limit(limit, MAX_FACET_SIZE)
        )

    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        SearchRequest(page=page, per_page=per_page)  # the request's checks of both
        self._check_layout(force=False)
        return browse.author_view(self.connection, name, page, per_page)

    def stats(self, top: int = 10) -> IndexStats:
        self._check_layout(force=True)
        version, meta = self._meta()
        stats = browse.index_stats(self.connection, top, meta, version, self.location)
        return dataclasses.replace(stats, size_bytes=self._size_bytes())

    def version(self) -> str:
        return self._meta()[0]

    def records(self) -> Iterator[Record]:
        # The collection itself, not the alias: an export runs on one state of the index even
        # if a rebuild swaps the alias meanwhile.
        target = self.collections.target()
        if target is None:
            raise CollectionMissing(f"there is no index at {self.location} yet", engine="solr")
        return browse.export(self.connection, target)

    # -- write side --------------------------------------------------------------------------
    def check_writable(self) -> None:
        # Asking the cluster for its collections fails now if no node answers.
        self.collections.collections()

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
        # `memory_budget` is the cluster's own business (its JVM heaps): this process holds
        # one batch of documents at a time whatever the corpus, and the records stay on disk.
        records = unique_by_id(records)
        progress = progress or NoProgress()
        embedded = None
        meta: dict[str, Any] = {}
        if vectors:
            # Before the collection is made: embedding is the slow part of a build.
            encoder = shared_encoder()
            if encoder.dimensions != VECTOR_DIMENSIONS:
                raise ModelUnavailable(
                    f"the Solr schema keeps vectors of {VECTOR_DIMENSIONS} dimensions, and the "
                    f"installed model makes {encoder.dimensions}"
                )
            embedded = embed_for_index(encoder, records, progress)
            meta[VECTORS_METADATA] = vectors_metadata(encoder)
        before = self.collections.target()
        if before == self.settings.collection:
            raise IndexUnavailable(
                f"{self.settings.collection} is a collection searchsvc did not create: a "
                "rebuild fills a new collection and points an alias of that name at it; "
                "delete the collection or choose another name",
                engine="solr",
            )
        fresh = self.collections.create_generation()
        try:
            self._send(fresh, records, (), progress, first_seq=0, vectors=embedded)
            progress.stage("commit")
            meta.update(
                {
                    "built_at": _now(),
                    "metadata": dict(metadata or {}),
                    "documents": len(records),
                    "layout": LAYOUT,
                }
            )
            self._commit(fresh, meta)
            self.collections.point_alias(fresh)
        except BaseException:
            self.collections.delete(fresh)
            raise
        self.collections.delete_older_than(fresh)
        self.refresh()
        return WriteResult(added=len(records), version=self.version(), writer=self._describe())

    def write(
        self,
        upserts: Sequence[Record] = (),
        deletes: Sequence[str] = (),
        *,
        metadata: Mapping[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> WriteResult:
        upserts = unique_by_id(upserts)
        target = self.collections.target()
        if target is None:
            # No index yet: the first write builds one (deleting from nothing deletes nothing).
            if not upserts:
                return WriteResult(version="")
            return self.rebuild(upserts, metadata=metadata, progress=progress)
        progress = progress or NoProgress()
        self._check_layout(force=True)
        # An index with vectors keeps one for every record: upserts get theirs, made by the
        # model of the others, before anything is sent.
        model = model_of(self._meta()[1])
        embedded = None
        if model is not None and upserts:
            embedded = embed_for_index(encoder_for(model), upserts, progress)
        upserted = {record.id for record in upserts}
        present = self._present(target, [*upserted, *deletes])
        replaced = len(upserted & present)
        deleted = len((set(deletes) - upserted) & present)
        # Written records come after every record written before (nanoseconds since the epoch).
        self._send(target, upserts, deletes, progress, first_seq=time.time_ns(), vectors=embedded)
        progress.stage("commit")
        _, meta = self._meta(force=True)
        meta["last_update"] = {
            **dict(metadata or {}),
            "added": len(upserts) - replaced,
            "replaced": replaced,
            "deleted": deleted,
        }
        self._commit(target, meta)
        self.refresh()
        return WriteResult(
            added=len(upserts) - replaced,
            replaced=replaced,
            deleted=deleted,
            version=self.version(),
            writer=self._describe(),
        )

    def refresh(self) -> None:
        with self._lock:
            self._version = None

    def close(self) -> None:
        self.connection.close()

    # -- helpers -----------------------------------------------------------------------------
    def _send(
        self,
        collection: str,
        upserts: Sequence[Record],
        deletes: Sequence[str],
        progress: Progress,
        first_seq: int,
        vectors: np.ndarray | None = None,
    ) -> None:
        """Deletes, then the records (with their int8 `vectors`, in their order, if given),
        uncommitted: nothing is visible before `_commit`."""
        for start in range(0, len(deletes), ID_LOOKUP_BATCH):
            self._update(collection, {"delete": list(deletes[start : start + ID_LOOKUP_BATCH])})
        for start in range(0, len(upserts), BATCH_DOCUMENTS):
            batch = upserts[start : start + BATCH_DOCUMENTS]
            documents = [
                to_document(
                    record,
                    first_seq + start + n,
                    None if vectors is None else vectors[start + n],
                )
                for n, record in enumerate(batch)
            ]
            self._update(collection, documents)
            progress.advance(len(batch))

    def _commit(self, collection: str, meta: dict[str, Any]) -> None:
        """The meta document with a new version token, and the commit that shows it all."""
        meta = {**meta, "version": secrets.token_hex(8)}
        document = {"id": META_ID, "kind": "meta", "meta": orjson.dumps(meta).decode()}
        self._update(collection, [document], commit=True)

    def _update(self, collection: str, body: Any, commit: bool = False) -> None:
        params: list[tuple[str, Any]] = []
        if commit:
            params += [("commit", "true"), ("waitSearcher", "true")]
        self.connection.request(
            "POST",
            "update",
            params,
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
            collection=collection,
            # Reads time out before gunicorn's worker does (location.DEFAULT_TIMEOUT); a batch
            # and its commit are not bound by a request, and may take longer on a busy cluster.
            timeout=max(self.settings.timeout, WRITE_TIMEOUT),
        )

    def _present(self, collection: str, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are indexed in `collection`."""
        found: set[str] = set()
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), ID_LOOKUP_BATCH):
            batch = unique[start : start + ID_LOOKUP_BATCH]
            query, id_params = id_set(batch, "looked_up")
            answer = self.connection.post(
                "select",
                [
                    ("q", query),
                    *id_params,
                    ("fq", "kind:record"),
                    ("fl", "id"),
                    ("rows", len(batch)),
                ],
                form=True,
                collection=collection,
            )
            found.update(doc["id"] for doc in answer["response"]["docs"])
        return found

    def _meta(self, force: bool = False) -> tuple[str, dict[str, Any]]:
        """The version token and metadata of the visible index (cached for half a second)."""
        now = time.monotonic()
        with self._lock:
            cached = self._version
        if cached is not None and not force and now - cached[0] < VERSION_INTERVAL:
            return cached[1], dict(cached[2])
        answer = self.connection.post(
            "select",
            [("q", "{!term f=id v=$id}"), ("id", META_ID), ("fl", "meta"), ("rows", 1)],
            form=True,
        )
        docs = answer["response"]["docs"]
        meta = orjson.loads(docs[0]["meta"]) if docs else {}
        version = str(meta.get("version", ""))
        with self._lock:
            self._version = (now, version, meta)
        return version, dict(meta)

    def _index_state(self) -> tuple[str, str]:
        """(when the visible index was built, its version): what the vocabulary's knowledge of
        the index's terms depends on."""
        version, meta = self._meta()
        return str(meta.get("built_at", "")), version

    def _check_layout(self, force: bool) -> None:
        """Refuse an index built with an older document layout (documents.LAYOUT): its schema
        lacks fields documents and searches now use, so Solr would refuse searches, and reject
        written records after the deletes went through. (A collection without searchsvc's meta
        document is used as before.) `force`: read the metadata now, not the cached one."""
        _, meta = self._meta(force=force)
        if meta and meta.get("layout", 1) != LAYOUT:
            raise IndexUnavailable(
                f"the index in the Solr collection {self.settings.collection!r} was built by "
                "another version of searchsvc "
                f"(document layout {meta.get('layout', 1)}, this one writes {LAYOUT}): "
                "rebuild it (searchsvc index) to search or write it",
                engine="solr",
            )

    def _size_bytes(self) -> int:
        """Bytes on disk of every replica of the collection, summed over the live nodes."""
        target = self.collections.target()
        total = 0
        for node in self.connection.live_nodes():
            try:
                answer = self.connection.request(
                    "GET", "/admin/cores", {"action": "STATUS"}, node=node
                )
            except IndexUnavailable:
                continue  # a node going down now: its cores are not counted
            for core in answer.get("status", {}).values():
                if core.get("cloud", {}).get("collection") == target:
                    total += int(core.get("index", {}).get("sizeInBytes", 0))
        return total

    def _describe(self) -> str:
        shape = f"{self.settings.shards} shards x {self.settings.replicas} replicas"
        return f"SolrCloud collection of {shape}"


def _check_limit(limit: int, maximum: int = MAX_PER_PAGE) -> int:
    return check_int("limit", limit, 1, maximum)


def _now() -> str:
    return datetime.now(UTC).isoformat()
