"""Acronym plurals: `GPUs` is indexed and searched as `gpu`, `LLMs` as `llm`, on every engine.

Snowball English drops a final s only when a vowel (y included) comes before the letter ahead
of it, and never after "us": `gas` and `this` keep theirs, as they should, but so did `dnns`,
`llms` (no vowel) and `gpus`, `tpus` (like `virus`, `corpus`), and an acronym and its plural were
two index terms. Seen in lowercase, as analysis sees it, an acronym's plural has a shape English
words almost never have: two or more consonants, then a consonant other than s (`dnns`, `llms`,
`cnns`, `mlps`, `snps`) or a "u" (`gpus`, `tpus`, `cpus`, `grus`: the -PU and -U acronyms), then
s. Such a word loses that s before it is stemmed, at index time and in queries alike, so both
forms are one term (and highlighting, which compares terms, marks both). Acronyms holding a
vowel need nothing: Snowball already drops the s of `apis` and `gans`. A final "ss" (`gnss`) is
left alone, as Snowball leaves it.

Measured: in a large American English word list, the words of that shape that are neither
plurals nor abbreviations are `plus`, `thus`, `crus` and the names Grus and Prus; `plus` and
`thus` keep their s (`thus` would otherwise find THU, Tsinghua University). In the titles and
abstracts of the 40,717 arXiv 2025 records and of SciFact, 634 of the 892 distinct words of the
shape are written as acronym plurals (`LLMs`, `GPUs`: 98% of the occurrences besides those of
`https`, `thus` and `plus`); `https` becomes `http`, and most of the rest are acronyms ending
in S (`MCTS`, `PDMS`), which lose it too: `mcts` still finds MCTS, and also any record with
`MCT`, the price of analysis not seeing case.
"""

from __future__ import annotations

import re

# One pattern for every engine: Python's `re` here and Java's regex in the Solr configset's
# PatternReplaceFilter (schema.xml holds the same text; tests/backends/test_acronym_plurals.py
# checks). Group 1 is the singular. Consonants are the letters other than a, e, i, o, u and y.
PATTERN = (
    r"^(?!(?:plus|thus)$)"
    r"([b-df-hj-np-tv-xz]{2,}(?:[b-df-hj-np-rtv-xz]|u))s$"
)
_ACRONYM_PLURAL = re.compile(PATTERN)


def singular(word: str) -> str:
    """`word` without the s of an acronym plural (`gpus` -> `gpu`), any other word as it is.

    `word` is lowercased and accent-folded, as the analysis has it before stemming.
    """
    if word.endswith("s") and (plural := _ACRONYM_PLURAL.match(word)):
        return plural.group(1)
    return word
