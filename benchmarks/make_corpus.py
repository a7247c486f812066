"""A synthetic arXiv corpus of any size, resampled reproducibly from the arXiv-2025 records.

    .venv/bin/python -m benchmarks.make_corpus 1M [--seed 2025] [--output FILE] [--force]

Writes gzipped Kaggle-format JSON lines (`searchsvc index FILE` reads them with its arxiv reader)
to `benchmarks/.cache/scale/` unless `--output` says otherwise. The same seed, size and source
give the same bytes on every run, and the records of a smaller size are the first records of a
larger one (each record depends only on the records before it), so rows of a scale table built
from different sizes are comparable. Records are written as they are made: memory holds the
source pool and the author model, never the output.

Each record is made like this:

- title: the head of one source title joined to the tail of another of the same primary category
  ("Head: tail" at a colon, "Head for tail" at a connective such as for/with/via/of), and
  never a title key already used, so the titles are unique;
- categories and author count: those of the title's head record;
- abstract: as many sentences as a random record of that category has, each taken from another
  record of the category at the same relative position (first sentences from first sentences);
- authors: a Pitman-Yor process over people (discount 0.68, concentration 9000), calibrated on
  the source: at 40k records about 48% of author slots are distinct people and 70% of them
  appear once, as in arXiv-2025 (49%, 67%), and the number of people grows as slots^0.68, so
  the author facet keeps arXiv's long tail as the corpus grows. New people take the real names
  in a shuffled order, then first and last names of two different real authors;
- year: 2007-2025, weighted by arXiv's yearly submissions (about 5x more in 2025 than in 2007);
- id: `synth/NNNNNNN`, an old-style arXiv id in an archive that does not exist, so it cannot
  collide with a real paper and the indexer identifies the record by id, as it does real arXiv
  records (no two records share an id, so deduplication merges none).

Not modelled: vocabulary growth (every word comes from the 40,717 source records) and recurring
co-author groups.
"""

from __future__ import annotations

import argparse
import calendar
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import sys
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import ARXIV_2025, CACHE_DIR, log

# Bump when the records made for a given seed and size change: old corpora are then remade.
GENERATOR_VERSION = 1
DEFAULT_SEED = 2025
SCALE_DIR = CACHE_DIR / "scale"
ID_PREFIX = "synth/"
MAX_RECORDS = 9_999_999  # old-style arXiv ids have 7 digits
# Approximate arXiv submissions per year (thousands, arXiv's submission statistics).
YEAR_WEIGHTS = {
    2007: 56,
    2008: 59,
    2009: 64,
    2010: 70,
    2011: 77,
    2012: 85,
    2013: 93,
    2014: 98,
    2015: 105,
    2016: 113,
    2017: 124,
    2018: 141,
    2019: 156,
    2020: 178,
    2021: 182,
    2022: 186,
    2023: 209,
    2024: 240,
    2025: 280,
}
# Pitman-Yor author model, calibrated on arXiv-2025 (see the module docstring).
AUTHOR_DISCOUNT = 0.68
AUTHOR_CONCENTRATION = 9000.0
# A category with fewer source records than this borrows title tails and sentences from all.
MIN_CATEGORY_POOL = 30
TITLE_ATTEMPTS = 20
# Rough compressed size of a record, for the free-space check.
BYTES_PER_RECORD = 800
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kKmM]?)")
_SPACE = re.compile(r"\s+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")
# A connective that starts the tail of a title without a colon ("Robust X | for Y").
_CONNECTIVE = re.compile(
    r"\s(?=(?:for|with|via|in|of|on|from|using|through|towards|to|under|without|beyond|by)\s)",
    re.IGNORECASE,
)
_TITLE_KEY = re.compile(r"[^a-z0-9]+")
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def parse_size(text: str) -> int:
    """`10k`, `1M`, `2500` -> a record count (k = 1,000, M = 1,000,000)."""
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2k, 40k, 1M, 2500)")
    number, unit = float(match.group(1)), match.group(2).lower()
    count = int(number * {"": 1, "k": 1_000, "m": 1_000_000}[unit])
    if not 1 <= count <= MAX_RECORDS:
        raise argparse.ArgumentTypeError(f"size must be 1..{MAX_RECORDS:,}, not {count:,}")
    return count


def size_label(count: int) -> str:
    """10000 -> `10k`, 1000000 -> `1M`, 2500 -> `2500`."""
    if count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count % 1_000 == 0:
        return f"{count // 1_000}k"
    return str(count)


