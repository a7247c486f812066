"""searchsvc's own search core: `WhooshBackend.open(index_dir).search(SearchRequest)`.

The index is written the way the production indexer writes one (IndexDirectory + writing.
add_records, two writer processes for large inputs), so the benchmark measures the search core
on the index the service would open.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.common import code_digest
from benchmarks.engines import Answer, Engine, EngineUnavailable, Task
from searchsvc.domain.records import Record

INDEX_VERSION = 1
# The code that decides what the index holds: a change here means a rebuild. (Changes to the
# writer or the store layout do not change the content; rebuild those with --rebuild searchsvc.)
_INDEX_CODE = (
    "searchsvc/backends/whoosh/schema.py",
    "searchsvc/backends/whoosh/documents.py",
)


class SearchsvcEngine(Engine):
    """Options: `constants`, a dict of backend module constants to set before opening
    (e.g. {"DFR_C": 1.5}); used by the relevance script's `--set`. `mode`: lexical
    (default), hybrid or semantic; the latter two build the index with vectors."""

    name = "searchsvc"
    description = "searchsvc search core (WhooshBackend)"

    @classmethod
    def check_available(cls) -> None:
        try:
            from searchsvc.backends.whoosh.backend import WhooshBackend  # noqa: F401
        except ImportError as exc:
            raise EngineUnavailable(f"searchsvc backend not importable yet: {exc}") from exc

    @classmethod
    def index_version(cls, **options: object) -> str:
        from searchsvc.backends.whoosh.schema import SCHEMA_VERSION

        vectors = "-vectors" if _wants_vectors(options) else ""
        return f"v{INDEX_VERSION}-s{SCHEMA_VERSION}-{code_digest(_INDEX_CODE)}{vectors}"

    def build(self, records: Sequence[Record]) -> None:
        from searchsvc.backends import open_backend

        # The production write path (the engine contract) minus deduplication: every engine
        # must index the same documents (SciFact has records that searchsvc's identity rule
        # would merge).
        with open_backend(self.index_dir) as backend:
            backend.rebuild(list(records), vectors=_wants_vectors(self.options))

    def open(self) -> None:
        from searchsvc.backends import open_backend
        from searchsvc.domain.query import SearchRequest

        self._restore = apply_constants(dict(self.options.get("constants") or {}))
        self.request_type = SearchRequest
        self.backend = open_backend(self.index_dir)
        self.mode = str(self.options.get("mode") or "lexical")
        self.encoder = None
        if self.mode != "lexical":
            from searchsvc.embeddings import shared_encoder

            # One thread per query, as a gunicorn worker embeds queries.
            self.encoder = shared_encoder(threads=1)

    def close(self) -> None:
        self.backend.close()
        apply_constants(self._restore)

    def request(self, task: Task):
        return self.request_type(
            q=task.query,
            per_page=task.limit,
            facets=task.facets,
            facet_size=task.facet_size,
            highlight=task.highlight,
            mode=self.mode,
        )

    def search(self, task: Task) -> Answer:
        vector = None
        if self.encoder is not None and task.query.strip():
            vector = self.encoder.embed_query(task.query)
        result = self.backend.search(self.request(task), vector)
        answer = Answer(ids=[hit.record.id for hit in result.hits], total=result.total)
        for name, values in result.facets.items():
            answer.facets[name] = [(v.value, v.count) for v in values]
        if task.highlight:
            answer.highlights = [dict(hit.highlights) for hit in result.hits]
        return answer


def _wants_vectors(options: dict) -> bool:
    return str(options.get("mode") or "lexical") != "lexical"


def apply_constants(constants: dict[str, object]) -> dict[str, object]:
    """Set module constants of the Whoosh backend package; returns the previous values."""
    import importlib
    import pkgutil

    import searchsvc.backends.whoosh as package

    previous: dict[str, object] = {}
    if not constants:
        return previous
    found = set()
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for name, value in constants.items():
            if hasattr(module, name):
                previous.setdefault(name, getattr(module, name))
                setattr(module, name, value)
                found.add(name)
        # Parsers and the like are cached with the old constants baked in: start afresh.
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()
    missing = set(constants) - found
    if missing:
        raise EngineUnavailable(f"no backend module defines {', '.join(sorted(missing))}")
    return previous
