"""Tantivy (Rust, pip package `tantivy`; a benchmark-only dependency): OR, BM25, aggregations.

Facet counts come from terms aggregations over raw fast fields. Tantivy's terms aggregation is
approximate across segments (per-segment top lists), so `segment_size` is set above any
cardinality: the counts are then exact (checked against FTS5/plain Whoosh by search_speed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from benchmarks.engines import Answer, Engine, EngineUnavailable, Task
from searchsvc.domain.records import Record

INDEX_VERSION = 1
SEARCHED = ("title", "abstract", "author_names")
_WORD = re.compile(r"\w+")
# Larger than the number of distinct values of any facet: makes the aggregation exact.
_EXACT_SEGMENT_SIZE = 10_000_000


class TantivyEngine(Engine):
    name = "tantivy"
    description = "Tantivy (tantivy-py), OR, BM25, terms aggregations"

    @classmethod
    def check_available(cls) -> None:
        try:
            import tantivy  # noqa: F401
        except ImportError as exc:
            raise EngineUnavailable("pip install tantivy (benchmark-only)") from exc

    @classmethod
    def index_version(cls, **options: object) -> str:
        import tantivy

        return f"v{INDEX_VERSION}-{getattr(tantivy, '__version__', 'x').split()[-1]}"

    @staticmethod
    def _schema():
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("title", stored=True, tokenizer_name="en_stem")
        builder.add_text_field("abstract", stored=True, tokenizer_name="en_stem")
        builder.add_text_field("author_names", tokenizer_name="default")
        builder.add_text_field("author", fast=True, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("category", fast=True, tokenizer_name="raw", index_option="basic")
        builder.add_integer_field("year", fast=True, indexed=True, stored=True)
        return builder.build()

    def build(self, records: Sequence[Record]) -> None:
        import tantivy

        index = tantivy.Index(self._schema(), path=str(self.index_dir))
        writer = index.writer(heap_size=256_000_000, num_threads=2)
        for record in records:
            document = tantivy.Document()
            document.add_text("id", record.id)
            document.add_text("title", record.title)
            document.add_text("abstract", record.abstract)
            document.add_text("author_names", "\n".join(record.authors))
            for author in record.authors:
                document.add_text("author", author)
            for category in record.categories:
                document.add_text("category", category)
            if record.year is not None:
                document.add_integer("year", record.year)
            writer.add_document(document)
        writer.commit()
        writer.wait_merging_threads()

    def open(self) -> None:
        import tantivy

        self.tantivy = tantivy
        self.index = tantivy.Index.open(str(self.index_dir))
        self.index.reload()
        self.schema = self.index.schema
        self.searcher = self.index.searcher()

    def parse(self, text: str):
        words = _WORD.findall(text)
        if not words:
            return self.tantivy.Query.empty_query()
        return self.index.parse_query(" ".join(words), list(SEARCHED))

    def search(self, task: Task) -> Answer:
        query = self.parse(task.query)
        result = self.searcher.search(query, limit=task.limit, count=bool(task.facets))
        docs = [self.searcher.doc(address) for _, address in result.hits]
        answer = Answer(ids=[doc.get_first("id") for doc in docs])
        if task.facets:
            answer.total = result.count
            answer.facets = self._facet_counts(query, task.facets, task.facet_size)
        if task.highlight:
            generators = {
                name: self.tantivy.SnippetGenerator.create(self.searcher, query, self.schema, name)
                for name in ("title", "abstract")
            }
            answer.highlights = [
                {name: g.snippet_from_doc(doc).to_html() for name, g in generators.items()}
                for doc in docs
            ]
        return answer

    def _facet_counts(self, query, facets: Sequence[str], size: int):
        aggregation = {
            name: {"terms": {"field": name, "size": size, "segment_size": _EXACT_SEGMENT_SIZE}}
            for name in facets
        }
        result = self.searcher.aggregate(query, aggregation)
        return {
            name: [(str(b["key"]), b["doc_count"]) for b in result[name]["buckets"]]
            for name in facets
        }

    def exact_counts(self, query: str) -> tuple[int, dict[str, dict[str, int]]]:
        parsed = self.parse(query)
        total = self.searcher.search(parsed, limit=1, count=True).count
        top = self._facet_counts(parsed, ("author", "year", "category"), 1_000_000)
        return total, {name: dict(values) for name, values in top.items()}