def corpus_path(count: int, seed: int = DEFAULT_SEED) -> Path:
    return SCALE_DIR / f"arxiv-synth-g{GENERATOR_VERSION}-s{seed}-n{size_label(count)}.jsonl.gz"


def meta_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".jsonl.gz") + ".meta.json")


# -- the source pool ------------------------------------------------------------------------------
@dataclass
class SourcePool:
    """What records are resampled from: raw (TeX) texts of the source records, by category."""

    categories: list[str] = field(default_factory=list)  # the `categories` string
    author_counts: array = field(default_factory=lambda: array("H"))
    sentences: list[tuple[str, ...]] = field(default_factory=list)
    # Title halves: (head, separator kind); tails by (primary category, kind).
    heads: list[tuple[str, str]] = field(default_factory=list)
    head_records: array = field(default_factory=lambda: array("I"))
    tails: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    by_category: dict[str, array] = field(default_factory=dict)
    names: list[tuple[str, str, str]] = field(default_factory=list)  # distinct, file order

    def __len__(self) -> int:
        return len(self.categories)


def load_pool(path: Path = ARXIV_2025) -> SourcePool:
    """The source records of a Kaggle-format file (plain or gzipped), in file order."""
    pool = SourcePool()
    names: dict[tuple[str, str, str], None] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            data = json.loads(line)
            title = _SPACE.sub(" ", data.get("title") or "").strip()
            abstract = _SPACE.sub(" ", data.get("abstract") or "").strip()
            categories = _SPACE.sub(" ", data.get("categories") or "").strip()
            parsed = [tuple([*parts, "", "", ""][:3]) for parts in data.get("authors_parsed") or ()]
            if not title or not abstract or not categories or not parsed:
                continue
            index = len(pool.categories)
            primary = categories.split()[0]
            pool.categories.append(categories)
            pool.author_counts.append(min(len(parsed), 65_535))
            pool.sentences.append(tuple(_SENTENCE_END.split(abstract)))
            pool.by_category.setdefault(primary, array("I")).append(index)
            for name in parsed:
                names.setdefault(name, None)
            split = split_title(title)
            if split:
                head, kind, tail = split
                pool.heads.append((head, kind))
                pool.head_records.append(index)
                pool.tails.setdefault((primary, kind), []).append(tail)
                pool.tails.setdefault(("", kind), []).append(tail)
    if not pool.heads:
        raise SystemExit(f"error: no usable source records in {path}")
    pool.names = list(names)
    return pool


def split_title(title: str) -> tuple[str, str, str] | None:
    """(head, kind, tail) of a title, split at its first colon or else its first connective
    after the first word; None when it has neither (or the split would cut TeX math)."""
    colon = title.find(": ")
    if colon > 0 and title.count("$", 0, colon) % 2 == 0:
        head, tail = title[:colon], title[colon + 2 :]
        if head.strip() and tail.strip():
            return head, ":", tail
    for match in _CONNECTIVE.finditer(title):
        start = match.start()
        if start > 0 and title.count("$", 0, start) % 2 == 0:
            return title[:start], " ", title[start + 1 :]
    return None


def join_title(head: str, kind: str, tail: str) -> str:
    return f"{head}: {tail}" if kind == ":" else f"{head} {tail}"


def title_key(title: str) -> bytes:
    """A cheap stand-in for searchsvc's title key (no TeX conversion): 8 bytes of its hash."""
    text = _TITLE_KEY.sub(" ", title.lower()).strip()
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


