"""Record validation, the export dict, identity and merging of repeated sightings."""

from __future__ import annotations

from dataclasses import replace

import pytest

from searchsvc.domain.records import (
    MAX_ID_LENGTH,
    RESERVED_IDS,
    Deduplicator,
    Record,
    id_problem,
    identity_key,
    is_arxiv_id,
    merge,
    title_record_id,
)

PAPER = Record(
    id="2301.00001",
    title="Learned Caches",
    abstract="Abstract.",
    authors=("Ada Lovelace",),
    year=2023,
    categories=("cs.LG",),
    source="arXiv",
    url="https://arxiv.org/abs/2301.00001",
)


@pytest.mark.parametrize(
    "fields",
    [
        {"id": "", "title": "T"},
        {"id": "x", "title": "  "},
        {"id": "x", "title": "T", "year": 999},
        {"id": "x", "title": "T", "year": True},
        {"id": "x", "title": "T", "authors": "Ada"},
        {"id": "x", "title": "T", "categories": (1,)},
    ],
)
def test_invalid_records_are_refused(fields):
    with pytest.raises(ValueError):
        Record(**fields)


@pytest.mark.parametrize(
    "record_id",
    [
        "hep-th/9901001",
        "math.AG/0601001v2",
        "doi:10.1000/xyz(123)",
        "https://example.org/paper?id=1&v=2#top",
        "title with inner spaces",
        "Erdős–Rényi 中文 ∑",
        "i" * MAX_ID_LENGTH,
    ],
)
def test_printable_ids_of_at_most_the_limit_are_valid(record_id):
    assert id_problem(record_id) is None
    assert Record(id=record_id, title="T").id == record_id


@pytest.mark.parametrize(
    ("record_id", "reason"),
    [
        ("", "must be a non-empty string"),
        (" \t ", "must be a non-empty string"),
        (None, "must be a non-empty string"),
        ("i" * (MAX_ID_LENGTH + 1), "is 513 characters long: at most 512"),
        ("line\nbreak", "has U+000A (line feed) at character 5"),
        ("carriage\rreturn", "has U+000D (carriage return) at character 9"),
        ("nul\x00", "has U+0000 (NUL) at character 4"),
        ("tab\there", "has U+0009 (tab) at character 4"),
        ("del\x7f", "has U+007F at character 4"),
        ("c1\x85", "has U+0085 at character 3"),
        ("zero\u200bwidth", "has U+200B at character 5"),
        ("bidi\u202eflip", "has U+202E at character 5"),
        ("line\u2028separator", "has U+2028 at character 5"),
        ("no\u00a0break", "has U+00A0 at character 3"),
        (" leading", "starts or ends with a space"),
        ("trailing ", "starts or ends with a space"),
        ("/etc/passwd", "starts with '/': it could not be fetched by URL"),
        ("..", "has a '.' or '..' segment"),
        ("a/../b", "has a '.' or '..' segment"),
        ("a/./b", "has a '.' or '..' segment"),
    ],
)
def test_ids_that_are_empty_too_long_or_not_printable_are_refused_saying_why(record_id, reason):
    assert reason in id_problem(record_id)
    with pytest.raises(ValueError, match="record id") as refused:
        Record(id=record_id, title="T")
    assert reason in str(refused.value)
    with pytest.raises(ValueError, match="id"):
        Record.from_dict({"id": record_id, "title": "T"})


def test_a_record_read_back_from_an_index_keeps_an_id_of_an_older_rule():
    # An index built before the id rule may hold such ids: they stay readable (and deletable).
    record = Record.from_index({"id": "tab\there", "title": "T", "authors": ["A"]})
    assert record.id == "tab\there" and record.authors == ("A",)
    with pytest.raises(ValueError, match="title"):
        Record.from_index({"id": "x", "title": ""})
    with pytest.raises(ValueError, match="'id'"):
        Record.from_index({"title": "T"})


def test_reserved_ids_are_refused_by_the_id_rule_saying_so():
    # An engine's own documents (Solr's meta document) share the id space with records: a
    # record with such an id would be overwritten by the engine's next commit (issue 33).
    assert "__searchsvc_meta__" in RESERVED_IDS
    for record_id in RESERVED_IDS:
        problem = id_problem(record_id)
        assert problem is not None and "is reserved" in problem and repr(record_id) in problem
        with pytest.raises(ValueError, match="is reserved"):
            Record(id=record_id, title="T")
        with pytest.raises(ValueError, match="is reserved"):
            Record.from_dict({"id": record_id, "title": "T"})
    # Only the exact id: others that merely resemble it are ordinary ids.
    for record_id in ("__searchsvc_meta__2", "x__searchsvc_meta__", "__SEARCHSVC_META__"):
        assert id_problem(record_id) is None


