"""Acronym plurals on the contract: `gpu` and `gpus` (and tpu, dnn, llm) find the same records
and mark both forms, ordinary words ending in s keep their meaning, and on the seed corpus
`gpu` and `gpus` find the 9 records that mention either (backends/acronym_plurals.py)."""

from __future__ import annotations

import re

import pytest

from searchsvc.backends import open_backend
from searchsvc.domain.query import SearchRequest
from searchsvc.domain.records import Record
from tests.support import build_index, marks

ACRONYM_RECORDS = (
    Record(id="gpu", title="Training on one GPU", abstract="A GPU kernel for attention."),
    Record(id="gpus", title="Scheduling jobs across GPUs", abstract="Idle GPUs are wasted."),
    Record(id="tpu", title="Inference on a TPU pod"),
    Record(id="tpus", title="Serving models on TPUs"),
    Record(id="dnn", title="Compressing a DNN"),
    Record(id="dnns", title="Pruning DNNs for mobile devices"),
    Record(id="llm", title="An LLM agent for email"),
    Record(id="llms", title="Evaluating LLMs on arithmetic"),
    # Ordinary words ending in s, each in one record, and the words their s-less forms are.
    Record(id="thus", title="Thus the bound is tight"),
    Record(id="thu", title="A benchmark from THU"),
    Record(id="plus", title="Vision plus language"),
    Record(id="virus", title="Virus spread on contact graphs"),
    Record(id="bus", title="A bus arbiter in hardware"),
    Record(id="gas", title="Gas sensors at the edge"),
    Record(id="corpus", title="A corpus of court rulings"),
    Record(id="lens", title="A lens through which to read proofs"),
)
PAIRS = (("gpu", "gpus"), ("tpu", "tpus"), ("dnn", "dnns"), ("llm", "llms"))
ORDINARY = ("thus", "thu", "plus", "virus", "bus", "gas", "corpus", "lens")


@pytest.fixture(scope="module")
def acronym_backend(engine):
    with open_backend(build_index(engine.new_location(keep=True), ACRONYM_RECORDS)) as backend:
        yield backend


def ids(backend, q: str) -> set[str]:
    result = backend.search(SearchRequest(q=q, per_page=100))
    return {hit.record.id for hit in result.hits}


@pytest.mark.parametrize("acronym, plural", PAIRS)
def test_an_acronym_and_its_plural_find_the_same_records(acronym_backend, acronym, plural):
    assert ids(acronym_backend, acronym) == ids(acronym_backend, plural) == {acronym, plural}


@pytest.mark.parametrize("word", ORDINARY)
def test_ordinary_words_ending_in_s_find_only_their_own_record(acronym_backend, word):
    assert ids(acronym_backend, word) == {word}


@pytest.mark.parametrize("q", ["gpu", "gpus"])
def test_either_form_marks_both_forms(acronym_backend, q):
    result = acronym_backend.search(SearchRequest(q=q, per_page=100))
    marked = {hit.record.id: hit.highlights for hit in result.hits}
    assert marks(marked["gpu"]["title"]) == ["GPU"]
    assert marks(marked["gpu"]["abstract"]) == ["GPU"]
    assert marks(marked["gpus"]["title"]) == ["GPUs"]
    assert marks(marked["gpus"]["abstract"]) == ["GPUs"]


def test_a_phrase_matches_either_form(acronym_backend):
    assert ids(acronym_backend, '"one gpus"') == ids(acronym_backend, '"one gpu"') == {"gpu"}


def test_gpu_and_gpus_find_the_nine_seed_records_that_mention_either(seed_backend, seed_records):
    mention = re.compile(r"\bgpus?\b", re.IGNORECASE)
    expected = {r.id for r in seed_records if mention.search(f"{r.title} {r.abstract}")}
    assert len(expected) == 9
    assert ids(seed_backend, "gpu") == ids(seed_backend, "gpus") == expected
