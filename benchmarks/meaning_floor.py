"""What meaning's floor keeps out: nonsense, identifier and stop-word queries against real corpora.

    python -m benchmarks.meaning_floor [--floors 0.35,0.4,0.45,0.5]

Makes seeded sets of queries that should find nothing by meaning (random letter strings,
pronounceable made-up words and pairs of them, keyboard mashes, arXiv ids, DOIs, stop words),
embeds them as the service embeds a query, and prints, per set and corpus, the share of queries
whose nearest record reaches each floor (cosines of int8 vectors, as the engines compute them).
The corpora: the seed pages, SciFact (5,183 records) and arXiv-2025 (40,717); their vectors are
cached under benchmarks' cache folder, keyed by the records and the model (arXiv's take about 8
minutes the first time). The other side of the choice, what real claims still find, is
`relevance.py --set MEANING_FLOOR=...` (benchmarks/README.md, "The floor of meaning").
"""

from __future__ import annotations

import argparse
import random
import string

import numpy as np

from benchmarks.common import (
    CACHE_DIR,
    ROOT,
    format_table,
    load_arxiv,
    load_scifact,
    log,
    print_section,
)

STOP_WORDS = "the of a and in to is for on with by an at from as it this that be or are was"
VOWELS, CONSONANTS = "aeiou", "bcdfghjklmnprstvwz"
DOI_CHARACTERS = string.ascii_letters + string.digits + ".-"


def query_sets(seed: int = 11) -> dict[str, list[str]]:
    rng = random.Random(seed)

    def made_up() -> str:
        syllables = rng.randint(2, 4)
        word = "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables))
        return word + rng.choice(["", "t", "n", "s"])

    def letters(low: int, high: int, alphabet: str = string.ascii_lowercase) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))

    archives = ["hep-th", "math", "astro-ph", "cond-mat", "quant-ph"]
    return {
        "random strings of 3-14 letters": [letters(3, 14) for _ in range(2000)],
        "pronounceable made-up words": [made_up() for _ in range(1000)],
        "pairs of made-up words": [f"{made_up()} {made_up()}" for _ in range(500)],
        "keyboard mashes": [letters(4, 10, "asdfghjkl") for _ in range(200)],
        "arXiv ids": [
            f"{rng.randint(701, 2512):04d}.{rng.randint(0, 99999):05d}" for _ in range(200)
        ]
        + [
            f"{a}/{rng.randint(9101, 9912):04d}{rng.randint(1, 999):03d}"
            for a in archives
            for _ in range(20)
        ],
        "DOIs": [
            f"10.{rng.randint(1000, 9999)}/{letters(6, 20, DOI_CHARACTERS)}" for _ in range(200)
        ],
        "stop words": STOP_WORDS.split(),
    }


def corpus_vectors(name: str, key: str, records, encoder) -> np.ndarray:
    """The records' int8 vectors (cached by the records' key and the model)."""
    safe = encoder.fingerprint.replace(":", "-")
    path = CACHE_DIR / "vectors" / f"{name}-{key}-{safe}.npy"
    if not path.exists():
        log(f"embedding {len(records):,} {name} records ...")
        path.parent.mkdir(parents=True, exist_ok=True)
        vectors = encoder.embed_records(records)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, vectors)
        partial.replace(path)
    return np.load(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--floors",
        type=lambda text: [float(part) for part in text.split(",") if part.strip()],
        default=[0.35, 0.40, 0.45, 0.50],
    )
    args = parser.parse_args(argv)

    from searchsvc.domain.modes import MEANING_FLOOR
    from searchsvc.embeddings import quantise, shared_encoder
    from searchsvc.embeddings.encoder import QUANTISATION_SCALE
    from searchsvc.sources import read_records

    encoder = shared_encoder()
    seeds = list(read_records([ROOT / "seeds"]))
    scifact = load_scifact().corpus
    arxiv = load_arxiv()
    corpora = {
        "seeds": corpus_vectors("seeds", str(len(seeds)), seeds, encoder),
        "SciFact": corpus_vectors("scifact", scifact.key, list(scifact.records), encoder),
        "arXiv-2025": corpus_vectors("arxiv", arxiv.key, list(arxiv.records), encoder),
    }
    print_section(
        "Meaning's floor",
        f"MEANING_FLOOR is {MEANING_FLOOR}. Share of queries whose nearest record reaches each "
        "floor (seeds / SciFact / arXiv-2025), and the most similar record over all queries.",
    )
    rows = []
    for name, queries in query_sets().items():
        query_vectors = quantise(encoder.embed(queries)).astype(np.int32)
        best = {
            corpus: (query_vectors @ vectors.astype(np.int32).T).max(axis=1) / QUANTISATION_SCALE**2
            for corpus, vectors in corpora.items()
        }
        row = [f"{name} ({len(queries):,})"]
        row.append(" / ".join(f"{values.max():.3f}" for values in best.values()))
        for floor in args.floors:
            row.append(" / ".join(f"{np.mean(values >= floor):.1%}" for values in best.values()))
        rows.append(row)
    print(format_table(["queries", "most similar", *map(str, args.floors)], rows))


if __name__ == "__main__":
    main()