def test_a_refused_id_is_quoted_shortened_in_the_reason():
    problem = id_problem("x" * 100 + "\n")
    assert problem is not None and "'" + "x" * 40 + "...'" in problem and "\\n" not in problem


def test_lists_are_cleaned_deduplicated_and_comma_free():
    record = Record(id="x", title="T", authors=["Ada  Lovelace", "Ada Lovelace", "A, B", " "])
    assert record.authors == ("Ada Lovelace", "A B")
    assert record.primary_category is None


def test_a_collaboration_sized_author_list_keeps_first_seen_order():
    names = [f"Author {n}" for n in range(3000)]
    record = Record(id="x", title="T", authors=names + names[::-1] + [" Author  7 "])
    assert record.authors == tuple(names)


def test_to_dict_and_from_dict_round_trip():
    data = PAPER.to_dict()
    assert data["authors"] == ["Ada Lovelace"] and data["categories"] == ["cs.LG"]
    assert Record.from_dict(data) == PAPER


def test_from_dict_refuses_unknown_fields_and_wrong_types():
    with pytest.raises(ValueError, match="unknown record fields: colour"):
        Record.from_dict({**PAPER.to_dict(), "colour": "red"})
    with pytest.raises(ValueError, match="'doi' must be a string"):
        Record.from_dict({**PAPER.to_dict(), "doi": 5})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2503.11731", True),
        ("0704.0001v2", True),
        ("hep-th/9901001", True),
        ("math.AG/0601001", True),
        ("arxiv-1c27c9f61578d916", False),
        ("2503.117", False),
    ],
)
def test_is_arxiv_id(value, expected):
    assert is_arxiv_id(value) is expected


def test_identity_is_the_arxiv_id_without_version_an_explicit_id_or_a_derived_title_and_year():
    assert (
        identity_key(PAPER)
        == identity_key(Record(id="2301.00001v3", title="Other"))
        == ("arxiv:2301.00001")
    )
    seed = Record(
        id=title_record_id("arXiv", "Learned  Caches!", 2023),
        title="Learned Caches!",
        year=2023,
        source="arXiv",
    )
    assert identity_key(seed) == "title:learned caches|2023"
    # An id the source gave is the identity, even when it looks like a derived one.
    assert identity_key(Record(id="4983", title="Learned Caches!", year=2023)) == "id:4983"
    assert identity_key(replace(seed, source="DBLP")) == f"id:{seed.id}"


def test_records_with_different_explicit_ids_are_never_merged_by_title():
    dedupe = Deduplicator()
    for record_id in ("4983", "5836", "7912"):
        dedupe.add(Record(id=record_id, title="Same title", year=2020))
    assert (len(dedupe), dedupe.merged) == (3, 0)


def test_a_repeated_explicit_id_is_held_once_and_the_last_record_wins():
    dedupe = Deduplicator()
    dedupe.add(Record(id="doc-1", title="First title", authors=("A",)))
    dedupe.add(Record(id="doc-2", title="Other"))
    dedupe.add(Record(id="doc-1", title="Second title", authors=("B",)))
    assert [(r.id, r.title, r.authors) for r in dedupe.records()] == [
        ("doc-1", "Second title", ("B",)),
        ("doc-2", "Other", ()),
    ]
    assert dedupe.merged == 1


def test_title_record_id_is_stable_and_ignores_case_and_punctuation():
    assert title_record_id("arXiv", "Learned Caches", 2023) == title_record_id(
        "arXiv", "learned caches.", 2023
    )
    assert title_record_id("arXiv", "Learned Caches", 2023) != title_record_id(
        "arXiv", "Learned Caches", 2022
    )
    assert title_record_id("D.B.L.P", "X", None).startswith("dblp-")


def test_merge_keeps_first_values_and_appends_new_list_items_in_order():
    second = Record(
        id="2301.00001v2",
        title="Learned caches",
        authors=("Alan Turing", "Ada Lovelace"),
        categories=("cs.DC", "cs.LG"),
        doi="10.1/x",
    )
    merged = merge(PAPER, second)
    assert merged.authors == ("Ada Lovelace", "Alan Turing")
    assert merged.categories == ("cs.LG", "cs.DC")
    assert (merged.title, merged.doi, merged.year) == ("Learned Caches", "10.1/x", 2023)


def test_deduplicator_counts_merges_and_keeps_first_seen_order():
    dedupe = Deduplicator()
    other = Record(id="2201.00002", title="Other")
    for record in (PAPER, other, PAPER, Record(id="2301.00001v2", title="x")):
        dedupe.add(record)
    assert (len(dedupe), dedupe.merged) == (2, 2)
    assert [r.id for r in dedupe.records()] == ["2301.00001", "2201.00002"]
