"""Plain Whoosh: the stock way, as a reference for what searchsvc adds or saves.

Same analysis as searchsvc (its analyzers), so totals and facet counts must agree exactly; the
stock parts are the query (an OR of the query's terms over the searched fields, BM25F), the
facets (`groupedby` with `FieldFacet`, which scores and collects every match) and highlighting
(`Hit.highlights`). Multi-valued facets read a list column: a stock `KEYWORD(sortable=True)`
would rebuild doc->values from the whole term list on every search (seconds per query).
"""

from __future__ import annotations

from collections.abc import Sequence

from whoosh import columns, fields, highlight, index, scoring, sorting
from whoosh.query import NullQuery, Or, Term

from benchmarks.engines import Answer, Engine, Task, top_facet_values
from searchsvc.domain.records import Record

INDEX_VERSION = 1
TEXT_FIELDS = ("title", "abstract", "content", "author_names")
# The fields searchsvc searches by default (SearchRequest.fields: title, abstract, authors).
DEFAULT_FIELDS = ("title", "abstract", "author_names")


class ListKeyword(fields.KEYWORD):
    """A comma-separated KEYWORD whose column stores each document's list of values."""

    def __init__(self) -> None:
        super().__init__(commas=True, lowercase=False, scorable=False)
        self.set_sortable(columns.VarBytesListColumn())

    def to_column_value(self, value):
        values = value.split(",") if isinstance(value, str) else value
        return [v.encode("utf-8") for v in values if v]


def build_schema() -> fields.Schema:
    from searchsvc.backends.whoosh.schema import name_analyzer, text_analyzer

    text = text_analyzer()
    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        title=fields.TEXT(analyzer=text, stored=True),
        abstract=fields.TEXT(analyzer=text, stored=True),
        content=fields.TEXT(analyzer=text),
        author_names=fields.TEXT(analyzer=name_analyzer()),
        author=ListKeyword(),
        category=ListKeyword(),
        year=fields.NUMERIC(int, bits=32, stored=True, sortable=True),
    )


class PlainWhooshEngine(Engine):
    """Options: fields (searched, default title/abstract/author names), b, k1, boosts, weighting."""

    name = "plain_whoosh"
    description = "Whoosh 2.7.4, OR, BM25F, groupedby facets"

    @classmethod
    def index_version(cls, **options: object) -> str:
        # Only searchsvc's analysis shapes this index, not the rest of its schema.
        import hashlib
        import inspect

        from searchsvc.backends.whoosh import schema

        source = "".join(
            inspect.getsource(f)
            for f in (schema.snowball_english, schema.text_analyzer, schema.name_analyzer)
        )
        return f"v{INDEX_VERSION}-a{hashlib.sha1(source.encode()).hexdigest()[:10]}"

    def build(self, records: Sequence[Record]) -> None:
        ix = index.create_in(str(self.index_dir), build_schema())
        # Two processes, one segment each (merged segments would only add build time).
        writer = ix.writer(procs=2, multisegment=True, limitmb=256)
        for record in records:
            document = {
                "id": record.id,
                "title": record.title,
                "abstract": record.abstract,
                "content": f"{record.title}\n{record.abstract}",
                "author_names": "\n".join(record.authors),
                "author": ",".join(record.authors),
                "category": ",".join(record.categories),
            }
            if record.year is not None:
                document["year"] = record.year
            writer.add_document(**document)
        writer.commit()

    def open(self) -> None:
        self.index = index.open_dir(str(self.index_dir))
        self.schema = self.index.schema
        boosts = dict(self.options.get("boosts") or {})
        # `weighting`: a ready Whoosh WeightingModel (the exact-ranking oracle passes searchsvc's).
        weighting = self.options.get("weighting") or scoring.BM25F(
            B=float(self.options.get("b", 0.75)),
            K1=float(self.options.get("k1", 1.2)),
            **{f"{name}_B": value for name, value in (self.options.get("field_b") or {}).items()},
        )
        self.searcher = self.index.searcher(weighting=weighting)
        self.fields = tuple(self.options.get("fields") or DEFAULT_FIELDS)
        self.boosts = boosts
        self.formatter = highlight.HtmlFormatter(tagname="mark", between="…")

    def close(self) -> None:
        self.searcher.close()
        self.index.close()

    def parse(self, text: str):
        """OR of every analysed query term in every searched field (QueryParser with OrGroup,
        without its syntax, so any text is a valid query)."""
        terms = []
        for fieldname in self.fields:
            analyzer = self.schema[fieldname].analyzer
            boost = float(self.boosts.get(fieldname, 1.0))
            for token in analyzer(text):
                terms.append(Term(fieldname, token.text, boost=boost))
        return Or(terms) if terms else NullQuery

    def _facets(self, names: Sequence[str]) -> sorting.Facets:
        facets = sorting.Facets()
        for name in names:
            overlap = name != "year"
            facets.add_facet(
                name, sorting.FieldFacet(name, allow_overlap=overlap, maptype=sorting.Count)
            )
        return facets

    def search(self, task: Task) -> Answer:
        query = self.parse(task.query)
        groupedby = self._facets(task.facets) if task.facets else None
        results = self.searcher.search(query, limit=task.limit, groupedby=groupedby)
        hits = results[: task.limit]
        answer = Answer(ids=[hit["id"] for hit in hits])
        if task.facets:
            answer.total = len(results)
            for name in task.facets:
                counts = {_text(k): n for k, n in results.groups(name).items() if k is not None}
                answer.facets[name] = top_facet_values(counts, task.facet_size)
        if task.highlight:
            results.formatter = self.formatter
            answer.highlights = [
                {"title": hit.highlights("title"), "abstract": hit.highlights("abstract")}
                for hit in hits
            ]
        return answer

    def exact_counts(self, query: str) -> tuple[int, dict[str, dict[str, int]]]:
        results = self.searcher.search(
            self.parse(query), limit=1, groupedby=self._facets(("author", "year", "category"))
        )
        counts = {
            name: {_text(k): n for k, n in results.groups(name).items() if k is not None}
            for name in ("author", "year", "category")
        }
        return len(results), counts


def _text(key) -> str:
    return key.decode("utf-8") if isinstance(key, bytes) else str(key)
