"""Searches on a collection: one Solr request for the ranked page, the exact total and the
disjunctive facet counts (tagged filters, facets that exclude their own tag), then highlights
and did-you-mean computed as the Whoosh backend computes them."""

from __future__ import annotations

import time
from typing import Any

import orjson

from searchsvc.backends.shared import spelling
from searchsvc.backends.shared.highlighting import highlight_record
from searchsvc.backends.solr import analysis
from searchsvc.backends.solr.compile import (
    WORD_FIELDS,
    CompiledQuery,
    compile_query,
    quoted,
)
from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.backends.solr.documents import (
    COUNT_FIELDS,
    RECORD_KIND,
    STORED_FIELDS,
    SUBJECT_KEYS,
    from_document,
)
from searchsvc.backends.solr.terms import IndexStems, Vocabulary
from searchsvc.domain.facets import FACET_NAMES, facet_named
from searchsvc.domain.query import FacetValue, Hit, SearchRequest, SearchResult, with_selected
from searchsvc.domain.subjects import taxonomy
from searchsvc.domain.texts import fold

RECORDS_ONLY = f"kind:{RECORD_KIND}"
# The index field the other facets are filtered by (filters fold case and accents); they are
# counted on the field of their own name. Subject facets: see count_field and filter_query.
FILTER_FIELD = {"author": "author_key", "year": "year"}
# Year ties are broken by title, then by record order, as the Whoosh backend breaks them (its
# FacetTable.order): with `seq` alone a browse, a newest/oldest page and the author view listed
# equal years in another order than on Whoosh, so the same page of the same search held
# different records on the two engines.
SORTS = {
    "relevance": "score desc,seq asc",
    "newest": "year desc,title_sort asc,seq asc",
    "oldest": "year asc,title_sort asc,seq asc",
    "title": "title_sort asc,seq asc",
}
SPELLING_FIELD = "content_words"


def execute_search(
    connection: SolrConnection,
    vocabulary: Vocabulary,
    index_stems: IndexStems,
    request: SearchRequest,
) -> SearchResult:
    started = time.perf_counter()
    compiled = compile_query(request.tree, request.fields, vocabulary, index_stems)
    sort = request.effective_sort
    params: list[tuple[str, Any]] = [
        ("q", compiled.query),
        ("fq", RECORDS_ONLY),
        ("fl", STORED_FIELDS + ",score"),
        ("start", (request.page - 1) * request.per_page),
        ("rows", request.per_page),
        ("sort", SORTS["newest" if sort == "relevance" and compiled.match_all else sort]),
    ]
    params += filter_params(request)
    params += facet_params(request.facets, request.facet_size, request.primary_only)
    params += selected_count_params(request)
    checked = word_terms(compiled)
    if checked:
        params.append(("json.facet", word_count_facets(checked)))
    answer = connection.post("select", params, form=True)
    response = answer["response"]
    ranked = sort == "relevance" and not compiled.match_all
    matcher = analysis.highlight_matcher(compiled.highlight_terms) if request.highlight else None
    hits = tuple(
        Hit(
            record=(record := from_document(document)),
            score=float(document["score"]) if ranked else None,
            highlights=highlight_record(record, matcher) if matcher is not None else {},
        )
        for document in response["docs"]
    )
    facets = facet_counts(answer, request.facets, {f: request.selected(f) for f in FACET_NAMES})
    return SearchResult(
        request=request,
        total=int(response["numFound"]),
        hits=hits,
        facets=facets,
        took_ms=(time.perf_counter() - started) * 1000,
        suggestion=did_you_mean(vocabulary, index_stems, compiled, known_terms(answer, checked)),
    )


def filter_params(request: SearchRequest) -> list[tuple[str, str]]:
    """The year bounds, and one tagged filter per facet with a selection (OR within it)."""
    params = []
    if request.year_from is not None or request.year_to is not None:
        low = "*" if request.year_from is None else request.year_from
        high = "*" if request.year_to is None else request.year_to
        params.append(("fq", f"year:[{low} TO {high}]"))
    for facet in FACET_NAMES:
        selected = request.selected(facet)
        if selected:
            query = filter_query(facet, selected, request.primary_only)
            params.append(("fq", f"{{!tag={facet}}}{query}"))
    return params


def filter_query(facet: str, selected: tuple[str, ...], primary_only: bool) -> str:
    """The records with any of a facet's selected values. A subject facet's value may be a
    category, an archive or a group (`cs.DC`, `cs`, `grp_cs`), an alias standing for its
    canonical code: it is looked for among the folded keys of every level indexed for the
    records' categories (or their primary category's, with cross-lists excluded)."""
    if facet_named(facet).hierarchical:
        tax = taxonomy()
        values = " OR ".join(quoted(fold(tax.canonical(v))) for v in selected)
        return f"{SUBJECT_KEYS[primary_only]}:({values})"
    values = " OR ".join(quoted(value if facet == "year" else fold(value)) for value in selected)
    return f"{FILTER_FIELD[facet]}:({values})"


def count_field(facet: str, primary_only: bool = False) -> str:
    """The index field a facet is counted on: a subject facet's canonical values of every
    category of a record, or of its primary category only."""
    if facet_named(facet).hierarchical:
        return COUNT_FIELDS[primary_only][facet]
    return facet


