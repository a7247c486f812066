"""Did-you-mean quality: how often its corrections are right, how many typos it corrects, and
how often it proposes something for a word spelt right.

    .venv/bin/python -m benchmarks.did_you_mean [--corpora seed,arxiv] [--set NAME=VALUE ...]

Each query is one word (or a README example), asked of the search core on a Whoosh index of
the corpus (`SearchRequest(q=word)`, the service's own did-you-mean path), on the seed corpus
(seeds/, 33 records) and on the arXiv-2025 records (40,717; `--limit N` for fewer).

Misspellings (a typo and the word meant):
- real: codespell's dictionary (`codespell_lib/data/dictionary.txt`, from the `bench` extra:
  about 65,000 misspelling -> correction pairs, begun from Wikipedia's "Lists of common
  misspellings" and grown with misspellings found in real text and code; CC BY-SA 3.0). Kept:
  lowercase letters only, one correction, a correction that is a word of the corpus (in at
  least one record's title or abstract) and not a stop word (the index holds none).
- generated: typos of the corpus's most frequent words (5+ letters, not stop words; the 300
  commonest of arXiv, every such word in 2+ seed records), one of each kind at a random
  position (first letter included), seeded: two neighbouring letters swapped, a letter dropped,
  a letter doubled, a letter replaced by a neighbouring key of a QWERTY keyboard.
A typo that finds records (a real-word error such as `form` for `from`, or a misspelling the
corpus itself holds) is counted apart: did-you-mean never changes a word that found records.

Correctly spelt words:
- indexed: 500 words of the corpus's titles and abstracts (3+ letters, not stop words), drawn
  at random, kept if they find records.
- absent English: codespell's corrections (real English words, 3+ letters) that find no record.
- absent arXiv terms (seed corpus only): words in 20+ arXiv-2025 records that find no seed
  record, acronyms such as `rnns` among them.
- README: the query examples of the README's query table.

Figures: a correction is right when it is the word meant or has its stem (it finds the same
records); precision = right / corrected, recall = right / typos; for words spelt right, the
false-suggestion rate = words given any suggestion / words.
`--set NAME=VALUE` overrides a constant of searchsvc/backends/shared/spelling.py (the rule both
engines follow) for the run, to compare variants of the rule.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources

from benchmarks.common import (
    CACHE_DIR,
    ROOT,
    STOP_WORDS,
    Corpus,
    format_table,
    load_arxiv,
    log,
    print_section,
)
from benchmarks.engines import prepare
from benchmarks.engines.searchsvc_core import SearchsvcEngine
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from searchsvc.domain.texts import fold

SEEDS = ROOT / "seeds"
SEED = 2025
GENERATED_TERMS = 300  # commonest arXiv words given generated typos
INDEXED_SAMPLE = 500
# arXiv words in at least this many records that the seed corpus lacks: a reader's technical
# words the small corpus has never seen.
ARXIV_TERM_RECORDS = 20
README_EXAMPLES = (
    "cluster scheduling",
    '"learned caches"',
    "gpu AND scheduling",
    "caches OR tlb",
    "learning NOT inference",
    "title:caches",
    "abstract:latency",
    "title:(caches OR tlb)",
    "author:akella",
    'author:"Aditya Akella"',
    "sched*",
    "congest?on",
    "schedular~",
    "shceduling~2",
    "learning^2",
)
_LETTERS = re.compile(r"[a-z]+")
_TOKEN = re.compile(r"\w+")
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


# -- corpora and their words --------------------------------------------------------------------
def load_seeds() -> Corpus:
    """The seed corpus, read and deduplicated as the indexer does."""
    from searchsvc.domain.records import Deduplicator
    from searchsvc.sources import read_records

    dedupe = Deduplicator()
    for record in read_records([SEEDS]):
        dedupe.add(record)
    records = tuple(dedupe.records())
    digest = hashlib.sha1()
    for record in records:
        digest.update(json.dumps(record.to_dict(), sort_keys=True).encode())
    return Corpus("seed", f"seed-{digest.hexdigest()[:10]}", records)


def word_frequencies(records: Iterable[Record]) -> Counter[str]:
    """Records holding each plain lowercase word of a title or abstract."""
    counts: Counter[str] = Counter()
    for record in records:
        # Whole tokens as the index splits them (`gpt4` is no `gpt`), kept if letters only.
        tokens = _TOKEN.findall(fold(f"{record.title} {record.abstract}"))
        counts.update({token for token in tokens if _LETTERS.fullmatch(token)})
    return counts


# -- query sets ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Typo:
    typed: str
    meant: str


def codespell_pairs() -> list[Typo]:
    """codespell's misspellings with one correction, both lowercase letters, 3+ letters."""
    try:
        text = (resources.files("codespell_lib") / "data" / "dictionary.txt").read_text()
    except ModuleNotFoundError:
        sys.exit("needs codespell: .venv/bin/pip install codespell (make bench-did-you-mean does)")
    pairs = []
    for line in text.splitlines():
        typed, _, corrections = line.partition("->")
        meant = corrections.strip().rstrip(",")
        if _LETTERS.fullmatch(typed) and _LETTERS.fullmatch(meant) and len(typed) >= 3:
            pairs.append(Typo(typed, meant))
    return pairs