# -- the records ----------------------------------------------------------------------------------
class AuthorModel:
    """People drawn by a Pitman-Yor process: a few prolific authors, a long tail of one-timers."""

    def __init__(self, pool: SourcePool, rng: random.Random) -> None:
        self.rng = rng
        self.real = list(pool.names)
        rng.shuffle(self.real)
        self.source = pool.names
        self.people: list[tuple[str, str, str]] = []
        self.counts = array("I")
        self.slots = array("I")  # one entry per authorship: the person

    def draw(self) -> int:
        rng, slots, counts = self.rng, self.slots, self.counts
        people = len(counts)
        taken = len(slots)
        if rng.random() * (taken + AUTHOR_CONCENTRATION) < (
            AUTHOR_CONCENTRATION + AUTHOR_DISCOUNT * people
        ):
            person = people
            self.people.append(self._new_name(people))
            counts.append(0)
        else:
            # An existing person with probability proportional to (count - discount): a slot
            # picked uniformly is proportional to count; reject to take the discount off.
            while True:
                person = slots[rng.randrange(taken)]
                count = counts[person]
                if rng.random() * count < count - AUTHOR_DISCOUNT:
                    break
        counts[person] += 1
        slots.append(person)
        return person

    def _new_name(self, person: int) -> tuple[str, str, str]:
        if person < len(self.real):
            return self.real[person]
        first = self.rng.choice(self.source)
        last = self.rng.choice(self.source)
        return (last[0], first[1], "")

    def authors(self, count: int) -> list[tuple[str, str, str]]:
        chosen: list[int] = []
        for _ in range(count):
            for _attempt in range(10):
                person = self.draw()
                if person not in chosen:
                    chosen.append(person)
                    break
        return [self.people[p] for p in chosen]


def generate(pool: SourcePool, count: int, seed: int = DEFAULT_SEED) -> Iterator[dict]:
    """`count` Kaggle-format records; record i depends only on the seed and records before it."""
    if count > MAX_RECORDS:
        raise ValueError(f"at most {MAX_RECORDS:,} records")
    rng = random.Random(seed)
    authors = AuthorModel(pool, rng)
    years = list(YEAR_WEIGHTS)
    cumulative = []
    total = 0
    for year in years:
        total += YEAR_WEIGHTS[year]
        cumulative.append(total)
    used: set[bytes] = set()
    everything = array("I", range(len(pool)))
    for number in range(1, count + 1):
        head_index = rng.randrange(len(pool.heads))
        head, kind = pool.heads[head_index]
        record = pool.head_records[head_index]
        primary = pool.categories[record].split()[0]
        title = _new_title(rng, pool, head, kind, primary, used)
        if title is None:
            # Every tail tried made a used title: take the original head with a numbered tail
            # of its own (rare; keeps the record count exact and the title unique).
            title = f"{join_title(head, kind, _pick_tail(rng, pool, kind, primary))} ({number})"
            used.add(title_key(title))
        category_pool = pool.by_category[primary]
        if len(category_pool) < MIN_CATEGORY_POOL:
            category_pool = everything
        year = rng.choices(years, cum_weights=cumulative)[0]
        day = rng.randrange(366 if calendar.isleap(year) else 365)
        seconds = rng.randrange(86_400)
        names = authors.authors(max(1, pool.author_counts[record]))
        yield _kaggle_record(
            f"{ID_PREFIX}{number:07d}",
            title,
            _new_abstract(rng, pool, category_pool),
            pool.categories[record],
            names,
            year,
            day,
            seconds,
        )


def _new_title(rng, pool, head: str, kind: str, primary: str, used: set[bytes]) -> str | None:
    for _ in range(TITLE_ATTEMPTS):
        tail = _pick_tail(rng, pool, kind, primary)
        title = join_title(head, kind, tail)
        key = title_key(title)
        if key not in used:
            used.add(key)
            return title
    return None


def _pick_tail(rng, pool: SourcePool, kind: str, primary: str) -> str:
    tails = pool.tails[(primary, kind)]
    if len(tails) < MIN_CATEGORY_POOL:
        tails = pool.tails[("", kind)]
    return tails[rng.randrange(len(tails))]


def _new_abstract(rng, pool: SourcePool, category_pool: array) -> str:
    template = pool.sentences[category_pool[rng.randrange(len(category_pool))]]
    length = len(template)
    sentences = []
    for position in range(length):
        donor = pool.sentences[category_pool[rng.randrange(len(category_pool))]]
        at = round(position * (len(donor) - 1) / (length - 1)) if length > 1 else 0
        sentences.append(donor[at])
    return " ".join(sentences)


