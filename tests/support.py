"""Test support shared by every test module: a small fixture corpus and a real index builder."""

from __future__ import annotations

import os
from collections.abc import Iterable
from html.parser import HTMLParser

from searchsvc.backends import open_backend
from searchsvc.domain.records import Record

# `make test-fast` sets this: property tests run a tenth of their examples (see `examples`).
FAST = os.environ.get("SEARCHSVC_TESTS") == "fast"


def examples(count: int) -> int:
    """How many Hypothesis examples a property test runs: `count`, or a tenth of it (at least
    5) in the fast edit-test loop."""
    return max(5, count // 10) if FAST else count


CHROMIUM = "/usr/bin/chromium"
# Debian's Chromium for the browser tests and screenshots; without the background-networking
# flags it dials out, which closed networks refuse.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

HOSTILE_TITLE = "<script>alert('x')</script> \"Quoted\" & <img src=x onerror=alert(1)>"

FIXTURE_RECORDS: tuple[Record, ...] = (
    Record(
        id="2301.00001",
        title="Fair Cluster Scheduling for Deep Learning Jobs",
        abstract="We study scheduling of deep learning training jobs on shared GPU clusters.",
        authors=("Ada Lovelace", "Shivaram Venkataraman"),
        year=2023,
        categories=("cs.DC", "cs.LG"),
        source="arXiv",
        url="https://arxiv.org/abs/2301.00001",
    ),
    Record(
        id="2201.00002",
        title="Learned Caches for Inference Serving",
        abstract="Learned caches reduce the latency of deep learning inference by 75% at p99.",
        authors=("Aditya Akella", "Shivaram Venkataraman"),
        year=2022,
        categories=("cs.LG",),
        source="arXiv",
        url="https://arxiv.org/abs/2201.00002",
    ),
    Record(
        id="2101.00003",
        title="Congestion Control in Datacenter Networks",
        abstract="A network transport protocol for low tail latency in datacenters.",
        authors=("Aditya Akella",),
        year=2021,
        categories=("cs.NI", "cs.DC"),
        source="arXiv",
        url="https://arxiv.org/abs/2101.00003",
    ),
    Record(
        id="0704.0001",
        title="Calculation of prompt diphoton production cross sections",
        abstract="A fully differential calculation in perturbative quantum chromodynamics.",
        authors=("C. Balázs", "E. L. Berger"),
        year=2007,
        categories=("hep-ph",),
        source="arXiv",
        url="https://arxiv.org/abs/0704.0001",
    ),
    Record(
        id="seed-hostile0001",
        title=HOSTILE_TITLE,
        abstract="An abstract with <script>document.cookie</script> and <b>bold</b> tags.",
        authors=("Mallory O'Brien",),
        year=2020,
        categories=("cs.CR",),
        source="Example",
        url=None,
    ),
)


def build_index(
    location: str | os.PathLike[str], records: Iterable[Record] = FIXTURE_RECORDS
) -> str:
    """Build a real index of `records` at `location` through the engine contract; its location.

    A path is the embedded Whoosh index; any engine's location works the same way.
    """
    with open_backend(location) as backend:
        backend.rebuild(list(records))
    return os.fspath(location)


def multi_block_records(count: int = 300, start: int = 0) -> list[Record]:
    """Records whose common words and facet values have posting lists of several blocks (Whoosh
    writes 128 postings a block), numbered from `start`: ids 2400.00000, 2400.00001, ..."""
    return [
        Record(
            id=f"2400.{n:05d}",
            title=f"Scheduling {'graphs' if n % 3 else 'caches'} number {n}",
            abstract=" ".join(["learning deep models"] * (1 + n % 7) + [f"w{n}"] * 3),
            authors=("Aditya Akella", f"Author {n % 11}"),
            year=2000 + n % 4,
            categories=("cs.DC", "cs.LG") if n % 2 else ("cs.LG",),
            source="arXiv",
        )
        for n in range(start, start + count)
    ]


class _MarkedWords(HTMLParser):
    """Collects the text inside <mark> tags and every tag met (any other tag fails)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.marked: list[str] = []
        self._open = 0

    def handle_starttag(self, tag, attrs):
        assert tag == "mark" and not attrs, (tag, attrs)
        self.tags.append(tag)
        self._open += 1

    def handle_endtag(self, tag):
        assert tag == "mark", tag
        self.tags.append(f"/{tag}")
        self._open -= 1

    def handle_data(self, data):
        if self._open:
            self.marked.append(data)


def marks(fragment: str) -> list[str]:
    """The marked words of a highlight, after checking that it is escaped HTML whose only tags
    are <mark> pairs."""
    parser = _MarkedWords()
    parser.feed(fragment)
    parser.close()
    assert parser.tags == ["mark", "/mark"] * (len(parser.tags) // 2)
    return parser.marked


def read_corpus(*paths) -> tuple:
    """The records of input files or directories, read and deduplicated as the indexer does."""
    from searchsvc.domain.records import Deduplicator
    from searchsvc.sources import read_records

    dedupe = Deduplicator()
    for record in read_records(paths):
        dedupe.add(record)
    return tuple(dedupe.records())


def draw_seed_request(data, records, vocabulary):
    """A SearchRequest Hypothesis draws from a corpus: up to 3 of its words, up to 2 values of
    each facet (a subject of any level), cross-lists or not, and maybe year bounds; every facet
    counted (100 values), no highlights."""
    from hypothesis import strategies as st

    from searchsvc.domain.query import SearchRequest
    from searchsvc.domain.subjects import taxonomy

    authors = sorted({a for r in records for a in r.authors})
    categories = sorted({c for r in records for c in r.categories})
    # Subjects of every level the records' categories are under (archives, groups).
    subjects = sorted({k for c in categories for k in taxonomy().keys_of(c)})
    years = sorted({r.year for r in records if r.year})
    words = data.draw(st.lists(st.sampled_from(vocabulary), max_size=3))
    bounds = sorted(data.draw(st.lists(st.sampled_from(years), min_size=2, max_size=2)))
    return SearchRequest.from_params(
        q=" ".join(words),
        author=tuple(data.draw(st.lists(st.sampled_from(authors), max_size=2))),
        category=tuple(data.draw(st.lists(st.sampled_from(categories), max_size=2))),
        subject=tuple(data.draw(st.lists(st.sampled_from(subjects), max_size=1))),
        crosslists=data.draw(st.sampled_from(["include", "exclude"])),
        year=tuple(data.draw(st.lists(st.sampled_from(years), max_size=2))),
        year_from=data.draw(st.sampled_from([None, bounds[0]])),
        year_to=data.draw(st.sampled_from([None, bounds[1]])),
        facet_size=100,
        highlight=False,
    )


def stop_process(process, timeout: float = 15) -> None:
    """SIGTERM a server a test started, and SIGKILL it if it has not stopped in `timeout` s."""
    import signal
    import subprocess

    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