# Each shard sends its top `limit * 1.5 + 300` values, not Solr's default `+ 10`: the merge
# misses a value that no shard ranks that high though its counts add up to a place in the top
# (measured on 40,717 records, 2 shards, author top 10: 19 of 200 searches differed from exact
# counting with the default, 1 with this, at the same latency; every shard sending every value
# made it 3-8 times slower). The counts of the values shown are exact (Solr refines them).
EXACT_FACETS = (("facet.overrequest.count", 300),)


def facet_params(
    facets: tuple[str, ...], size: int, primary_only: bool = False
) -> list[tuple[str, Any]]:
    if not facets:
        return []
    params: list[tuple[str, Any]] = [
        ("facet", "true"),
        ("facet.mincount", 1),
        ("facet.sort", "count"),
        *EXACT_FACETS,
    ]
    for facet in facets:
        field = count_field(facet, primary_only)
        # Keyed by the facet's name whatever the field, and without its own filter.
        params.append(("facet.field", f"{{!ex={facet} key={facet}}}{field}"))
        params.append((f"f.{field}.facet.limit", size))
    return params


def selected_count_params(request: SearchRequest) -> list[tuple[str, str]]:
    """A facet query per selected value of each facet counted: the records the value's filter
    selects, without the facet's own filter, as the facet's values are counted (a subject of
    any level counts the records under it). The top N may leave the value out, or hold none."""
    params = []
    for facet in request.facets:
        for n, value in enumerate(request.selected(facet)):
            query = filter_query(facet, (value,), request.primary_only)
            params.append(("facet.query", f"{{!ex={facet} key={selected_key(facet, n)}}}{query}"))
    return params


def selected_key(facet: str, n: int) -> str:
    """The key of the facet query counting the `n`th selected value of `facet`."""
    return f"selected.{facet}.{n}"


def facet_counts(
    answer: dict[str, Any], facets: tuple[str, ...], selected: dict[str, tuple[str, ...]]
) -> dict[str, tuple[FacetValue, ...]]:
    """Each facet's top values, then the selected values they leave out (query.with_selected)."""
    counts = answer.get("facet_counts", {})
    fields = counts.get("facet_fields", {})
    queries = counts.get("facet_queries", {})
    counted = {}
    for facet in facets:
        values = selected.get(facet, ())
        # Filters match case- and accent-insensitively: the flag follows the match.
        chosen = {fold(value) for value in values}
        top = tuple(
            FacetValue(value, count, fold(value) in chosen)
            for value, count in pairs(fields.get(facet, []))
        )
        # SolrCloud leaves a facet query that counted no record out of a distributed answer.
        selected_counts = {
            value: int(queries.get(selected_key(facet, n), 0)) for n, value in enumerate(values)
        }
        counted[facet] = with_selected(top, values, selected_counts.__getitem__)
    return counted


def pairs(flat: list[Any]) -> list[tuple[str, int]]:
    """Solr's flat [value, count, value, count, ...] as (value, count) pairs, ties by value."""
    found = [(str(flat[i]), int(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]
    return sorted(found, key=lambda item: (-item[1], item[0]))


def word_terms(compiled: CompiledQuery) -> list[tuple[str, str]]:
    """The (field, term) pairs of the query's plain title/abstract words: did-you-mean looks
    for close words only where none of a word's terms is indexed."""
    return sorted({pair for terms in _correctable(compiled).values() for pair in terms})


def word_count_facets(pairs_: list[tuple[str, str]], **more: dict[str, Any]) -> str:
    """JSON facets counting, over the whole index (not the matches), the documents holding
    each pair's term: asked in the search's own request, not in one more round trip. `more`:
    other JSON facets of the same request, by name."""
    facets = {
        f"w{n}": {"type": "query", "q": f"{{!term f={field}}}{term}", "domain": {"query": "*:*"}}
        for n, (field, term) in enumerate(pairs_)
    }
    facets.update(more)
    return orjson.dumps(facets).decode()


def known_terms(answer: dict[str, Any], pairs_: list[tuple[str, str]]) -> set[tuple[str, str]]:
    counts = answer.get("facets", {})
    return {
        pair
        for n, pair in enumerate(pairs_)
        if int((counts.get(f"w{n}") or {}).get("count", 0)) > 0
    }


def _correctable(compiled: CompiledQuery) -> dict[tuple[int, int], list[tuple[str, str]]]:
    return {
        span: terms
        for span, terms in compiled.words.items()
        if any(field in WORD_FIELDS for field, _ in terms)
    }


def did_you_mean(
    vocabulary: Vocabulary,
    index_stems: IndexStems,
    compiled: CompiledQuery,
    known: set[tuple[str, str]],
) -> str | None:
    """The query with its words that found no records replaced by close indexed words, or
    None; `known` holds the (field, term) pairs of its words found in some document."""
    unknown = [
        span
        for span, terms in _correctable(compiled).items()
        if not any(pair in known for pair in terms)
    ]
    return spelling.corrected_query(
        compiled.text, unknown, lambda word: correct(vocabulary, index_stems, word)
    )


def correct(vocabulary: Vocabulary, index_stems: IndexStems, word: str) -> str | None:
    """The correction of `word` among the indexed words near it (spelling.best_correction), or
    None."""
    reach = spelling.max_edits(word)
    if not reach:
        return None
    near = vocabulary.within(SPELLING_FIELD, word, reach, scorer=spelling.edit_distance())
    found = [w for w in near if w != word]
    if not found:
        return None
    # The candidates are words of the index (content_words): none is a stop word.
    stems = index_stems.of(found)
    counts = vocabulary.frequencies("content", set(stems.values()))
    return spelling.best_correction(word, {w: counts.get(stems[w], 0) for w in found})
