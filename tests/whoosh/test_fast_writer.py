"""The fast segment writer (build/segment.py) writes the index Whoosh's own writer writes.

Each test builds the same records twice, with Whoosh's stock writer and with `add_records`, and
compares the segment files byte for byte, but for two kinds. The posting blocks, whose tuples
are pickled at another protocol (segment_postings.BLOCK_PROTOCOL) and compressed by ISA-L, are
compared block by block, info and unpickled contents; the stored fields, also compressed by
ISA-L, as the reader returns them. Then the two indexes through Whoosh's reader: terms,
postings, term statistics, field lengths, stored fields, columns, spelling words and scores.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from whoosh import fields
from whoosh import index as whoosh_index
from whoosh.filedb.filestore import FileStorage
from whoosh.qparser import QueryParser

from searchsvc.backends.whoosh.build import segment as segments
from searchsvc.backends.whoosh.build import writer as writing
from searchsvc.backends.whoosh.build.writer import add_records
from searchsvc.backends.whoosh.schema import build_schema
from searchsvc.domain.records import Record
from searchsvc.sources import read_records
from tests.support import FIXTURE_RECORDS, examples, multi_block_records
from tests.whoosh.support import whoosh_writer_index

ROOT = Path(__file__).resolve().parents[2]
KAGGLE_SAMPLE = ROOT.parent / "shared" / "data" / "arxiv-kaggle-sample"
_SEGMENT_FILE = re.compile(r"^[^_]+_[a-z0-9]+")

_WORDS = st.sampled_from(
    [
        "the", "a", "of", "and", "Scheduling", "schedulers", "caches", "Balázs", "ÉCOLE",
        "naïve", "U.S.A.", "v1.2", "x", "İstanbul", "straße", "ﬁle", "3.14", "$\\alpha$",
        "GPU-based", "don't", "—", "über", "Ωmega", "x_1", "learning", "learned", "deep",
        "graph", "graphs", "network", "é", "\u0301", "data", "model", "models",
    ]
)  # fmt: skip
_TEXT = st.lists(_WORDS, max_size=40).map(" ".join)
_NAMES = st.lists(
    st.sampled_from(["Aditya Akella", "Balázs Kégl", "J. Doe", "Ünal Ö", "Li", "de la Cruz"]),
    max_size=4,
    unique=True,
)
_CATEGORIES = st.lists(st.sampled_from(["cs.DC", "cs.LG", "math.OC", "hep-th"]), max_size=3)


@st.composite
def _records(draw) -> list[Record]:
    count = draw(st.integers(1, 40))
    records = []
    for number in range(count):
        title = draw(_TEXT.filter(lambda text: text.strip()) | st.just("the of a"))
        records.append(
            Record(
                id=f"r{number}",
                title=title,
                abstract=draw(_TEXT | st.just("") | st.text(max_size=60)),
                authors=tuple(draw(_NAMES)),
                year=draw(st.none() | st.integers(1990, 2026)),
                categories=tuple(dict.fromkeys(draw(_CATEGORIES))),
                url=draw(st.none() | st.just("https://arxiv.org/abs/x")),
            )
        )
    return records


# -- building --------------------------------------------------------------------------------
def _stock_build(path: Path, records: list[Record], parts: int = 1, ranges=None):
    """Whoosh's own writer; `parts` contiguous shares (or the given [start, stop) `ranges`),
    one segment each (as the workers do)."""
    return whoosh_writer_index(path, records, parts, ranges)


def _fast_build(path: Path, records: list[Record], procs: int = 1):
    path.mkdir()
    index = whoosh_index.create_in(str(path), build_schema())
    add_records(index, records, procs=procs)
    return index


# -- comparing -------------------------------------------------------------------------------
def _segment_files(index) -> list[dict[str, bytes]]:
    """Each segment's files (compound members) by name without the segment id."""
    files = []
    for segment in index._segments():
        storage = segment.open_compound_file(index.storage)
        files.append(
            {_SEGMENT_FILE.sub("", name): storage.open_file(name).read() for name in storage.list()}
        )
        storage.close()
    return files


