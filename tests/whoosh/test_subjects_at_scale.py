"""Subject facets on the 40,717 real arXiv-2025 records: every archive filter and every subject
count equals what the records' own categories give, with and without cross-lists, and a
subject selection leaves the other subjects' counts as they were (disjunctive)."""

from __future__ import annotations

from collections import Counter

import pytest

from searchsvc.backends.whoosh.backend import WhooshBackend
from searchsvc.indexer import build_index_from_records
from searchsvc.query import SearchRequest
from searchsvc.records import Deduplicator
from searchsvc.sources import read_records
from tests.contract.reference import answered_facets, expected_facets, facet_values

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def records(arxiv_2025):
    dedupe = Deduplicator()
    for record in read_records([arxiv_2025]):
        dedupe.add(record)
    return tuple(dedupe.records())


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
    primary = crosslists == "exclude"
    expected = Counter(s for r in records for s in facet_values(r, "subject", primary))
    assert len(records) > 40_000 and len(expected) > 10
    result = backend.search(SearchRequest(facet_size=100, per_page=1, crosslists=crosslists))
    assert {v.value: v.count for v in result.facets["subject"]} == dict(expected)
    for archive, count in expected.items():
        for facet in ("subject", "category"):
            request = SearchRequest.from_params(
                per_page=1, facets=(), crosslists=crosslists, **{facet: archive}
            )
            assert backend.search(request).total == count, (facet, archive)


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
