"""Shared by the benchmark scripts: data loading, query sets, timing, percentiles and tables.

Benchmarks are scripts that print figures (`python -m benchmarks.search_speed`), never tests.
Built indexes and converted records are cached under `benchmarks/.cache/` (git-ignored), keyed
by the data file and by the code that shapes records, so reruns skip the slow parts.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from whoosh.analysis import STOP_WORDS as WHOOSH_STOP_WORDS

from searchsvc.domain.records import Record

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = Path(os.environ.get("SEARCHSVC_BENCH_CACHE", ROOT / "benchmarks" / ".cache"))
DATA_DIR = Path(os.environ.get("SEARCHSVC_BENCH_DATA", ROOT.parent / "shared" / "data"))
ARXIV_2025 = DATA_DIR / "arxiv-2025" / "arxiv-2025-kaggle-format.jsonl.gz"
SCIFACT = DATA_DIR / "scifact-dev"

# Bump when the fallback Kaggle conversion below changes.
FALLBACK_LOADER_VERSION = 1
# Code whose changes change the Records a source file turns into.
_RECORD_CODE = ("searchsvc/domain/records.py", "searchsvc/domain/texts.py", "searchsvc/sources")

# Query words: plain ASCII words, so that every engine's query syntax reads them the same way.
_WORD = re.compile(r"[a-z]+")
# Query runs skip Whoosh's stop words (searchsvc's analyzer drops them) so that engines with and
# without stop lists match the same documents.
STOP_WORDS = WHOOSH_STOP_WORDS


def log(message: str) -> None:
    """Progress on stderr, so stdout holds only the figures."""
    print(message, file=sys.stderr, flush=True)


# -- corpora ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    """Records every engine indexes, with a key that changes whenever the records may change."""

    name: str
    key: str
    records: tuple[Record, ...]

    def __len__(self) -> int:
        return len(self.records)

    def limited(self, limit: int | None) -> Corpus:
        if limit is None or limit >= len(self.records):
            return self
        return Corpus(self.name, f"{self.key}-n{limit}", self.records[:limit])


def code_digest(paths: Iterable[str]) -> str:
    """Hash of the source files under `paths` (relative to the repo): part of cache keys."""
    digest = hashlib.sha1()
    for relative in paths:
        path = ROOT / relative
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            if file.exists():
                digest.update(str(file.relative_to(ROOT)).encode())
                digest.update(file.read_bytes())
    return digest.hexdigest()[:10]


def _file_digest(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha1(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[
        :10
    ]


def _have_read_records() -> bool:
    try:
        from searchsvc.sources import read_records  # noqa: F401
    except ImportError:
        return False
    return True


def load_arxiv(
    path: Path = ARXIV_2025, limit: int | None = None, reuse_records: bool = False
) -> Corpus:
    """The arXiv-2025 records, read by `searchsvc.sources` when it exists (cached as JSON lines).

    The cache is keyed by the code that reads records too; `reuse_records` takes the newest
    conversion of the file instead, whatever code made it (skips minutes of TeX conversion).
    """
    loader = "sources" if _have_read_records() else f"fallback{FALLBACK_LOADER_VERSION}"
    prefix = f"arxiv-{_file_digest(path)}-{loader}-"
    cached = CACHE_DIR / "records" / f"{prefix}{code_digest(_RECORD_CODE)}.jsonl.gz"
    earlier = sorted(cached.parent.glob(f"{prefix}*.jsonl.gz"), key=lambda p: p.stat().st_mtime)
    if reuse_records and earlier and not cached.exists():
        log(f"reusing {earlier[-1].name} (records read by earlier code)")
        cached = earlier[-1]
    if not cached.exists():
        log(f"converting {path.name} with the {loader} loader ...")
        started = time.perf_counter()
        records = tuple(_unique_ids(_read_arxiv(path, loader)))
        _write_cached_records(cached, records)
        seconds = time.perf_counter() - started
        log(f"  {len(records)} records in {seconds:.1f} s ({len(records) / seconds:,.0f}/s)")
    records, digest = _read_cached_records(cached)
    # Index caches are keyed by content, so a change in the reader that leaves the records
    # unchanged does not rebuild every engine's index.
    return Corpus("arxiv-2025", f"arxiv-{digest}", records).limited(limit)


def _read_arxiv(path: Path, loader: str) -> Iterator[Record]:
    if loader == "sources":
        from searchsvc.sources import read_records

        yield from read_records([path])
        return
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield _record_from_kaggle(json.loads(line))


def _record_from_kaggle(data: dict) -> Record:
    # Stand-in for searchsvc.sources' Kaggle reader until it lands: same fields, same cleaning.
    from searchsvc.domain.texts import tex_to_text

    authors = tuple(
        tex_to_text(" ".join(part for part in (first, last, suffix) if part))
        for last, first, suffix, *_ in data.get("authors_parsed") or ()
    )
    year = None
    versions = data.get("versions") or ()
    match = re.search(r"\b(\d{4})\b", versions[0]["created"]) if versions else None
    if match:
        year = int(match.group(1))
    elif data.get("update_date"):
        year = int(data["update_date"][:4])
    return Record(
        id=data["id"],
        title=tex_to_text(data["title"]),
        abstract=tex_to_text(data.get("abstract") or ""),
        authors=authors,
        year=year,
        categories=tuple((data.get("categories") or "").split()),
        source="arXiv",
        url=f"https://arxiv.org/abs/{data['id']}",
        doi=data.get("doi"),
        journal_ref=data.get("journal-ref"),
        comments=data.get("comments"),
    )


def _unique_ids(records: Iterable[Record]) -> Iterator[Record]:
    seen: set[str] = set()
    for record in records:
        if record.id not in seen:
            seen.add(record.id)
            yield record


def _write_cached_records(path: Path, records: Sequence[Record]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    with gzip.open(temporary, "wt", encoding="utf-8", compresslevel=1) as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
    os.replace(temporary, path)


def _read_cached_records(path: Path) -> tuple[tuple[Record, ...], str]:
    """The records of a cache file and a digest of their content."""
    digest = hashlib.sha1()
    records = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            digest.update(line.encode())
            records.append(Record.from_dict(json.loads(line)))
    return tuple(records), digest.hexdigest()[:10]


@dataclass(frozen=True)
class RelevanceSet:
    """A BEIR collection: corpus as Records, queries by id, graded judgements by query id."""

    corpus: Corpus
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_scifact(root: Path = SCIFACT, split: str = "train") -> RelevanceSet:
    """SciFact in BEIR format; only queries with judgements are kept (as BEIR evaluates)."""
    records = []
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            title = (doc.get("title") or "").strip() or doc["_id"]
            records.append(Record(id=str(doc["_id"]), title=title, abstract=doc.get("text") or ""))
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / f"{split}.tsv", encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3 or parts[0] == "query-id":
                continue
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = {}
    with open(root / f"queries-{split}.jsonl", encoding="utf-8") as handle:
        for line in handle:
            query = json.loads(line)
            if str(query["_id"]) in qrels:
                queries[str(query["_id"])] = query["text"]
    key = f"scifact-{_file_digest(root / 'corpus.jsonl.gz')}"
    return RelevanceSet(Corpus("scifact", key, tuple(records)), queries, qrels)


# -- query sets ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    kind: str  # "two-word", "rare-word", "five-word"
    text: str


QUERY_KINDS = ("two-word", "rare-word", "five-word")


def content_words(text: str) -> list[str]:
    """Lowercase ASCII words of 3+ letters that are not stop words, in text order."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP_WORDS]