# Files written differently from Whoosh's writer: the term index (offsets into the postings)
# and the postings, compared by `_segment_blocks`; the stored fields, compressed by ISA-L
# instead of zlib, compared through the reader (`_assert_same_index`).
_BLOCK_FILES = (".trm", ".pst", "._stored.col")


def _assert_same_files(stock, fast) -> None:
    stock_files, fast_files = _segment_files(stock), _segment_files(fast)
    assert len(stock_files) == len(fast_files)
    for stock_segment, fast_segment in zip(stock_files, fast_files, strict=True):
        assert sorted(stock_segment) == sorted(fast_segment)
        for name, content in stock_segment.items():
            if not name.endswith(_BLOCK_FILES):
                assert fast_segment[name] == content, name
    assert _segment_blocks(fast) == _segment_blocks(stock)


def _segment_blocks(index) -> list[list[tuple]]:
    """Per segment, per term: each posting block's info and unpickled (ids, weights, values)."""
    segments = []
    with index.reader() as reader:
        for leaf, _ in reader.leaf_readers():
            terms = []
            for field, term in leaf.all_terms():
                matcher = leaf.postings(field, term)
                blocks = []
                while True:
                    matcher._read_data()
                    info = (
                        matcher._blocklength,
                        matcher._maxid,
                        matcher._maxweight,
                        matcher._minlength,
                        matcher._maxlength,
                    )
                    # Compressed or not: the level (zlib's or ISA-L's) is not read back.
                    blocks.append((info, bool(matcher._compression), matcher._data))
                    if matcher._lastblock:
                        break
                    matcher._goto(matcher._nextoffset)
                terms.append((field, term, blocks))
            segments.append(terms)
    return segments


def _postings(reader, field: str, term: bytes, positional: bool) -> tuple:
    matcher = reader.postings(field, term)
    entries = []
    while matcher.is_active():
        value = matcher.value_as("positions") if positional else matcher.value()
        entries.append((matcher.id(), matcher.weight(), value))
        matcher.next()
    return tuple(entries)


def _term_info(reader, field: str, term: bytes) -> tuple:
    info = reader.term_info(field, term)
    return (
        info.weight(),
        info.doc_frequency(),
        info.min_length(),
        info.max_length(),
        info.max_weight(),
        info.min_id(),
        info.max_id(),
    )


def _assert_same_index(stock, fast) -> None:
    schema = stock.schema
    with stock.reader() as expected, fast.reader() as actual:
        assert actual.doc_count() == expected.doc_count()
        assert actual.doc_count_all() == expected.doc_count_all()
        terms = list(expected.all_terms())
        assert list(actual.all_terms()) == terms
        for field, term in terms:
            positional = schema[field].format.supports("positions")
            assert actual.doc_frequency(field, term) == expected.doc_frequency(field, term)
            assert actual.frequency(field, term) == expected.frequency(field, term)
            assert _term_info(actual, field, term) == _term_info(expected, field, term)
            assert _postings(actual, field, term, positional) == _postings(
                expected, field, term, positional
            )
        for field in schema.scorable_names():
            assert actual.field_length(field) == expected.field_length(field)
            if expected.field_length(field):
                assert actual.min_field_length(field) == expected.min_field_length(field)
                assert actual.max_field_length(field) == expected.max_field_length(field)
            for docnum in range(expected.doc_count_all()):
                assert actual.doc_field_length(docnum, field) == expected.doc_field_length(
                    docnum, field
                )
        assert list(actual.all_stored_fields()) == list(expected.all_stored_fields())
        for field in schema.names():
            column = schema[field].column_type
            if column and expected.has_column(field):
                assert list(actual.column_reader(field)) == list(expected.column_reader(field))
        assert list(actual.lexicon("spell_content")) == list(expected.lexicon("spell_content"))


def _assert_same_search(stock, fast, queries: list[str]) -> None:
    parser = QueryParser("content", stock.schema)
    with stock.searcher() as expected, fast.searcher() as actual:
        for text in queries:
            query = parser.parse(text)
            want = [(hit.docnum, hit.score) for hit in expected.search(query, limit=50)]
            got = [(hit.docnum, hit.score) for hit in actual.search(query, limit=50)]
            assert got == want, text


