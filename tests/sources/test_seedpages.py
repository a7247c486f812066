"""Seed author pages: the real seeds, tolerated variations, hostile input and the round trip."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from searchsvc.domain.records import Deduplicator, Record, id_problem, title_record_id
from searchsvc.sources import Skipped, read_records, render_seed_page
from tests.support import examples

PAGE_HEADER = (
    "arXiv subjects\n\nAda Lovelace\n\n"
    "Publications and source records attributed to Ada Lovelace.\n\n"
    "At least 3 records · Page 1Linked to original sources\n\n"
)


def read_seed(path: Path) -> tuple[list[Record], list[Skipped]]:
    skipped: list[Skipped] = []
    records = list(read_records([path], format="seed", on_skip=skipped.append))
    return records, skipped


def write(tmp_path: Path, text: str, name: str = "page.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_real_seeds_read_36_records_that_merge_into_33(seeds_dir):
    records = list(read_records([seeds_dir]))
    assert len(records) == 36
    dedupe = Deduplicator()
    for record in records:
        dedupe.add(record)
    assert (len(dedupe), dedupe.merged) == (33, 3)

    papers = {record.title: record for record in dedupe.records()}
    both = ("Shivaram Venkataraman", "Aditya Akella")
    shared = [title for title, record in papers.items() if record.authors == both]
    assert sorted(shared) == [
        "Accelerating Deep Learning Inference via Learned Caches",
        "Doing More by Doing Less: How Structured Partial Backpropagation Improves Deep "
        "Learning Clusters",
        "Shockwave: Fair and Efficient Cluster Scheduling for Dynamic Adaptation in Machine "
        "Learning",
    ]
    categories = Counter(c for record in papers.values() for c in record.categories)
    assert categories == {
        "cs.DC": 12, "cs.LG": 11, "cs.NI": 4, "cs.DB": 3, "cs.CL": 1, "cs.LO": 1, "cs.OS": 1,
    }  # fmt: skip
    years = {record.year for record in papers.values()}
    assert (min(years), max(years)) == (2019, 2024)


def test_real_seed_record_fields(seeds_dir):
    first = next(read_records([seeds_dir / "000_2d4200ce66a414ec.txt"]))
    assert first.title == "BagPipe: Accelerating Deep Recommendation Model Training"
    assert first.authors == ("Shivaram Venkataraman",)
    assert (first.year, first.categories, first.source, first.url) == (
        2023,
        ("cs.DC",),
        "arXiv",
        None,
    )
    assert first.id == title_record_id("arXiv", first.title, 2023)
    # TeX rendered: the source says "around 75\% of the iteration time".
    assert "around 75% of the iteration time" in first.abstract
    assert "\\" not in first.abstract


def test_crlf_bom_stray_blanks_and_spaces(tmp_path):
    text = (
        "\ufeff" + PAGE_HEADER + "\n\n  arXiv2023  \n\n\n   A Title  With  Spaces \n\n"
        "First paragraph.\n\nSecond paragraph.\n\n cs.DC↗ \n"
    ).replace("\n", "\r\n")
    records, skipped = read_seed(write(tmp_path, text))
    assert skipped == []
    [record] = records
    assert record.title == "A Title With Spaces"
    assert record.abstract == "First paragraph. Second paragraph."
    assert record.authors == ("Ada Lovelace",)
    assert record.categories == ("cs.DC",)


def test_missing_abstract_and_missing_category_line(tmp_path):
    text = (
        PAGE_HEADER
        + "arXiv2020\n\nNo Abstract Here\n\ncs.LG↗\n\narXiv2021\n\nNo Category\n\nJust text.\n"
    )
    records, skipped = read_seed(write(tmp_path, text))
    assert skipped == []
    assert [(r.title, r.abstract, r.categories) for r in records] == [
        ("No Abstract Here", "", ("cs.LG",)),
        ("No Category", "Just text.", ()),
    ]


def test_several_categories_in_both_spellings(tmp_path):
    text = (
        PAGE_HEADER
        + "arXiv2020\n\nOne\n\nx\n\ncs.DC cs.LG↗\n\narXiv2020\n\nTwo\n\ny\n\ncs.DC↗ cs.LG↗\n"
    )
    records, _ = read_seed(write(tmp_path, text))
    assert [r.categories for r in records] == [("cs.DC", "cs.LG"), ("cs.DC", "cs.LG")]


def test_other_source_names(tmp_path):
    text = PAGE_HEADER + "DBLP2021\n\nFrom DBLP\n\ncs.DB↗\n\nACM2020\n\nFrom ACM\n\ncs.OS↗\n"
    records, _ = read_seed(write(tmp_path, text))
    assert [(r.source, r.year) for r in records] == [("DBLP", 2021), ("ACM", 2020)]
    assert records[0].id == title_record_id("DBLP", "From DBLP", 2021)
    assert records[0].id.startswith("dblp-")


def test_several_pages_in_one_file_take_each_page_author(tmp_path):
    second = PAGE_HEADER.replace("Ada Lovelace", "Alan Turing").replace("Page 1", "Page 2")
    # The first page's last record has no category line, so the next header follows its abstract.
    text = PAGE_HEADER + "arXiv2020\n\nFirst Paper\n\nAbstract one.\n\n" + second
    text += "arXiv2021\n\nSecond Paper\n\nAbstract two.\n\ncs.LG↗\n"
    records, skipped = read_seed(write(tmp_path, text))
    assert skipped == []
    assert [(r.title, r.abstract, r.authors) for r in records] == [
        ("First Paper", "Abstract one.", ("Ada Lovelace",)),
        ("Second Paper", "Abstract two.", ("Alan Turing",)),
    ]


def test_truncated_record_at_end_of_file_is_skipped_with_its_line(tmp_path):
    text = PAGE_HEADER + "arXiv2020\n\nComplete\n\ncs.LG↗\n\narXiv2021\n"
    path = write(tmp_path, text)
    records, skipped = read_seed(path)
    assert [r.title for r in records] == ["Complete"]
    assert skipped == [Skipped(str(path), 15, "record has no title")]


def test_ten_megabyte_line_is_skipped_quickly(tmp_path):
    huge = "word " * (2 * 1024 * 1024)  # 10 MiB on one line
    text = PAGE_HEADER + f"arXiv2020\n\nBefore\n\ncs.LG↗\n\narXiv2021\n\nHuge\n\n{huge}\n\ncs.LG↗\n"
    text += "\narXiv2022\n\nAfter\n\ncs.DC↗\n"
    path = write(tmp_path, text)
    started = time.perf_counter()
    records, skipped = read_seed(path)
    assert time.perf_counter() - started < 2
    assert [r.title for r in records] == ["Before", "After"]
    assert [(s.line, s.reason) for s in skipped] == [(15, "record too large (over 1 MiB)")]


# The seed format holds one author per page, a year, a source name without spaces or digits,
# and single-line values; its other limits are listed in searchsvc/sources/seedpages.py. The
# strategies stay inside them: words are all letters (plus harmless punctuation) or all digits,
# so no line can pass for a `<source><year>` line, and nothing holds TeX, "↗" or a comma.
_LETTERS = st.characters(categories=("L",), exclude_characters="↗")
_WORD = st.one_of(
    st.text(_LETTERS, min_size=1, max_size=8).map(lambda w: w + "?" if w[0] == "x" else w),
    st.text(st.sampled_from("0123456789"), min_size=1, max_size=4),
    st.sampled_from(["(a)", "e.g.", "end.", "well-known", "it's", "5%", "x:"]),
)
_TEXT = st.lists(_WORD, min_size=1, max_size=12).map(" ".join)
_SOURCE = st.from_regex(r"[A-Za-z]{1,10}", fullmatch=True)
_CATEGORY = st.from_regex(r"[a-z]{2,5}(\.[A-Z]{2})?", fullmatch=True)


@st.composite
def _seed_record(draw, author: str) -> Record:
    source, title = draw(_SOURCE), draw(_TEXT)
    year = draw(st.integers(1000, 2999))
    return Record(
        id=title_record_id(source, title, year),
        title=title,
        abstract=draw(st.one_of(st.just(""), _TEXT.filter(lambda t: " " in t))),
        authors=(author,),
        year=year,
        categories=tuple(draw(st.lists(_CATEGORY, max_size=3, unique=True))),
        source=source,
    )


@st.composite
def _seed_page(draw) -> tuple[str, list[Record]]:
    author = draw(_TEXT)
    return author, draw(st.lists(_seed_record(author), max_size=5))


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(page=_seed_page())
def test_rendered_seed_page_reads_back_equal(tmp_path, page):
    author, records = page
    path = write(tmp_path, render_seed_page(author, records))
    parsed, skipped = read_seed(path)
    assert skipped == []
    assert parsed == records


def test_undecodable_line_inside_a_record_skips_that_record(tmp_path):
    path = tmp_path / "page.txt"
    body = PAGE_HEADER + "arXiv2020\n\nBroken\n\n@@\n\ncs.LG↗\n\narXiv2021\n\nFine\n"
    path.write_bytes(body.encode().replace(b"@@", b"\xff\xfe"))
    records, skipped = read_seed(path)
    assert [r.title for r in records] == ["Fine"]
    assert [(s.line, s.reason[:19]) for s in skipped] == [(9, "not valid UTF-8 tex")]


@settings(max_examples=examples(200))
@given(source=st.text(), title=st.text(), year=st.none() | st.integers(1000, 2999))
def test_the_ids_derived_for_seed_records_always_keep_the_id_rule(source, title, year):
    # Seed pages carry no id: theirs is derived, and must never be one the rule refuses.
    assert id_problem(title_record_id(source, title, year)) is None


def test_a_title_with_control_characters_still_gives_a_valid_id(tmp_path):
    text = PAGE_HEADER + "arXiv2023\n\nZero\u200bwidth \x0bvertical\x7f title\n\ncs.DC↗\n"
    [record], skipped = read_seed(write(tmp_path, text))
    assert skipped == [] and id_problem(record.id) is None
