"""Acronym plurals lose their s before stemming, ordinary English words keep theirs, and the
Solr configset applies the very pattern the service does."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from importlib import resources

import pytest
import Stemmer

from searchsvc.backends.shared.acronym_plurals import PATTERN, singular
from searchsvc.backends.whoosh.schema import english_stem

_SNOWBALL = Stemmer.Stemmer("english")


@pytest.mark.parametrize(
    "plural, acronym",
    [
        ("gpus", "gpu"), ("tpus", "tpu"), ("cpus", "cpu"), ("npus", "npu"), ("grus", "gru"),
        ("dnns", "dnn"), ("llms", "llm"), ("cnns", "cnn"), ("mlps", "mlp"), ("mllms", "mllm"),
        ("lstms", "lstm"), ("snps", "snp"),
    ],
)  # fmt: skip
def test_an_acronym_plural_is_stemmed_as_its_acronym(plural, acronym):
    assert singular(plural) == acronym
    assert english_stem(plural) == english_stem(acronym)


@pytest.mark.parametrize(
    "word",
    [
        # Snowball keeps the s of these, and so does the rule.
        "virus", "bus", "gas", "focus", "corpus", "this", "was", "has", "status", "consensus",
        # The only English words of an acronym plural's shape (thus is not THU).
        "plus", "thus",
        # Snowball drops the s itself (vowel-holding acronyms need nothing more).
        "lens", "its", "analysis", "apis", "gans", "networks",
        # Too short to tell from units and two-letter acronyms (ms, GPS, fps), or ending in ss.
        "ms", "gps", "fps", "bps", "gnss", "class", "css",
        # Not letters only: a number's s is a decade.
        "1980s", "h100s",
    ],
)  # fmt: skip
def test_other_words_stem_as_snowball_stems_them(word):
    assert english_stem(word) == _SNOWBALL.stemWord(word)


def test_an_acronym_that_only_looks_plural_loses_its_s_too():
    # Analysis sees no case: MCTS is `mcts`, shaped like DNNs. Both index and query drop the s,
    # so `mcts` still finds it (and MCT).
    assert singular("mcts") == "mct"


def test_the_solr_configset_drops_the_s_with_the_same_pattern():
    conf = resources.files("searchsvc.backends.solr").joinpath("configset/conf/schema.xml")
    schema = ET.fromstring(conf.read_bytes())
    filters = [
        f.attrib
        for field_type in schema.iter("fieldType")
        if field_type.get("name") == "text_stemmed"
        for f in field_type.iter("filter")
    ]
    classes = [f["class"] for f in filters]
    # After the words are kept and before they are stemmed, as english_stem does.
    position = classes.index("solr.PatternReplaceFilterFactory")
    assert classes[position - 1] == "solr.LengthFilterFactory"
    assert classes[position + 1] == "solr.SnowballPorterFilterFactory"
    assert filters[position]["pattern"] == PATTERN
    assert filters[position]["replacement"] == "$1"
