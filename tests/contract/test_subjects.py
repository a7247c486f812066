"""Subjects on every engine: category and subject facets named and placed in arXiv's taxonomy,
filters at any level (category, archive, group), arXiv's aliases, and cross-lists.

Expected answers are computed from the records' own categories by the test model
(reference.py), never copied from an engine.
"""

from __future__ import annotations

import pytest

from searchsvc.backends import open_backend
from searchsvc.domain.query import FacetValue, SearchRequest
from searchsvc.domain.records import Record
from searchsvc.service import SearchService
from tests.contract.reference import (
    answered_facets,
    check_subject_counts,
    expected_facets,
    expected_total,
)
from tests.support import build_index


def record(id: str, *categories: str) -> Record:
    return Record(id=id, title=f"Record {id}", abstract="about subjects", categories=categories)


# Primary first. math.IT is an alias of cs.IT (an article in it is in both archives, cs and
# math, as arXiv lists it), chao-dyn a defunct archive now nlin.CD, "Economics (old)" a
# category of another source that the taxonomy does not know.
SUBJECT_RECORDS = (
    record("s1", "cs.DC", "cs.LG"),
    record("s2", "cs.IT", "math.IT"),
    record("s3", "math.IT", "math.PR"),
    record("s4", "hep-ph", "hep-th", "cs.LG"),
    record("s5", "math.AP"),
    record("s6", "stat.ML", "cs.LG"),
    record("s7", "chao-dyn"),
    record("s8", "Economics (old)"),
    record("s9"),
)


@pytest.fixture(scope="module")
def subjects_backend(engine):
    location = build_index(engine.new_location(keep=True), SUBJECT_RECORDS)
    with open_backend(location) as backend:
        yield backend


def search(backend, q: str = "", **params) -> tuple[int, dict[str, dict[str, int]]]:
    """Total and every facet's counts."""
    result = backend.search(SearchRequest.from_params(q, per_page=1, facet_size=100, **params))
    counts = {name: {v.value: v.count for v in values} for name, values in result.facets.items()}
    return result.total, counts


def ids(backend, q: str = "", **params) -> set[str]:
    result = backend.search(SearchRequest.from_params(q, per_page=100, **params))
    return {hit.record.id for hit in result.hits}


def test_category_facet_counts_canonical_codes_once_per_record(subjects_backend):
    _, facets = search(subjects_backend)
    # s2 lists both cs.IT and its alias math.IT: one record of cs.IT; s7's chao-dyn is nlin.CD.
    assert facets["category"]["cs.IT"] == 2
    assert "math.IT" not in facets["category"]
    assert facets["category"]["nlin.CD"] == 1
    assert facets["category"]["cs.LG"] == 3
    assert facets["category"]["Economics (old)"] == 1


def test_subject_facet_counts_archives_and_unknown_categories_stay_flat(subjects_backend):
    _, facets = search(subjects_backend)
    assert facets["subject"] == {
        "cs": 5,  # s1, s2, s4, s6, and s3 by math.IT = cs.IT
        "math": 3,  # s5, and s2 and s3 by cs.IT = math.IT
        "hep-ph": 1,
        "hep-th": 1,
        "stat": 1,
        "nlin": 1,
        "Economics (old)": 1,
    }


def test_filters_take_a_category_an_archive_or_a_group(subjects_backend):
    assert ids(subjects_backend, category="cs") == {"s1", "s2", "s3", "s4", "s6"}
    assert ids(subjects_backend, subject="cs") == {"s1", "s2", "s3", "s4", "s6"}
    assert ids(subjects_backend, category="CS.dc") == {"s1"}
    assert ids(subjects_backend, subject="grp_physics") == {"s4", "s7"}
    assert ids(subjects_backend, category="grp_math") == {"s2", "s3", "s5"}
    assert ids(subjects_backend, category="Economics (old)") == {"s8"}
    assert ids(subjects_backend, subject="no-such-subject") == set()


def test_an_alias_selects_its_canonical_category_and_reads_as_it(subjects_backend):
    result = subjects_backend.search(SearchRequest.from_params(category="math.IT"))
    assert {hit.record.id for hit in result.hits} == {"s2", "s3"}
    assert result.request.selected("category") == ("cs.IT",)
    chosen = [v for v in result.facets["category"] if v.selected]
    assert [(v.value, v.count) for v in chosen] == [("cs.IT", 2)]


def test_excluding_cross_lists_keeps_to_primary_categories(subjects_backend):
    assert ids(subjects_backend, category="cs.LG", crosslists="exclude") == set()
    assert ids(subjects_backend, category="cs.LG") == {"s1", "s4", "s6"}
    assert ids(subjects_backend, subject="cs", crosslists="exclude") == {"s1", "s2", "s3"}
    total, facets = search(subjects_backend, crosslists="exclude")
    assert total == len(SUBJECT_RECORDS)  # no subject filter: the same records
    assert facets["category"] == {
        "cs.DC": 1,
        "cs.IT": 2,
        "hep-ph": 1,
        "math.AP": 1,
        "stat.ML": 1,
        "nlin.CD": 1,
        "Economics (old)": 1,
    }
    assert facets["subject"] == {
        "cs": 3,
        "math": 3,
        "hep-ph": 1,
        "stat": 1,
        "nlin": 1,
        "Economics (old)": 1,
    }


def test_a_subject_selection_keeps_the_other_subjects_counts(subjects_backend):
    _, everything = search(subjects_backend)
    _, chosen = search(subjects_backend, subject="cs")
    assert chosen["subject"] == everything["subject"]  # disjunctive
    # The category facet is narrowed to cs records by the subject filter.
    assert set(chosen["category"]) >= {"cs.DC", "cs.LG", "cs.IT"}
    assert "math.AP" not in chosen["category"]