def _assert_same(tmp_path: Path, records: list[Record], procs: int = 1) -> None:
    stock = _stock_build(tmp_path / "stock", records, parts=procs)
    fast = _fast_build(tmp_path / "fast", records, procs=procs)
    _assert_same_files(stock, fast)
    _assert_same_index(stock, fast)
    _assert_same_search(
        stock,
        fast,
        ["scheduling", "learning deep", '"deep models"', "title:caches", "author_names:akella"],
    )


# -- tests -----------------------------------------------------------------------------------
def test_fixture_records_give_whooshs_index(tmp_path: Path) -> None:
    _assert_same(tmp_path, list(FIXTURE_RECORDS))


def test_seed_corpus_gives_whooshs_index(tmp_path: Path) -> None:
    _assert_same(tmp_path, list(read_records([ROOT / "seeds"])))


@pytest.mark.skipif(not KAGGLE_SAMPLE.exists(), reason="no ../shared/data/arxiv-kaggle-sample")
def test_kaggle_sample_gives_whooshs_index(tmp_path: Path) -> None:
    _assert_same(tmp_path, list(read_records([KAGGLE_SAMPLE])))


def test_posting_lists_of_several_blocks_give_whooshs_index(tmp_path: Path) -> None:
    _assert_same(tmp_path, multi_block_records())


def test_two_worker_segments_give_whooshs_segments(tmp_path: Path) -> None:
    _assert_same(tmp_path, multi_block_records(), procs=2)


def test_large_shares_are_written_as_several_segments(tmp_path: Path, monkeypatch) -> None:
    # Bounded segments keep a writer's memory bounded; each worker writes its share in order.
    monkeypatch.setattr(writing, "MAX_SEGMENT_RECORDS", 40)
    records = multi_block_records()
    ranges = [
        (a, min(a + 40, share + 150)) for share in (0, 150) for a in range(share, share + 150, 40)
    ]
    stock = _stock_build(tmp_path / "stock", records, ranges=ranges)
    fast = _fast_build(tmp_path / "fast", records, procs=2)
    with fast.reader() as reader:
        assert len(reader.leaf_readers()) == len(ranges) == 8
    _assert_same_files(stock, fast)
    _assert_same_index(stock, fast)
    single = _fast_build(tmp_path / "single", records, procs=1)
    with single.reader() as reader:
        assert len(reader.leaf_readers()) == 8  # 300 records in ranges of 40
        assert reader.doc_count() == 300


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=_records())
def test_hostile_records_give_whooshs_index(tmp_path_factory, records: list[Record]) -> None:
    _assert_same(tmp_path_factory.mktemp("hostile"), records)


def test_storage_has_no_leftover_temporary_files(tmp_path: Path) -> None:
    _fast_build(tmp_path / "fast", multi_block_records(50), procs=2)
    leftovers = [name for name in FileStorage(str(tmp_path / "fast")).list() if "tmp" in name]
    assert leftovers == []


_KEYWORD_TEXT = st.text(alphabet=st.sampled_from(list("ab ,\t\u00e9\u3000x")), max_size=30)


@given(value=_KEYWORD_TEXT | st.lists(_KEYWORD_TEXT.filter(bool), max_size=6).map(",".join))
def test_keyword_items_are_whooshs_index_of_a_comma_separated_value(value: str) -> None:
    # Repeated, empty, blank and padded parts included: counts, order and weights as Whoosh's.
    for boost in (1.0, 2.5):
        field = fields.KEYWORD(commas=True, lowercase=False, scorable=False, field_boost=boost)
        assert segments._index_kind(field) is segments._IndexKind.COMMAS
        assert segments.keyword_items(value, boost) == list(field.index(value))


def test_the_schemas_fields_take_the_expected_index_paths() -> None:
    schema = build_schema()
    kinds = {name: segments._index_kind(schema[name]) for name in schema.names()}
    assert kinds["id"] is kinds["title_sort"] is segments._IndexKind.ID
    assert kinds["author"] is kinds["category"] is segments._IndexKind.COMMAS
    assert kinds["year"] is segments._IndexKind.OTHER  # NUMERIC: Whoosh's own index()
    lowercased = fields.KEYWORD(commas=True, lowercase=True)
    assert segments._index_kind(lowercased) is segments._IndexKind.OTHER
