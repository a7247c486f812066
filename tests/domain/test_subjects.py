"""arXiv's subject taxonomy as domain data (subjects/): names, hierarchy, equivalences, and what
a record's categories give the category and subject facets."""

from __future__ import annotations

import json

import pytest

from searchsvc.domain.errors import InvalidRequest
from searchsvc.domain.facets import facet_named
from searchsvc.domain.records import Record
from searchsvc.domain.subjects import (
    DATA_FILE,
    record_categories,
    record_subject_keys,
    record_subjects,
    taxonomy,
)


@pytest.fixture(scope="module")
def tax():
    return taxonomy()


def test_the_shipped_data_says_where_it_comes_from_and_hangs_together():
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    provenance = data["provenance"]
    assert provenance["source"].startswith("arxiv_base-")
    assert "definitions.py" in provenance["source"]
    assert provenance["made_by"] == "scripts/make_subject_taxonomy.py"
    assert len(provenance["sha256"]) == 64
    assert len(data["groups"]) == 8 and len(data["categories"]) > 150
    assert all(a["group"] in data["groups"] for a in data["archives"].values())
    assert all(c["archive"] in data["archives"] for c in data["categories"].values())
    assert all(target in data["categories"] for target in data["aliases"].values())
    assert all(target in data["categories"] for target in data["subsumed"].values())


def test_categories_are_named_and_placed_group_archive_category(tax):
    assert tax.label("cs.DC") == "Distributed, Parallel, and Cluster Computing"
    assert tax.parent("cs.DC", "category") == "cs"
    assert tax.label("cs") == "Computer Science" and tax.parent("cs", "archive") == "grp_cs"
    assert tax.label("grp_physics") == "Physics"
    assert tax.label("hep-ph") == "High Energy Physics - Phenomenology"
    assert tax.parent("hep-ph", "archive") == "grp_physics"
    assert tax.keys_of("cs.DC") == ("cs.DC", "cs", "grp_cs")
    assert tax.keys_of("cond-mat.str-el") == ("cond-mat.str-el", "cond-mat", "grp_physics")


def test_codes_match_in_any_case(tax):
    assert tax.canonical("CS.dc") == "cs.DC"
    assert tax.canonical("GRP_CS") == "grp_cs"
    assert tax.label("Hep-Ph") == "High Energy Physics - Phenomenology"


def test_aliases_and_subsumed_archives_are_their_canonical_category(tax):
    assert tax.canonical("math.IT") == "cs.IT"
    assert tax.canonical("cs.NA") == "math.NA"
    assert tax.canonical("stat.TH") == "math.ST"
    assert tax.canonical("chao-dyn") == "nlin.CD"
    assert tax.category_label("math.IT") == "Information Theory"
    # An article in an alias is in both archives, as arXiv lists it.
    assert tax.archives_of("cs.IT") == ("cs", "math")
    assert tax.archives_of("math.NA") == ("math", "cs")
    assert tax.keys_of("math.IT") == ("cs.IT", "cs", "grp_cs", "math", "grp_math")


def test_unknown_categories_stay_flat_labelled_by_their_code(tax):
    assert tax.canonical("Economics (old)") == "Economics (old)"
    assert tax.label("Economics (old)") == "Economics (old)"
    assert tax.archives_of("Economics (old)") == ("Economics (old)",)
    assert tax.keys_of("na") == ("na",)
    assert tax.parent("na", "category") is None


def test_a_records_values_per_facet_primary_first():
    categories = ("math.IT", "cs.IT", "hep-th", "cs.LG")
    assert record_categories(categories) == ("cs.IT", "hep-th", "cs.LG")
    assert record_categories(categories, primary_only=True) == ("cs.IT",)
    assert record_subjects(categories) == ("cs", "math", "hep-th")
    assert record_subjects(("hep-th", "cs.LG"), primary_only=True) == ("hep-th",)
    assert set(record_subject_keys(("hep-th",))) == {"hep-th", "grp_physics"}
    assert record_categories(()) == record_subjects(()) == ()


def test_subject_facets_give_canonical_values_and_canonical_selections():
    record = Record(id="x", title="t", categories=("math.IT", "math.PR"))
    assert facet_named("category").values_of(record) == ("cs.IT", "math.PR")
    assert facet_named("subject").values_of(record) == ("cs", "math")
    assert facet_named("subject").values_of(record, primary_only=True) == ("cs", "math")
    assert facet_named("category").filter_value("MATH.it") == "cs.IT"
    assert facet_named("subject").filter_value("unknown-thing") == "unknown-thing"
    assert facet_named("category").describe("cs.DC") == (
        "Distributed, Parallel, and Cluster Computing",
        "cs",
    )
    assert facet_named("subject").describe("cs") == ("Computer Science", "grp_cs")
    assert facet_named("author").describe("Ada Lovelace") == ("Ada Lovelace", None)
    with pytest.raises(InvalidRequest):
        facet_named("subject").filter_value("")