def make_queries(records: Sequence[Record], count: int = 200, seed: int = 2025) -> list[Query]:
    """A reproducible query set: 1/2 two-word runs from titles, 1/4 rare words, 1/4 five-word runs
    from abstracts (runs of consecutive content words: stop words skipped)."""
    rng = random.Random(seed)
    two = count // 2
    rare = count // 4
    five = count - two - rare
    queries = _runs(rng, [content_words(r.title) for r in records], 2, two, "two-word")
    queries += _rare_words(rng, records, rare)
    queries += _runs(rng, [content_words(r.abstract) for r in records], 5, five, "five-word")
    return queries


def _runs(rng: random.Random, texts: list[list[str]], size: int, count: int, kind: str):
    candidates = [words for words in texts if len(words) >= size]
    queries, seen = [], set()
    for _ in range(count * 50):
        if len(queries) == count or not candidates:
            break
        words = rng.choice(candidates)
        start = rng.randrange(len(words) - size + 1)
        text = " ".join(words[start : start + size])
        if text not in seen:
            seen.add(text)
            queries.append(Query(kind, text))
    return queries


def _rare_words(rng: random.Random, records: Sequence[Record], count: int) -> list[Query]:
    # Words in 2-5 records: rare but present, the "one specific term" kind of search.
    frequency: Counter[str] = Counter()
    for record in records:
        frequency.update(set(content_words(f"{record.title} {record.abstract}")))
    candidates = sorted(w for w, n in frequency.items() if 2 <= n <= 5 and len(w) >= 5)
    return [Query("rare-word", w) for w in rng.sample(candidates, min(count, len(candidates)))]


# -- timing and tables --------------------------------------------------------------------------
def timed(function: Callable[[], object]) -> tuple[float, float, object]:
    """(wall milliseconds, CPU milliseconds of this process, result) of one call.

    CPU time is the steadier figure on a shared, loaded machine: it leaves out the time the
    process waited for a core (it includes every thread of the process, e.g. Tantivy's)."""
    cpu_started = time.process_time_ns()
    started = time.perf_counter_ns()
    result = function()
    wall = (time.perf_counter_ns() - started) / 1e6
    return wall, (time.process_time_ns() - cpu_started) / 1e6, result


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default method), without numpy."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_summary(values: Sequence[float]) -> str:
    """`p50 / p95 / p99` in ms."""
    return " / ".join(_ms(percentile(values, p)) for p in (50, 95, 99))


def _ms(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A Markdown table (pastes into notes and issues as is)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in cells
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def print_section(title: str, body: str = "") -> None:
    print(f"\n## {title}\n")
    if body:
        print(body)
