"""Reads besides search: a record by id, more like this, autocomplete, facet value search, the
author view, stats and export."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from searchsvc.backends.shared.expansion import MAX_EXPANSION
from searchsvc.backends.solr import analysis
from searchsvc.backends.solr.compile import escape, quoted
from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.backends.solr.documents import (
    STORED_FIELDS,
    from_document,
    lookup_parts,
    lookup_prefix,
)
from searchsvc.backends.solr.search import EXACT_FACETS, RECORDS_ONLY, SORTS, count_field, pairs
from searchsvc.backends.solr.terms import IndexStems, Vocabulary
from searchsvc.domain.errors import RecordNotFound
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import AuthorView, FacetValue, Hit, IndexStats, Suggestions
from searchsvc.domain.records import Record
from searchsvc.domain.texts import fold

SIMILAR_KEY_TERMS = 10  # key words drawn from a record to find similar ones
MAX_COAUTHORS = 50
EXPORT_PAGE = 1_000
_WORD = re.compile(r"\w+")


def get_document(connection: SolrConnection, record_id: str) -> dict[str, Any] | None:
    answer = connection.post(
        "select",
        [
            ("q", "{!term f=id v=$id}"),
            ("id", record_id),
            ("fq", RECORDS_ONLY),
            ("fl", STORED_FIELDS),
            ("rows", 1),
        ],
        form=True,
    )
    docs = answer["response"]["docs"]
    return docs[0] if docs else None


def get_record(connection: SolrConnection, record_id: str) -> Record:
    document = get_document(connection, record_id)
    if document is None:
        raise RecordNotFound(f"no record with id {record_id!r}", id=record_id)
    return from_document(document)


def similar(connection: SolrConnection, record_id: str, limit: int) -> tuple[Hit, ...]:
    get_record(connection, record_id)  # RecordNotFound before Solr's own MLT error
    answer = connection.post(
        "select",
        [
            (
                "q",
                f"{{!mlt qf=content mintf=1 mindf=1 maxqt={SIMILAR_KEY_TERMS} v=$id}}",
            ),
            ("id", record_id),
            ("fq", RECORDS_ONLY),
            ("fl", STORED_FIELDS + ",score"),
            # Ties in record order whatever the shards' addresses (see suggest).
            ("sort", SORTS["relevance"]),
            ("rows", limit),
        ],
        form=True,
    )
    return tuple(
        Hit(record=from_document(doc), score=float(doc["score"]))
        for doc in answer["response"]["docs"]
        if doc["id"] != record_id
    )


def suggest(
    connection: SolrConnection,
    vocabulary: Vocabulary,
    index_stems: IndexStems,
    prefix: str,
    limit: int,
) -> Suggestions:
    """Titles whose words start with the typed words, and author names with a word so."""
    words = _WORD.findall(fold(prefix))
    if not words:
        return Suggestions(prefix=prefix, titles=(), authors=())
    *complete, last = words
    clauses = [
        f"+title:{escape(stem)}"
        for word in complete
        for stem in index_stems.stems(analysis.words(word))
    ]
    # The last word is being typed: any title word starting with it, or with its stem.
    prefixed = set(vocabulary.prefixed("title", last))
    stem = index_stems.of([last])[last]
    if stem != last:
        prefixed.update(vocabulary.prefixed("title", stem))
    candidates = vocabulary.most_frequent("title", prefixed, MAX_EXPANSION, max_postings=None)
    titles: list[str] = []
    if candidates:
        clauses.append("+(" + " OR ".join(f"title:{c}" for c in sorted(candidates)) + ")")
        answer = connection.post(
            "select",
            [
                ("q", " ".join(clauses)),
                ("fq", RECORDS_ONLY),
                ("fl", STORED_FIELDS),
                # Equal scores in record order, as on Whoosh and in searches: without a sort,
                # Solr merges tied hits of different shards in an order that depends on the
                # shards' node addresses, so suggestions changed from one cluster to another.
                ("sort", SORTS["relevance"]),
                ("rows", limit * 2),
            ],
            form=True,
        )
        for document in answer["response"]["docs"]:
            title = from_document(document).title
            if title and title not in titles:
                titles.append(title)
            if len(titles) == limit:
                break
    authors = facet_values(connection, "author", prefix, limit)
    return Suggestions(prefix=prefix, titles=tuple(titles), authors=tuple(v.value for v in authors))


def facet_values(
    connection: SolrConnection, facet: str, prefix: str, limit: int
) -> tuple[FacetValue, ...]:
    """Values of a facet with a word starting with `prefix`, most records first (ties by value)."""
    wanted = fold(prefix.strip())
    if not wanted:
        return tuple(FacetValue(v, n) for v, n in _facet(connection, count_field(facet), limit))
    # A value may be listed once per word starting so: ask for more, then count each once.
    found = _facet(connection, "facet_lookup", limit * 8 + 20, lookup_prefix(facet, wanted))
    counts: dict[str, int] = {}
    for term, count in found:
        counts.setdefault(lookup_parts(term)[1], count)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]
    return tuple(FacetValue(value, count) for value, count in ranked)


def author_view(connection: SolrConnection, name: str, page: int, per_page: int) -> AuthorView:
    """The records attributed to `name` (matched case- and accent-insensitively), with their
    canonical categories counted (each record once per code, arXiv's aliases as one)."""
    exact = _author_named(connection, name.strip())
    if exact is None:
        raise RecordNotFound(f"no records attributed to {name!r}", author=name)
    categories = count_field("category")
    answer = connection.post(
        "select",
        [
            ("q", f"author:{quoted(exact)}"),
            ("fq", RECORDS_ONLY),
            ("fl", STORED_FIELDS),
            ("sort", SORTS["newest"]),
            ("start", (page - 1) * per_page),
            ("rows", per_page),
            ("facet", "true"),
            ("facet.mincount", 1),
            ("facet.field", "year"),
            ("facet.field", f"{{!key=category}}{categories}"),
            ("facet.field", "author"),
            ("f.year.facet.limit", -1),
            (f"f.{categories}.facet.limit", -1),
            ("f.author.facet.limit", MAX_COAUTHORS + 1),
            *EXACT_FACETS,
        ],
        form=True,
    )
    fields = answer["facet_counts"]["facet_fields"]
    years = sorted(pairs(fields["year"]), key=lambda item: int(item[0]), reverse=True)
    coauthors = [(v, n) for v, n in pairs(fields["author"]) if v != exact][:MAX_COAUTHORS]
    return AuthorView(
        name=exact,
        total=int(answer["response"]["numFound"]),
        page=page,
        per_page=per_page,
        records=tuple(from_document(doc) for doc in answer["response"]["docs"]),
        years=tuple(FacetValue(v, n) for v, n in years),
        categories=tuple(FacetValue(v, n) for v, n in pairs(fields["category"])),
        coauthors=tuple(FacetValue(v, n) for v, n in coauthors),
    )


def index_stats(
    connection: SolrConnection, top: int, meta: dict[str, Any], version: str, location: str
) -> IndexStats:
    """Document count, the `top` values of each facet with exact counts, cardinalities
    (subject facets: canonical codes, each record counted once per code, cross-lists too)."""
    params: list[tuple[str, Any]] = [
        ("q", "*:*"),
        ("fq", RECORDS_ONLY),
        ("rows", 0),
        ("facet", "true"),
        ("facet.mincount", 1),
        ("facet.limit", -1),
        ("facet.sort", "count"),
    ]
    params += [("facet.field", f"{{!key={facet}}}{count_field(facet)}") for facet in FACET_NAMES]
    answer = connection.post("select", params, form=True)
    fields = answer["facet_counts"]["facet_fields"]
    counted = {facet: pairs(fields.get(facet, [])) for facet in FACET_NAMES}
    built_at = meta.get("built_at")
    return IndexStats(
        documents=int(answer["response"]["numFound"]),
        facets={f: tuple(FacetValue(v, n) for v, n in counted[f][:top]) for f in FACET_NAMES},
        cardinalities={facet: len(counted[facet]) for facet in FACET_NAMES},
        built_at=datetime.fromisoformat(built_at) if built_at else None,
        version=version,
        index_dir=location,
        size_bytes=int(meta.get("size_bytes", 0)),
    )


def export(connection: SolrConnection, collection: str) -> Iterator[Record]:
    """Every record, by id, with Solr's cursor (stable under concurrent writes)."""
    cursor = "*"
    while True:
        answer = connection.post(
            "select",
            [
                ("q", "*:*"),
                ("fq", RECORDS_ONLY),
                ("fl", STORED_FIELDS),
                ("sort", "id asc"),
                ("rows", EXPORT_PAGE),
                ("cursorMark", cursor),
            ],
            form=True,
            collection=collection,
        )
        for document in answer["response"]["docs"]:
            yield from_document(document)
        following = answer.get("nextCursorMark", cursor)
        if following == cursor:
            return
        cursor = following


def _facet(
    connection: SolrConnection, field: str, limit: int, prefix: str | None = None
) -> list[tuple[str, int]]:
    params: list[tuple[str, Any]] = [
        ("q", "*:*"),
        ("fq", RECORDS_ONLY),
        ("rows", 0),
        ("facet", "true"),
        ("facet.field", field),
        ("facet.mincount", 1),
        ("facet.limit", limit),
        *EXACT_FACETS,
        ("facet.sort", "count"),
    ]
    if prefix is not None:
        params.append(("facet.prefix", prefix))
    answer = connection.post("select", params, form=True)
    return pairs(answer["facet_counts"]["facet_fields"].get(field, []))


def _author_named(connection: SolrConnection, name: str) -> str | None:
    """The indexed author value for a name: itself, or one equal when folded."""
    wanted = fold(name)
    if not wanted:
        return None
    found = _facet(connection, "facet_lookup", 50, lookup_prefix("author", wanted) + "\x1f")
    # A word start of another name may fold the same ("akella" of "Aditya Akella"): the
    # whole value must.
    values = [v for term, _ in found if fold(v := lookup_parts(term)[1]) == wanted]
    if name in values:
        return name
    return min(values) if values else None