def test_a_selected_subject_of_another_level_is_listed_with_the_records_under_it(
    subjects_backend,
):
    # The category facet counts categories: a selected archive or group follows them, counted
    # as its filter selects (every record with a category under it).
    result = subjects_backend.search(
        SearchRequest.from_params(category=("cs", "grp_math"), subject="grp_physics")
    )
    assert result.total == 1  # s4: cs.LG and hep-ph
    # Counted under the subject filter: s4 and s7 are the physics records, s4 the cs one.
    chosen = [(v.value, v.count) for v in result.facets["category"] if v.selected]
    assert chosen == [("cs", 1), ("grp_math", 0)]
    # Counted under the category filter: s1-s6 are cs or math records, s4 the physics one.
    assert [(v.value, v.count) for v in result.facets["subject"] if v.selected] == [
        ("grp_physics", 1)
    ]
    primary = subjects_backend.search(
        SearchRequest.from_params(category="cs", crosslists="exclude", facets=("category",))
    )
    assert primary.facets["category"][-1] == FacetValue("cs", 3, True)  # s1, s2, s3


def test_a_selected_archive_outside_the_top_n_follows_it(subjects_backend):
    service = SearchService(subjects_backend)
    result = service.search(subject="nlin", facet_size=1, facets=["subject"])
    assert [(v.value, v.count, v.selected) for v in result.facets["subject"]] == [
        ("cs", 5, False),
        ("nlin", 1, True),
    ]
    assert (result.facets["subject"][-1].label, result.facets["subject"][-1].parent) == (
        "Nonlinear Sciences",
        "grp_physics",
    )


def test_the_query_language_filters_by_subject_at_any_level(subjects_backend):
    assert ids(subjects_backend, "category:cs") == {"s1", "s2", "s3", "s4", "s6"}
    assert ids(subjects_backend, "subject:math") == {"s2", "s3", "s5"}
    assert ids(subjects_backend, "category:math.IT") == {"s2", "s3"}
    assert ids(subjects_backend, "subject:grp_physics AND NOT category:hep-th") == {"s7"}
    assert ids(subjects_backend, "category:cs NOT subject:stat") == {"s1", "s2", "s3", "s4"}


def test_facet_value_search_finds_subjects_by_name(subjects_backend):
    found = [v.value for v in subjects_backend.facet_values("category", "distributed")]
    assert found == ["cs.DC"]
    assert [v.value for v in subjects_backend.facet_values("category", "machine")] == [
        "cs.LG",
        "stat.ML",
    ]
    assert [v.value for v in subjects_backend.facet_values("subject", "high energy")] == [
        "hep-ph",
        "hep-th",
    ]
    assert [v.value for v in subjects_backend.facet_values("subject", "comp")] == ["cs"]
    assert [v.value for v in subjects_backend.facet_values("category", "cs.d")] == ["cs.DC"]


def test_labels_and_parents_name_the_values(subjects_backend):
    service = SearchService(subjects_backend)
    result = service.search(facet_size=100)
    category = {v.value: (v.label, v.parent) for v in result.facets["category"]}
    assert category["cs.DC"] == ("Distributed, Parallel, and Cluster Computing", "cs")
    assert category["hep-ph"] == ("High Energy Physics - Phenomenology", "hep-ph")
    assert category["Economics (old)"] == ("Economics (old)", None)
    subject = {v.value: (v.label, v.parent) for v in result.facets["subject"]}
    assert subject["cs"] == ("Computer Science", "grp_cs")
    assert subject["hep-ph"] == ("High Energy Physics - Phenomenology", "grp_physics")
    assert result.facets["subject"][0].to_dict()["label"] == "Computer Science"
    named = service.facet_values("category", "distributed")
    assert [(v.value, v.label) for v in named] == [
        ("cs.DC", "Distributed, Parallel, and Cluster Computing")
    ]
    assert service.stats().facets["subject"][0].label == "Computer Science"


# -- the 200-record Kaggle sample, checked against its own categories ----------------------------
@pytest.fixture(scope="module")
def kaggle_backend(engine, kaggle_records):
    location = build_index(engine.new_location(keep=True), kaggle_records)
    with open_backend(location) as backend:
        yield backend


@pytest.mark.parametrize("crosslists", ["include", "exclude"])
def test_kaggle_sample_subject_counts_equal_the_records_categories(
    kaggle_backend, kaggle_records, crosslists
):
    expected = check_subject_counts(kaggle_backend, kaggle_records, crosslists)
    assert len(expected) > 10  # the sample spans many archives


@pytest.mark.parametrize("crosslists", ["include", "exclude"])
@pytest.mark.parametrize(
    "selection",
    [
        {"subject": ("math",)},
        {"subject": ("grp_physics",)},
        {"subject": ("cond-mat", "hep-th")},
        {"category": ("cs",), "subject": ("math",)},
        {"category": ("math.PR", "hep-ph")},
    ],
)
def test_kaggle_sample_disjunctive_subject_counts_equal_the_model(
    kaggle_backend, kaggle_records, selection, crosslists
):
    request = SearchRequest.from_params(
        per_page=1, facet_size=100, crosslists=crosslists, **selection
    )
    result = kaggle_backend.search(request)
    assert result.total == expected_total(kaggle_records, request)
    assert answered_facets(result) == expected_facets(kaggle_records, request)