def generated_typos(words: Sequence[str], seed: int = SEED) -> list[tuple[str, Typo]]:
    """(kind, typo) of each word: one swap, drop, double and neighbouring-key substitution."""
    typos = []
    for word in words:
        rng = random.Random(f"{seed}:{word}")
        swaps = [i for i in range(len(word) - 1) if word[i] != word[i + 1]]
        made = {
            "swap": _swap(word, rng.choice(swaps)) if swaps else None,
            "drop": _drop(word, rng.randrange(len(word))),
            "double": _double(word, rng.randrange(len(word))),
            "neighbour key": _neighbour_key(word, rng.randrange(len(word)), rng),
        }
        typos += [(kind, Typo(typed, word)) for kind, typed in made.items() if typed]
    return typos


def _swap(word: str, i: int) -> str:
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _drop(word: str, i: int) -> str:
    return word[:i] + word[i + 1 :]


def _double(word: str, i: int) -> str:
    return word[: i + 1] + word[i:]


def _neighbour_key(word: str, i: int, rng: random.Random) -> str | None:
    neighbours = _keyboard_neighbours().get(word[i])
    return word[:i] + rng.choice(neighbours) + word[i + 1 :] if neighbours else None


def _keyboard_neighbours() -> dict[str, str]:
    """Letters beside each letter on a QWERTY keyboard: same row, and the rows above and below
    at the same and the next position (the rows are staggered)."""
    found: dict[str, set[str]] = {}
    for row_number, row in enumerate(_QWERTY_ROWS):
        for i, letter in enumerate(row):
            near = found.setdefault(letter, set())
            near.update(row[j] for j in (i - 1, i + 1) if 0 <= j < len(row))
            if row_number > 0:
                above = _QWERTY_ROWS[row_number - 1]
                near.update(above[j] for j in (i, i + 1) if j < len(above))
            if row_number + 1 < len(_QWERTY_ROWS):
                below = _QWERTY_ROWS[row_number + 1]
                near.update(below[j] for j in (i - 1, i) if 0 <= j < len(below))
    return {letter: "".join(sorted(near)) for letter, near in found.items()}


# -- measuring ----------------------------------------------------------------------------------
@dataclass
class TypoScore:
    typos: int = 0
    corrected: int = 0
    right: int = 0
    found_records: int = 0  # typos left out: the word itself found records
    wrong: list[str] = field(default_factory=list)

    def row(self, label: str) -> list[object]:
        return [
            label,
            self.typos,
            self.corrected,
            self.right,
            _percent(self.right, self.corrected),
            _percent(self.right, self.typos),
            self.found_records,
        ]


