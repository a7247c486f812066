"""Subject facets on the 40,717 real arXiv-2025 records: every archive filter and every subject
count equals what the records' own categories give, with and without cross-lists, and a
subject selection leaves the other subjects' counts as they were (disjunctive)."""

from __future__ import annotations

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.domain.query import SearchRequest
from searchsvc.indexing.indexer import build_index_from_records
from tests.contract.reference import answered_facets, check_subject_counts, expected_facets
from tests.support import read_corpus

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(arxiv_2025):
    return read_corpus(arxiv_2025)


@pytest.fixture(scope="module")
def backend(records, tmp_path_factory):
    root = tmp_path_factory.mktemp("arxiv-2025") / "index"
    build_index_from_records(records, root)
    with WhooshBackend.open(root) as backend:
        yield backend


@pytest.mark.parametrize("crosslists", ["include", "exclude"])
def test_every_archive_filter_and_subject_count_equals_the_records_categories(
    backend, records, crosslists
):
    expected = check_subject_counts(backend, records, crosslists)
    assert len(records) > 40_000 and len(expected) > 10


@pytest.mark.parametrize("crosslists", ["include", "exclude"])
@pytest.mark.parametrize(
    "selection",
    [
        {"subject": ("cs",)},
        {"subject": ("math", "hep-th")},
        {"subject": ("grp_physics",), "category": ("cs.LG",)},
        {"category": ("cs", "stat.ML"), "year": (2025,)},
    ],
)
def test_disjunctive_subject_counts_equal_the_model(backend, records, selection, crosslists):
    request = SearchRequest.from_params(
        per_page=1,
        facet_size=100,
        facets=("category", "subject"),
        crosslists=crosslists,
        **selection,
    )
    result = backend.search(request)
    assert answered_facets(result) == expected_facets(records, request)
