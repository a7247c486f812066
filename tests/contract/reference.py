"""A plain-Python model of what the contract answers, to hold an engine's answers against.

Filters, year bounds and disjunctive facet counts are computed here record by record from the
records themselves; which records a query matches is given by the caller (the query model of
test_generated.py, or an engine's own unfiltered matches where only the counting is checked).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable

import numpy as np

from searchsvc.domain.modes import MEANING_FLOOR
from searchsvc.domain.query import SearchRequest, SearchResult
from searchsvc.domain.records import Record
from searchsvc.domain.subjects import taxonomy
from searchsvc.embeddings import quantise, shared_encoder
from searchsvc.embeddings.encoder import QUANTISATION_SCALE

SUBJECT_FACETS = ("category", "subject")
# modes.MEANING_FLOOR as a dot product of int8 vectors (cosine = dot / 127^2).
FLOOR_DOT = MEANING_FLOOR * QUANTISATION_SCALE**2


def facet_values(record: Record, facet: str, primary_only: bool = False) -> tuple[str, ...]:
    """A record's values of a facet, as strings (the form facet values take): subjects as
    canonical codes, each once (only the primary category's with `primary_only`)."""
    tax = taxonomy()
    categories = record.categories[:1] if primary_only else record.categories
    if facet == "author":
        return record.authors
    if facet == "category":
        return tuple(dict.fromkeys(tax.canonical(code) for code in categories))
    if facet == "subject":
        return tuple(dict.fromkeys(a for code in categories for a in tax.archives_of(code)))
    if facet == "year":
        return () if record.year is None else (str(record.year),)
    raise AssertionError(f"no facet {facet!r} in the model")


def filter_keys(record: Record, facet: str, primary_only: bool = False) -> set[str]:
    """What a facet's selected values are matched against: a subject facet's value may name
    the category, its archive or its group."""
    if facet not in SUBJECT_FACETS:
        return set(facet_values(record, facet))
    categories = record.categories[:1] if primary_only else record.categories
    return {key for code in categories for key in taxonomy().keys_of(code)}


def in_year_bounds(record: Record, request: SearchRequest) -> bool:
    """year_from/year_to: a record without a year is outside any bound."""
    if request.year_from is None and request.year_to is None:
        return True
    if record.year is None:
        return False
    low = request.year_from if request.year_from is not None else record.year
    high = request.year_to if request.year_to is not None else record.year
    return low <= record.year <= high


def passes_filters(record: Record, request: SearchRequest, skip: str | None = None) -> bool:
    """OR within a facet, AND across facets; `skip` leaves one facet's selection out.

    Selected values are compared exactly: the models' callers select values as indexed.
    """
    for facet in ("author", "category", "subject", "year"):
        selected = request.selected(facet)
        keys = filter_keys(record, facet, request.primary_only)
        if facet != skip and selected and not keys & set(selected):
            return False
    return True


def expected_total(records: Iterable[Record], request: SearchRequest) -> int:
    """How many of the query's matches (`records`) the year bounds and filters keep."""
    return sum(
        1
        for record in records
        if in_year_bounds(record, request) and passes_filters(record, request)
    )


def expected_ids(records: Iterable[Record], request: SearchRequest) -> set[str]:
    return {
        record.id
        for record in records
        if in_year_bounds(record, request) and passes_filters(record, request)
    }


def expected_facets(
    records: Collection[Record], request: SearchRequest
) -> dict[str, list[tuple[str, int, bool]]]:
    """Disjunctive counts of the query's matches (`records`): each facet counted with the year
    bounds and the *other* facets' filters, the `facet_size` most frequent values (ties by
    value), each marked selected when the request selects it; then the selected values the top
    values leave out, each with the records its filter selects there, most first."""
    facets = {}
    for facet in request.facets:
        counted = [
            record
            for record in records
            if in_year_bounds(record, request) and passes_filters(record, request, skip=facet)
        ]
        counter = Counter(
            value
            for record in counted
            for value in facet_values(record, facet, request.primary_only)
        )
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))
        selected = request.selected(facet)
        top = [(value, count, value in selected) for value, count in ranked[: request.facet_size]]
        listed = {value for value, _, _ in top}
        left_out = [
            (
                value,
                sum(value in filter_keys(r, facet, request.primary_only) for r in counted),
                True,
            )
            for value in selected
            if value not in listed
        ]
        facets[facet] = top + sorted(left_out, key=lambda item: (-item[1], item[0]))
    return facets


def answered_facets(result: SearchResult) -> dict[str, list[tuple[str, int, bool]]]:
    """An engine's facet counts in the model's form."""
    return {
        facet: [(value.value, value.count, value.selected) for value in values]
        for facet, values in result.facets.items()
    }


def hit_ids(result: SearchResult) -> list[str]:
    return [hit.record.id for hit in result.hits]


def counts(result: SearchResult, facet: str) -> dict[str, int]:
    return {value.value: value.count for value in result.facets[facet]}


def check_subject_counts(backend, records: Collection[Record], crosslists: str) -> Counter[str]:
    """Assert that the subject facet counts every archive as the records' categories give, and
    that each archive, as a `subject` and as a `category` filter, selects that many records.
    Returns the expected counts."""
    primary = crosslists == "exclude"
    expected = Counter(s for r in records for s in facet_values(r, "subject", primary))
    request = SearchRequest(facet_size=100, per_page=1, crosslists=crosslists)
    answered = backend.search(request).facets["subject"]
    assert {value.value: value.count for value in answered} == dict(expected)
    for archive, count in expected.items():
        for facet in ("subject", "category"):
            selection = SearchRequest.from_params(
                per_page=1, facets=(), crosslists=crosslists, **{facet: archive}
            )
            assert backend.search(selection).total == count, (facet, archive)
    return expected


def query_dots(
    records: Iterable[Record], vectors: dict[str, np.ndarray], text: str
) -> dict[str, int]:
    """Each record's int8 dot product with the vector of `text` (the model's cosines, times
    127^2); `vectors` holds the records' int8 vectors, made by the encoder directly."""
    query = quantise(shared_encoder().embed_query(text)).astype(np.int32)
    return {r.id: int(vectors[r.id].astype(np.int32) @ query) for r in records}
