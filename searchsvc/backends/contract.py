"""The engine contract: what every search backend implements, read side and write side.

The service, the indexer, the CLI, the API and the web page speak to an engine only through
`SearchBackend`; tests/contract/ holds the one suite every registered engine passes. Reads take
domain requests and answer domain values (query.py); writes take Records. Every write is atomic:
readers see all of it or none of it, and a failed write leaves the index as it was.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from searchsvc.domain.errors import InvalidRequest, SearchsvcError
from searchsvc.domain.index_reports import CheckedPart, Damage, WriteResult
from searchsvc.domain.query import (
    AuthorView,
    FacetValue,
    Hit,
    IndexStats,
    SearchRequest,
    SearchResult,
    Suggestions,
    check_text,
)
from searchsvc.domain.records import Record

__all__ = [
    "CheckedPart",
    "Damage",
    "NoProgress",
    "Progress",
    "SearchBackend",
    "UniqueRecords",
    "WriteResult",
    "unique_by_id",
]


class Progress(Protocol):
    """Told how a long write goes: records handed to the engine, and the stage it is in."""

    def advance(self, count: int) -> None: ...

    def stage(self, name: str) -> None: ...


class NoProgress:
    """Progress that nobody watches."""

    def advance(self, count: int) -> None:
        pass

    def stage(self, name: str) -> None:
        pass


class UniqueRecords(Sequence[Record]):
    """Records whose ids are distinct already (the indexer's RecordSpill): a write takes them
    as they are, without holding them in memory to fold equal ids."""


class SearchBackend(abc.ABC):
    """A search engine holding one index: searched, browsed, rebuilt and updated by id.

    Opened from a location (backends.open_backend); opening does not need the index to exist
    yet: reads raise IndexUnavailable until it does, and writes create it.
    """

    location: str  # the location it was opened from, as a URL (`whoosh:///abs/path`)

    # -- read side ---------------------------------------------------------------------------
    @abc.abstractmethod
    def search(self, request: SearchRequest, vector: Any = None) -> SearchResult:
        """One page of ranked, filtered, faceted and highlighted hits, with exact counts.

        `vector` (a unit float32 numpy vector of the query, from searchsvc.embeddings, or a
        Future of it: `modes.resolved` waits for it) comes with requests whose mode is hybrid
        or semantic; domain/modes.py says what each mode returns.
        """

    def vector_model(self) -> str | None:
        """The fingerprint of the model the index's vectors were made with (the encoder's
        `fingerprint`); None when the index has no vectors (lexical search only)."""
        return None

    @abc.abstractmethod
    def get(self, record_id: str) -> Record:
        """The record with this id; raises RecordNotFound."""

    @abc.abstractmethod
    def similar(self, record_id: str, limit: int = 10) -> tuple[Hit, ...]:
        """Records like this one (more like this); raises RecordNotFound."""

    @abc.abstractmethod
    def suggest(self, prefix: str, limit: int = 10) -> Suggestions:
        """Autocomplete: titles and author names for what was typed so far."""

    @abc.abstractmethod
    def facet_values(self, facet: str, prefix: str = "", limit: int = 10) -> tuple[FacetValue, ...]:
        """A facet's values with a word starting with `prefix`, most records first."""

    @abc.abstractmethod
    def author(self, name: str, page: int = 1, per_page: int = 20) -> AuthorView:
        """An author's records, newest first, with counts per year and category, coauthors."""

    @abc.abstractmethod
    def stats(self, top: int = 10) -> IndexStats:
        """Record count, the `top` values of each facet, cardinalities, build time, version."""

    @abc.abstractmethod
    def version(self) -> str:
        """A token that changes whenever the index content changes (for ETags and caches)."""

    @abc.abstractmethod
    def records(self) -> Iterator[Record]:
        """Every record in the index (for export)."""

    def warning(self) -> str | None:
        """Why reads are answered from something other than the live index (a damaged live
        index, an earlier one served instead), in words without paths; None when all is well.
        Raises IndexUnavailable when nothing can be served."""
        return None

    def check(self) -> tuple[CheckedPart, ...]:
        """Verify the index (`searchsvc check`). An engine that keeps nothing searchsvc can
        verify is checked by asking it: does it answer a search."""
        probe = SearchRequest(per_page=1, facets=(), highlight=False)
        notes = ("this engine's files are its own: checked only that it answers a search",)
        try:
            total = self.search(probe).total
        except SearchsvcError as exc:
            damage = (Damage("", "unavailable", exc.message),)
            return (CheckedPart(self.location, "live", damage, notes),)
        return (CheckedPart(self.location, "live", (), (f"answers: {total:,} records", *notes)),)

    # -- write side --------------------------------------------------------------------------
    @abc.abstractmethod
    def check_writable(self) -> None:
        """Raise now (BuildInProgress, IndexUnavailable) if a write would fail to start: callers
        ask before reading their input, not after."""

    @abc.abstractmethod
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
        """Replace the whole index by `records` (ids unique), swapped in atomically when
        complete; `metadata` (sources, counts) is kept with it. The old index stays on error.

        With `vectors`, every record's embedding is computed (searchsvc.embeddings) and kept,
        and later writes embed the records they add: the index serves all three modes.
        `memory_budget` bounds, in bytes, what the build's processes on this machine hold at
        once (None: the engine's default); a larger corpus takes longer, not more memory."""

    @abc.abstractmethod
    def write(
        self,
        upserts: Sequence[Record] = (),
        deletes: Sequence[str] = (),
        *,
        metadata: Mapping[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> WriteResult:
        """Delete `deletes` by id, then add or replace `upserts` by id, in one atomic commit
        (the last of equal ids in `upserts` wins). Creates the index if there is none (without
        vectors). An index with vectors embeds the upserts before it commits them."""

    @abc.abstractmethod
    def refresh(self) -> None:
        """Make every committed write visible to this backend's reads now."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- conveniences over the contract ------------------------------------------------------
    def upsert(self, records: Iterable[Record]) -> WriteResult:
        """Add or replace records by id (the last of equal ids wins)."""
        return self.write(upserts=checked_records(records))

    def delete(self, record_ids: Iterable[str] | str) -> WriteResult:
        """Delete records by id (one id, or many); ids not indexed are ignored."""
        return self.write(deletes=checked_ids(record_ids))

    def __enter__(self) -> SearchBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def checked_records(records: Iterable[Record]) -> list[Record]:
    """The records as a list; InvalidRequest for anything that is not a Record."""
    if isinstance(records, Record) or not isinstance(records, Iterable):
        raise InvalidRequest("records must be a list of Record", parameter="records")
    listed = list(records)
    for position, record in enumerate(listed):
        if not isinstance(record, Record):
            raise InvalidRequest(
                f"record {position} is a {type(record).__name__}, not a Record",
                parameter="records",
            )
    return listed


def checked_ids(record_ids: Iterable[str] | str) -> tuple[str, ...]:
    """Distinct record ids, one id or many; InvalidRequest for one that is not a string."""
    if isinstance(record_ids, str):
        record_ids = (record_ids,)
    if not isinstance(record_ids, Iterable):
        raise InvalidRequest("ids must be a list of strings", parameter="ids")
    ids = tuple(dict.fromkeys(record_ids))
    for record_id in ids:
        check_text("id", record_id, empty=False)
    return ids


def unique_by_id(records: Iterable[Record]) -> Sequence[Record]:
    """Records with distinct ids, the last of equal ids kept, in first-seen order.

    `UniqueRecords` (a sealed RecordSpill) have distinct ids already, and are returned as they
    are: a list of them would hold in memory what a spill keeps on disk.
    """
    if isinstance(records, UniqueRecords):
        return records
    by_id: dict[str, Record] = {}
    for record in records:
        by_id[record.id] = record
    return list(by_id.values())