@dataclass
class SpeltRightScore:
    words: int = 0
    suggested: list[str] = field(default_factory=list)

    def row(self, label: str) -> list[object]:
        return [label, self.words, len(self.suggested), _percent(len(self.suggested), self.words)]


class Asker:
    """Answers one-word searches on an index: found records?, the suggestion."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self._answers: dict[str, tuple[int, str | None]] = {}

    def ask(self, q: str) -> tuple[int, str | None]:
        if q not in self._answers:
            result = self.backend.search(SearchRequest(q=q, per_page=1, facets=(), highlight=False))
            self._answers[q] = (result.total, result.suggestion)
        return self._answers[q]


def score_typos(asker: Asker, typos: Iterable[Typo]) -> TypoScore:
    from searchsvc.backends.whoosh.schema import snowball_english

    score = TypoScore()
    for typo in typos:
        total, suggestion = asker.ask(typo.typed)
        if total:
            score.found_records += 1
            continue
        score.typos += 1
        if suggestion is None:
            continue
        score.corrected += 1
        if suggestion == typo.meant or snowball_english(suggestion) == snowball_english(typo.meant):
            score.right += 1
        else:
            score.wrong.append(f"{typo.typed} -> {suggestion} (meant {typo.meant})")
    return score


def score_spelt_right(asker: Asker, queries: Iterable[str]) -> SpeltRightScore:
    score = SpeltRightScore()
    for q in queries:
        score.words += 1
        _, suggestion = asker.ask(q)
        if suggestion is not None:
            score.suggested.append(f"{q} -> {suggestion}")
    return score


def absent(asker: Asker, words: Iterable[str]) -> list[str]:
    """The words that find no record."""
    return [word for word in words if asker.ask(word)[0] == 0]


def found(asker: Asker, words: Iterable[str]) -> list[str]:
    """The words that find records."""
    return [word for word in words if asker.ask(word)[0] > 0]


def measure(corpus: Corpus, other_words: Counter[str] | None) -> tuple[list, list, dict]:
    """Typo rows, spelt-right rows and examples of mistakes for one corpus."""
    engine = prepare(SearchsvcEngine, corpus.records, corpus.key, CACHE_DIR, log=log)
    try:
        asker = Asker(engine.backend)
        vocabulary = word_frequencies(corpus.records)
        log(f"{corpus.name}: {len(corpus)} records, {len(vocabulary)} words")
        # A stop word is in no index: no suggestion can name it.
        real = [
            t for t in codespell_pairs() if vocabulary[t.meant] > 0 and t.meant not in STOP_WORDS
        ]
        generated = generated_typos(frequent_words(vocabulary, corpus.name == "seed"))
        rng = random.Random(SEED)
        indexed = sorted(w for w in vocabulary if len(w) >= 3 and w not in STOP_WORDS)
        english = sorted({t.meant for t in codespell_pairs()} - set(vocabulary))

        typo_scores = {"real (codespell)": score_typos(asker, real)}
        for kind in ("swap", "drop", "double", "neighbour key"):
            typos = [typo for k, typo in generated if k == kind]
            typo_scores[f"generated: {kind}"] = score_typos(asker, typos)
        typo_scores["generated: all"] = score_typos(asker, (typo for _, typo in generated))

        right_scores = {
            "indexed words": score_spelt_right(
                asker, found(asker, rng.sample(indexed, min(INDEXED_SAMPLE, len(indexed))))
            ),
            "absent English words": score_spelt_right(asker, absent(asker, english)),
        }
        if other_words is not None:
            terms = sorted(
                w for w, n in other_words.items() if n >= ARXIV_TERM_RECORDS and len(w) >= 3
            )
            right_scores["absent arXiv terms"] = score_spelt_right(asker, absent(asker, terms))
        right_scores["README examples"] = score_spelt_right(asker, README_EXAMPLES)
    finally:
        engine.close()
    mistakes = {
        "wrong corrections": typo_scores["real (codespell)"].wrong
        + typo_scores["generated: all"].wrong,
        "suggestions for words spelt right": [
            s for score in right_scores.values() for s in score.suggested
        ],
    }
    typo_rows = [score.row(f"{corpus.name}: {label}") for label, score in typo_scores.items()]
    right_rows = [score.row(f"{corpus.name}: {label}") for label, score in right_scores.items()]
    return typo_rows, right_rows, mistakes


def frequent_words(vocabulary: Counter[str], small_corpus: bool) -> list[str]:
    """The words given generated typos: 5+ letters, not stop words, the commonest first."""
    words = [
        (count, word)
        for word, count in vocabulary.items()
        if len(word) >= 5 and word not in STOP_WORDS and (count >= 2 or not small_corpus)
    ]
    chosen = sorted(words, key=lambda item: (-item[0], item[1]))
    if not small_corpus:
        chosen = chosen[:GENERATED_TERMS]
    return [word for _, word in chosen]


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


# -- the run ------------------------------------------------------------------------------------
def apply_constants(assignments: Sequence[str]) -> dict[str, object]:
    """Set constants of the spelling rule module from NAME=VALUE strings."""
    applied: dict[str, object] = {}
    if not assignments:
        return applied
    from searchsvc.backends.shared import spelling

    for assignment in assignments:
        name, _, value = assignment.partition("=")
        if not hasattr(spelling, name):
            sys.exit(f"searchsvc.backends.shared.spelling has no constant {name}")
        applied[name] = ast.literal_eval(value)
        setattr(spelling, name, applied[name])
    return applied


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    constants = apply_constants(args.constants)
    typo_rows: list[list[object]] = []
    right_rows: list[list[object]] = []
    mistakes: dict[str, dict[str, list[str]]] = {}
    arxiv = load_arxiv(limit=args.limit, reuse_records=True)
    arxiv_words = word_frequencies(arxiv.records)
    for name in args.corpora:
        corpus = load_seeds() if name == "seed" else arxiv
        other = arxiv_words if name == "seed" else None
        typos, right, examples = measure(corpus, other)
        typo_rows += typos
        right_rows += right
        mistakes[corpus.name] = examples

    if constants:
        print(f"\nRule constants set for this run: {constants}")
    print_section(
        "Misspellings: corrections",
        format_table(
            ("set", "typos", "corrected", "right", "precision", "recall", "found records"),
            typo_rows,
        ),
    )
    print_section(
        "Words spelt right: suggestions",
        format_table(("set", "words", "suggested", "false-suggestion rate"), right_rows),
    )
    for corpus_name, examples in mistakes.items():
        for label, lines in examples.items():
            shown = random.Random(SEED).sample(lines, min(args.examples, len(lines)))
            print_section(f"{corpus_name}: {label} ({len(lines)}, {len(shown)} shown)")
            print("\n".join(f"- {line}" for line in sorted(shown)) or "(none)")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpora",
        type=lambda s: [c.strip() for c in s.split(",") if c.strip()],
        default=["seed", "arxiv"],
        help="seed, arxiv or both (default)",
    )
    parser.add_argument("--limit", type=int, default=None, help="first N arXiv records only")
    parser.add_argument(
        "--set",
        dest="constants",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a constant of searchsvc/backends/shared/spelling.py (Python literal value)",
    )
    parser.add_argument("--examples", type=int, default=15, help="mistakes shown per list")
    args = parser.parse_args(argv)
    unknown = set(args.corpora) - {"seed", "arxiv"}
    if unknown:
        parser.error(f"unknown corpora {sorted(unknown)}; choose from seed, arxiv")
    return args


if __name__ == "__main__":
    sys.exit(main())