def _kaggle_record(record_id, title, abstract, categories, names, year, day, seconds) -> dict:
    day_start = calendar.timegm((year, 1, 1, 0, 0, 0)) + day * 86_400
    moment = time.gmtime(day_start + seconds)
    # RFC 2822 as arXiv writes it, without the locale strftime would use.
    created = (
        f"{_WEEKDAYS[moment.tm_wday]}, {moment.tm_mday} {_MONTHS[moment.tm_mon - 1]} {year} "
        f"{moment.tm_hour:02d}:{moment.tm_min:02d}:{moment.tm_sec:02d} GMT"
    )
    return {
        "id": record_id,
        "submitter": None,
        "authors": ", ".join(
            " ".join(p for p in (first, last, suffix) if p) for last, first, suffix in names
        ),
        "title": title,
        "comments": None,
        "journal-ref": None,
        "doi": None,
        "report-no": None,
        "categories": categories,
        "license": None,
        "abstract": abstract,
        "versions": [{"version": "v1", "created": created}],
        "update_date": f"{year}-{moment.tm_mon:02d}-{moment.tm_mday:02d}",
        "authors_parsed": [list(name) for name in names],
    }


# -- writing --------------------------------------------------------------------------------------
def write_corpus(
    path: Path,
    count: int,
    seed: int = DEFAULT_SEED,
    source: Path = ARXIV_2025,
    progress: bool = True,
    pool: SourcePool | None = None,
) -> dict:
    """Write the corpus to `path` (atomically: a killed run leaves no partial file) and its
    `.meta.json` beside it; returns the meta (counts, years, distinct authors, timings)."""
    from tqdm import tqdm

    started = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    check_free_space(path.parent, count * BYTES_PER_RECORD, "the corpus")
    if pool is None:
        log(f"reading the source records of {source} ...")
        pool = load_pool(source)
    log(f"writing {count:,} records to {path} ...")
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    years: dict[int, int] = {}
    digest = hashlib.sha256()
    records = iter(generate(pool, count, seed))
    try:
        with (
            open(temporary, "wb") as raw,
            # mtime=0 and no file name in the header: the same records give the same bytes.
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            io.BufferedWriter(gz, buffer_size=1 << 20) as out,
            tqdm(
                total=count,
                unit="rec",
                disable=not progress,
                file=sys.stderr,
                mininterval=1 if sys.stderr.isatty() else 30,
            ) as bar,
        ):
            for number, record in enumerate(records, 1):
                line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
                out.write(line)
                digest.update(line)
                year = int(record["update_date"][:4])
                years[year] = years.get(year, 0) + 1
                if number % 1000 == 0:
                    bar.update(1000)
            bar.update(count % 1000)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    meta = {
        "records": count,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
        "source": str(source),
        "source_bytes": source.stat().st_size if source.exists() else None,
        "source_records": len(pool),
        "content_sha256": digest.hexdigest(),
        "bytes": path.stat().st_size,
        "years": dict(sorted(years.items())),
        "seconds": round(time.perf_counter() - started, 1),
    }
    meta_path(path).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    log(f"  {count:,} records, {meta['bytes'] / 1e6:,.0f} MB in {meta['seconds']:.0f} s")
    return meta


def ensure_corpus(
    count: int, seed: int = DEFAULT_SEED, source: Path = ARXIV_2025, progress: bool = True
) -> Path:
    """The cached corpus of `count` records, written first if missing or made from another
    source or generator version."""
    path = corpus_path(count, seed)
    if path.exists() and meta_path(path).exists():
        meta = json.loads(meta_path(path).read_text(encoding="utf-8"))
        if meta.get("source_bytes") == source.stat().st_size and meta.get("records") == count:
            return path
        log(f"{path.name} was made from another source: remaking it")
    if not source.exists():
        raise SystemExit(f"error: source data {source} is missing (see ../shared/data/README.md)")
    write_corpus(path, count, seed, source, progress)
    return path


def check_free_space(directory: Path, needed: int, what: str) -> None:
    """SystemExit with a clear message when `directory`'s disk has less than `needed` bytes."""
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise SystemExit(
            f"error: {what} needs about {needed / 1e9:.1f} GB, but {directory} has only "
            f"{free / 1e9:.1f} GB free"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", type=parse_size, help="records: 2k, 40k, 1M or a number")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--source", type=Path, default=ARXIV_2025, help="Kaggle-format records")
    parser.add_argument("--output", type=Path, help="default: benchmarks/.cache/scale/...")
    parser.add_argument("--force", action="store_true", help="rewrite an existing corpus")
    args = parser.parse_args(argv)
    if not args.source.exists():
        parser.error(f"source data {args.source} is missing (see ../shared/data/README.md)")
    path = args.output or corpus_path(args.size, args.seed)
    if path.exists() and not args.force:
        log(f"{path} exists (use --force to rewrite it)")
    else:
        write_corpus(path, args.size, args.seed, args.source)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
