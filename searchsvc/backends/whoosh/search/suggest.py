"""Did-you-mean corrections, autocomplete and facet value search."""

from __future__ import annotations

import itertools
import re

from whoosh import query

from searchsvc.backends.shared import spelling
from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.queries.compile import ParsedQuery
from searchsvc.backends.whoosh.queries.expansion import MAX_EXPANSION, most_frequent
from searchsvc.backends.whoosh.search.searcher import View
from searchsvc.domain.query import FacetValue, Suggestions
from searchsvc.domain.texts import fold

# The field whose unstemmed words (Whoosh "spelling" words) corrections are drawn from.
SPELLING_FIELD = "content"
# Fields that hold analysed title/abstract words: a word found in none of them may be a typo.
WORD_FIELDS = ("content", "title", "abstract")
NAME_FIELD = "author_names"
_WORD = re.compile(r"\w+")


def correct(view: View, word: str) -> str | None:
    """The correction of `word` among the indexed words near it (spelling.best_correction), or
    None."""
    reach = spelling.max_edits(word)
    if not reach:
        return None
    reader = view.searcher.reader()
    fieldobj = reader.schema[SPELLING_FIELD]
    lexicon = view.lexicon(fieldobj.spelling_fieldname(SPELLING_FIELD))

    def frequency(candidate: str) -> int:
        stems = list(fieldobj.process_text(candidate, mode="query"))
        return reader.doc_frequency(SPELLING_FIELD, stems[0]) if stems else 0

    near = lexicon.within(word, reach, scorer=spelling.edit_distance())
    return spelling.best_correction(word, {w: frequency(w) for w in near if w != word})


def did_you_mean(view: View, parsed: ParsedQuery) -> str | None:
    """The query with its words that found no records replaced by close indexed words, or
    None."""
    spans: dict[tuple[int, int], list[query.Term]] = {}
    for leaf in parsed.parsed.leaves():
        start, end = getattr(leaf, "startchar", None), getattr(leaf, "endchar", None)
        if type(leaf) is query.Term and start is not None and end is not None:
            spans.setdefault((start, end), []).append(leaf)
    reader = view.searcher.reader()
    # A stop word has no word-field term; a word found in any field it was searched in (a
    # name among them) found records, and is never changed.
    unknown = [
        span
        for span, terms in spans.items()
        if any(term.fieldname in WORD_FIELDS for term in terms)
        and not any(reader.doc_frequency(term.fieldname, term.text) for term in terms)
    ]
    return spelling.corrected_query(parsed.text, unknown, lambda word: correct(view, word))


def autocomplete(view: View, prefix: str, limit: int) -> Suggestions:
    """Titles whose words start with the typed words, and author names with a word so."""
    words = _WORD.findall(fold(prefix))
    titles: list[str] = []
    if words:
        titles = _titles_starting(view, words, limit)
    authors = view.facets.columns["author"]
    names = authors.by_popularity(authors.values_matching(prefix.strip()), limit) if words else ()
    return Suggestions(prefix=prefix, titles=tuple(titles), authors=tuple(v.value for v in names))


def facet_values(table: FacetTable, facet: str, prefix: str, limit: int) -> tuple[FacetValue, ...]:
    """Values of a facet with a word starting with `prefix`, most documents first."""
    column = table.column(facet)
    return column.by_popularity(column.values_matching(prefix.strip()), limit)


def _titles_starting(view: View, words: list[str], limit: int) -> list[str]:
    searcher = view.searcher
    reader = searcher.reader()
    lexicon = view.lexicon("title")
    field = reader.schema["title"]
    *complete, last = words
    parts: list[query.Query] = [
        query.Term("title", stem)
        for word in complete
        for stem in field.process_text(word, mode="query")
    ]
    # The last word is being typed: any title word starting with it, or with its stem.
    stems = list(field.process_text(last, mode="query", removestops=False))
    prefixed = itertools.chain(lexicon.prefixed(last), *(lexicon.prefixed(s) for s in stems[:1]))
    candidates = most_frequent(reader, "title", set(prefixed), MAX_EXPANSION)
    if not candidates:
        return []
    parts.append(query.Or([query.Term("title", text) for text in sorted(candidates)]))
    results = searcher.search(query.And(parts), limit=limit * 2)
    titles: list[str] = []
    for hit in results:
        title = hit.get("title") or ""
        if title and title not in titles:
            titles.append(title)
        if len(titles) == limit:
            break
    return titles
