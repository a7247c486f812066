"""The Solr engine's analysis: the configset's (index side, run by Solr) and the service's own
(backends/solr/analysis.py: which words a text holds, and PyStemmer's stems for highlighting)
keep the same words at the same positions as the Whoosh index. Stems are the index's own, asked
of Solr (terms.IndexStems): Lucene's Snowball English differs from PyStemmer's on some words."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from importlib import resources

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from searchsvc.backends.solr import analysis
from searchsvc.backends.whoosh.analysis import name_words as whoosh_name_words
from searchsvc.backends.whoosh.analysis import text_words as whoosh_text_words
from tests.support import FIXTURE_RECORDS, examples

CONF = resources.files("searchsvc.backends.solr").joinpath("configset/conf")
# Words of the kinds records hold: plain, capitalised, stop words, one letter, dotted (e.g.,
# 3.5), hyphenated, accented, digits, acronym plurals, and punctuation between them.
_WORDS = st.sampled_from(
    [
        "The", "learning", "for", "a", "x", "e.g.", "3.5", "GPU-based", "Balázs", "naïve",
        "Schrödinger", "scheduling", "caches", "of", "IS", "U.S.", "co-design", "p99", "75%",
        "we", "Us", "networks", "(deep)", "learned,", "Zürich", "über", "café's",
        "organization", "organized", "universal", "GPUs", "DNNs", "plus", "virus",
    ]
)  # fmt: skip
TEXTS = st.lists(_WORDS, max_size=12).map(" ".join)


def stop_words_in_schema() -> set[str]:
    """The words the schema's stop-word char filter removes (besides one-letter words)."""
    schema = ET.fromstring(CONF.joinpath("schema.xml").read_bytes())
    patterns = {
        f.get("pattern")
        for f in schema.iter("charFilter")
        if f.get("class") == "solr.PatternReplaceCharFilterFactory"
    }
    assert len(patterns) == 1, patterns  # the same filter on every stemmed/word field
    words = re.search(r"\(\?:(.*)\|\\w\)", patterns.pop())
    assert words is not None
    return set(words.group(1).split("|"))


def test_the_char_filter_removes_the_stop_word_files_words():
    assert stop_words_in_schema() == set(analysis.stop_words())


def test_the_stop_words_are_the_whoosh_indexs():
    from whoosh.analysis import STOP_WORDS

    assert set(analysis.stop_words()) == set(STOP_WORDS)


@settings(max_examples=examples(300), deadline=None)
@given(TEXTS)
def test_highlighting_analysis_gives_the_whoosh_indexs_terms(text):
    assert analysis.stems(text) == [stem for _, stem in whoosh_text_words(text)[1]]
    assert analysis.name_words(text) == whoosh_name_words(text)


# -- against Solr itself ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def analyse(solr_hosts):
    """Solr's index-time analysis of a text for a field type: [(term, position)]."""
    from searchsvc.backends import open_backend
    from tests.solr.support import drop_collections

    location = f"solr://{solr_hosts}/solr/analysis{os.getpid()}?shards=1&replicas=1"
    with open_backend(location) as backend:
        backend.write(upserts=[FIXTURE_RECORDS[0]])
        base = f"http://{solr_hosts.split(',')[0]}/solr/analysis{os.getpid()}"
        session = requests.Session()

        def run(field_type: str, text: str) -> list[tuple[str, int]]:
            answer = session.get(
                f"{base}/analysis/field",
                params={
                    "analysis.fieldtype": field_type,
                    "analysis.fieldvalue": text,
                    "wt": "json",
                },
                timeout=30,
            ).json()
            stages = answer["analysis"]["field_types"][field_type]["index"]
            return [(token["text"], token["position"]) for token in stages[-1]] if stages else []

        yield run
    drop_collections(location)


def consecutive(terms: list[str]) -> list[tuple[str, int]]:
    return [(term, position) for position, term in enumerate(terms, start=1)]


@pytest.mark.slow
@settings(max_examples=examples(60), deadline=None)
@given(TEXTS)
def test_solr_indexes_the_words_the_service_searches_at_consecutive_positions(analyse, text):
    words = analysis.words(text)
    assert analyse("text_words", text) == consecutive(words)
    assert analyse("text_names", text) == consecutive(analysis.name_words(text))
    # One stem per kept word, numbered as the words are: what IndexStems maps them by.
    stemmed = analyse("text_stemmed", text)
    assert [position for _, position in stemmed] == list(range(1, len(words) + 1))


@pytest.mark.slow
def test_the_index_stems_are_asked_of_solr(analyse):
    # Lucene's Snowball English: `organ` (PyStemmer, a later release of the algorithm: organiz).
    assert analyse("text_stemmed", "organization organized") == [("organ", 1), ("organ", 2)]
    assert analysis.stems("organization") == ["organiz"]


@pytest.mark.slow
def test_solr_stems_an_acronym_plural_as_its_acronym_as_the_service_does(analyse):
    text = "GPUs TPUs DNNs LLMs GPU plus thus virus GNSS"
    expected = ["gpu", "tpu", "dnn", "llm", "gpu", "plus", "thus", "virus", "gnss"]
    assert analyse("text_stemmed", text) == consecutive(expected)
    assert analysis.stems(text) == expected


def test_the_configsets_ranking_is_every_engines():
    from searchsvc.backends.shared.ranked_fields import DFR_C

    schema = ET.fromstring(CONF.joinpath("schema.xml").read_bytes())
    similarities = list(schema.iter("similarity"))
    assert similarities
    for similarity in similarities:
        # The Whoosh index's DivergenceFromRandomness: I(ne)-B-H2.
        assert similarity.get("class") == "solr.DFRSimilarityFactory"
        models = {s.get("name"): s.text for s in similarity.iter("str")}
        assert models == {"basicModel": "I(ne)", "afterEffect": "B", "normalization": "H2"}
        constants = {f.get("name"): float(f.text or "nan") for f in similarity.iter("float")}
        assert constants == {"c": DFR_C}
