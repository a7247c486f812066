"""Build one Whoosh segment from documents, as Whoosh's SegmentWriter would, only faster.

Whoosh's writer analyses every text field through generators of Token objects, pushes each
posting as a tuple through a sorting pool, and writes the postings one method call at a time;
with a posting per word, that is most of a build's time. `SegmentBuilder` analyses title and
abstract once (analysis.py, identical to the schema's analyzers) and derives `content` and its
spelling words from the same words. The positions fields (title, abstract, content, author
names) and the spelling words keep their tokens as runs of terms, turned into arrays and then
posting blocks in one pass per field at the end (in C when the extension is built, see
segment_postings.py); other fields keep the items of their own `index()` per document, turned
into arrays the same way. Stored fields, field lengths and columns go to Whoosh's own
per-document writer, in bulk at the end (document_columns.py). The result is the segment Whoosh
would write for the same documents, but for how posting blocks are pickled and compressed and
stored fields compressed (segment_postings.py, document_columns.py), which Whoosh reads as its
own (tests/whoosh/test_fast_writer.py).
"""

from __future__ import annotations

import enum
import itertools
from array import array
from collections import defaultdict
from operator import itemgetter
from typing import Any

import numpy as np
from whoosh import fields, formats
from whoosh.analysis import IDTokenizer, RegexTokenizer, StripFilter
from whoosh.codec.whoosh3 import W3Segment
from whoosh.fields import Schema
from whoosh.system import pack_uint
from whoosh.util.numeric import length_to_byte

from searchsvc.backends.whoosh.accel.posting_arrays_file import (
    PostingArraysWriter,
    array_fields,
    sidecar_path,
)
from searchsvc.backends.whoosh.analysis import name_words, text_words, token_count
from searchsvc.backends.whoosh.build.document_columns import DocumentColumns
from searchsvc.backends.whoosh.build.segment_postings import (
    DocValues,
    FieldItems,
    FieldTokens,
    SegmentPostingsWriter,
    values_packing,
)

# Fields analysed here instead of by Whoosh: their analyzers are the schema's text and name
# analyzers, which analysis.py reproduces. Every other field goes through its own `index()`.
TITLE, ABSTRACT = "title", "abstract"
COMBINED_FIELD = "content"  # title + "\n" + abstract (documents.to_document)
NAME_FIELD = "author_names"
# Values of other fields repeat across records (years, categories, author names): their
# `index()` output is cached, up to this many values a field (then the cache starts again).
_CACHED_VALUES_MAX = 100_000


class _Texts:
    """Every analysed text of a segment, as the list of words the analysis made, once each.

    A word is a (word, stem) pair of stemmed text or a word of an author-name text. Several
    fields take the same text (the title feeds title and content, and its words feed the
    spelling field): they refer to it by number. At the end every text is mapped to word ids
    in one pass, and terms are each word's stem (text fields) or word (spelling fields).
    """

    STEM, WORD = 1, 0

    def __init__(self) -> None:
        self._texts: list[list] = []
        self._resolved: tuple[np.ndarray, np.ndarray, np.ndarray, list] | None = None
        self._terms: dict[int, tuple[list[str], np.ndarray]] = {}

    def add(self, words: list) -> int:
        self._texts.append(words)
        return len(self._texts) - 1

    def resolve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(word ids of all texts back to back, each text's start in them, each one's length)."""
        if self._resolved is None:
            texts, self._texts = self._texts, []
            lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
            ids_of: defaultdict[Any, int] = defaultdict(itertools.count().__next__)
            ids = np.fromiter(
                map(ids_of.__getitem__, itertools.chain.from_iterable(texts)),
                dtype=np.int32,
                count=int(lengths.sum()),
            )
            self._resolved = (ids, np.cumsum(lengths) - lengths, lengths, list(ids_of))
        ids, starts, lengths, _ = self._resolved
        return ids, starts, lengths

    def terms(self, part: int) -> tuple[list[str], np.ndarray]:
        """The distinct terms (stems or words) in order, and each word id's term's rank."""
        known = self._terms.get(part)
        if known is None:
            self.resolve()
            assert self._resolved is not None
            words = self._resolved[3]  # in id order
            terms_of = [word[part] if type(word) is tuple else word for word in words]
            # Whoosh orders terms by their UTF-8 bytes; str order is code point order, which
            # UTF-8 preserves, so sorting strs and encoding them after gives the same order.
            distinct = sorted(set(terms_of))
            rank = dict(zip(distinct, range(len(distinct)), strict=True))
            ranks = np.fromiter(map(rank.__getitem__, terms_of), np.int32, len(terms_of))
            known = self._terms[part] = (distinct, ranks)
        return known


class _FieldTokens:
    """A positions field's (or spelling field's) tokens: runs of words at consecutive
    positions, each one of the segment's texts (`_Texts`).

    Documents arrive in number order and each text's positions ascend, so grouping the tokens
    by term (stably) gives every term's postings in order with their positions: the encoders
    (segment_postings.py) do that in one pass at the end.
    """

    def __init__(self) -> None:
        self._texts = array("q")  # per run: its text's number
        self._docs = array("i")
        self._firsts = array("i")  # per run: the position of its first word

    def add(self, docnum: int, text: int, first: int) -> None:
        self._texts.append(text)
        self._docs.append(docnum)
        self._firsts.append(first)

    def __bool__(self) -> bool:
        return bool(self._texts)

    def arrays(self, texts: _Texts, part: int) -> tuple[list[bytes], FieldTokens]:
        """The field's terms in byte order, and its tokens (their terms as ranks in that order)."""
        ids, text_starts, text_lengths = texts.resolve()
        numbers = np.frombuffer(self._texts, dtype=np.int64)
        lengths = text_lengths[numbers]
        run_offsets = np.cumsum(lengths) - lengths
        # Token i of a run starting at token s (of the field) is word start + (i - s) of its
        # text, at position first + (i - s). Arrays of one entry a token are the largest a
        # build holds: int32 where the counts fit, each freed once used.
        index_type: type[np.signedinteger] = np.int32 if len(ids) < 2**31 else np.int64
        within: np.ndarray = np.arange(int(lengths.sum()), dtype=index_type)
        np.subtract(within, np.repeat(run_offsets.astype(index_type), lengths), out=within)
        at = np.repeat(text_starts[numbers].astype(index_type), lengths)
        at += within
        words = ids[at]
        del at
        distinct, rank_of_word = texts.terms(part)
        term_ranks = rank_of_word[words]
        del words
        present = np.zeros(len(distinct), dtype=bool)
        present[term_ranks] = True
        field_rank = np.cumsum(present, dtype=np.int32) - 1  # among the field's own terms
        positions = np.repeat(np.frombuffer(self._firsts, dtype=np.int32), lengths)
        positions += within.astype(np.int32, copy=False)
        del within
        tokens = FieldTokens(
            field_rank[term_ranks],
            np.repeat(np.frombuffer(self._docs, dtype=np.int32), lengths),
            positions,
        )
        used = np.flatnonzero(present).tolist()
        return [distinct[rank].encode("utf-8") for rank in used], tokens


class _FieldItems:
    """Another field's postings: per document, the (term, frequency, weight, value) items of
    its `index()` (lists shared between documents with the same value)."""

    def __init__(self) -> None:
        self._runs: list[list[tuple[bytes, int, float, bytes]]] = []
        self._docs = array("i")  # per run

    def add(self, docnum: int, items: list[tuple[bytes, int, float, bytes]]) -> None:
        if items:
            self._runs.append(items)
            self._docs.append(docnum)

    def __bool__(self) -> bool:
        return bool(self._runs)

    def arrays(self) -> tuple[list[bytes], FieldItems]:
        """The field's terms in byte order, and its postings (terms as ranks in that order)."""
        runs, self._runs = self._runs, []
        lengths = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
        total = int(lengths.sum())
        ids_of: defaultdict[bytes, int] = defaultdict(itertools.count().__next__)
        every = itertools.chain.from_iterable
        ids = np.fromiter(
            map(ids_of.__getitem__, map(itemgetter(0), every(runs))), dtype=np.int32, count=total
        )
        terms = list(ids_of)
        order = sorted(range(len(terms)), key=terms.__getitem__)
        rank_of_id = np.empty(len(terms), dtype=np.int32)
        rank_of_id[order] = np.arange(len(terms), dtype=np.int32)
        items = FieldItems(
            rank_of_id[ids],
            np.repeat(np.frombuffer(self._docs, dtype=np.int32), lengths),
            np.fromiter(map(itemgetter(2), every(runs)), dtype=np.float64, count=total),
            [value for run in runs for _, _, _, value in run],
        )
        return [terms[number] for number in order], items


class _Text:
    """One analysed text: runs of words at consecutive positions (texts of `_Texts`)."""

    __slots__ = ("end", "length", "runs")

    def __init__(self, runs: list[tuple[int, int]], length: int, end: int) -> None:
        self.runs = runs  # (text number, position of its first word), non-empty texts only
        self.length = length  # kept words (the field length)
        self.end = end  # one past the last position

    @classmethod
    def of(cls, texts: _Texts, words) -> _Text:
        """From analysis.text_words output, or (0, words) of an unstemmed text."""
        first, kept = words
        runs = [(texts.add(kept), first)] if kept else []
        return cls(runs, len(kept), first + len(kept))

    @classmethod
    def joined(cls, title: str, title_text: _Text, abstract_text: _Text) -> _Text:
        """The text title + "\\n" + abstract, from the title's and the abstract's analysis.

        The newline joins no word across it, so the tokens are the title's then the
        abstract's; the stop filter numbers kept words on from the first kept one, so the
        abstract's words follow the title's last kept word or, when the title has only stop
        words, keep their places after all of the title's tokens.
        """
        abstract_first = abstract_text.end - abstract_text.length
        shift = title_text.end - abstract_first if title_text.length else token_count(title)
        runs = title_text.runs + [(text, first + shift) for text, first in abstract_text.runs]
        end = abstract_text.end + shift if abstract_text.length else title_text.end
        return cls(runs, title_text.length + abstract_text.length, end)


class SegmentBuilder:
    """Collects documents (numbered from 0) for one new segment, then writes it."""

    def __init__(self, storage, schema: Schema, segment: W3Segment) -> None:
        self._storage = storage
        self._schema = schema
        self._segment = segment
        self._per_doc = segment.codec().per_document_writer(storage, segment)
        self._columns = DocumentColumns()
        self._items: dict[str, _FieldItems] = defaultdict(_FieldItems)
        # Spelling field -> word -> the posting values Whoosh gives it (see _add_spelling).
        self._spelling: dict[str, dict[str, list[bytes]]] = defaultdict(lambda: defaultdict(list))
        # Field -> per document, the field's length byte (as in its length column).
        self._length_bytes: dict[str, bytearray] = defaultdict(bytearray)
        self._index_cache: dict[str, dict[Any, list]] = defaultdict(dict)
        self._index_kinds: dict[str, _IndexKind] = {}
        self._texts = _Texts()
        self._tokens: dict[str, _FieldTokens] = defaultdict(_FieldTokens)
        for name in (TITLE, ABSTRACT, COMBINED_FIELD, NAME_FIELD):
            # The encoders weigh a posting by its frequency: the Positions format's weight
            # under a field boost of 1.
            field_format = schema[name].format if name in schema else None
            if field_format is not None and not (
                isinstance(field_format, formats.Positions) and field_format.field_boost == 1.0
            ):
                raise ValueError(f"field {name!r} must keep positions, unboosted, to be built here")
        # Analysed text fields with spelling words: spelling field -> the words' occurrences.
        self._spelled = {
            name for name in (TITLE, ABSTRACT, COMBINED_FIELD, NAME_FIELD)
            if name in schema and schema[name].separate_spelling()
        }  # fmt: skip
        for name in self._spelled:
            # A spelling field is written after its text field (fields go in name order), whose
            # posting values it takes; and its words are a stemmed text's (word, stem) pairs.
            if name == NAME_FIELD or schema[name].spelling_fieldname(name) < name:
                raise ValueError(f"spelling words of field {name!r} cannot be built here")
        self._spelling_words: dict[str, _FieldTokens] = defaultdict(_FieldTokens)
        self.doc_count = 0

    # -- adding documents ------------------------------------------------------------------
    def add(self, document: dict[str, Any]) -> None:
        """Add one document (field name -> value, as for `IndexWriter.add_document`)."""
        schema = self._schema
        docnum = self.doc_count
        columns = self._columns
        lengths = self._invert_text_fields(docnum, document)
        stored = {}
        for name in sorted(document):
            value = document[name]
            if value is None:
                continue
            field = schema[name]
            if name in lengths:
                length = lengths[name]
            elif field.indexed:
                length = self._invert_by_field(docnum, name, field, value)
            else:
                length = 0
            if field.stored:
                stored[name] = value
            if length:
                columns.add_length(name, length)
            column = field.column_type
            if column:
                columns.add_value(docnum, name, column, field.to_column_value(value))
        columns.add_stored(stored)
        self.doc_count = docnum + 1

    def _invert_text_fields(self, docnum: int, document: dict[str, Any]) -> dict[str, int]:
        """Postings of the analysed text fields; returns their lengths."""
        lengths: dict[str, int] = {}
        title, abstract = document.get(TITLE), document.get(ABSTRACT)
        title_text = abstract_text = None
        if title is not None:
            title_text = _Text.of(self._texts, text_words(title))
            lengths[TITLE] = self._add_text(docnum, TITLE, title_text)
        if abstract is not None:
            abstract_text = _Text.of(self._texts, text_words(abstract))
            lengths[ABSTRACT] = self._add_text(docnum, ABSTRACT, abstract_text)
        content = document.get(COMBINED_FIELD)
        if content is not None:
            if (
                title is not None
                and abstract is not None
                and title_text
                and abstract_text
                and content == f"{title}\n{abstract}"
            ):
                content_text = _Text.joined(title, title_text, abstract_text)
            else:
                content_text = _Text.of(self._texts, text_words(content))
            lengths[COMBINED_FIELD] = self._add_text(docnum, COMBINED_FIELD, content_text)
        names = document.get(NAME_FIELD)
        if names is not None:
            name_text = _Text.of(self._texts, (0, name_words(names)))
            lengths[NAME_FIELD] = self._add_text(docnum, NAME_FIELD, name_text)
        return lengths

    def _add_text(self, docnum: int, name: str, text: _Text) -> int:
        """Positions postings (and spelling words) of one text; returns its length."""
        if not text.length:
            return 0
        tokens = self._tokens[name]
        for number, first in text.runs:
            tokens.add(docnum, number, first)
        self._set_length(name, docnum, text.length)
        if name in self._spelled:
            spelling = self._spelling_words[self._schema[name].spelling_fieldname(name)]
            for number, _ in text.runs:
                spelling.add(docnum, number, 0)  # positions unused
        return text.length

    def _add_spelling(self, name: str, words: set[str], value: bytes) -> None:
        # Whoosh posts every spelling word as (document 0, weight 1, value), the value being
        # whatever its loop variable last held: the field's last posting value.
        spelling = self._spelling[self._schema[name].spelling_fieldname(name)]
        for word in words:
            spelling[word].append(value)

    def _invert_by_field(self, docnum: int, name: str, field, value) -> int:
        """Postings of any other field, from the field's own `index()`; returns the length."""
        items = self._index(name, field, value)
        self._items[name].add(docnum, items)
        length = sum(map(itemgetter(1), items)) if field.scorable else 0
        if length:
            self._set_length(name, docnum, length)
        if field.separate_spelling() and items:
            self._add_spelling(name, set(field.spellable_words(value)), items[-1][3])
        return length

    def _index(self, name: str, field, value) -> list[tuple[bytes, int, float, bytes]]:
        """`field.index(value)`: cached, and for two common kinds of field done here.

        A whole-value ID field gives its value as the one term; a comma-separated keyword
        field (author lists, whose names are mostly new to the cache) its stripped parts with
        their counts. Both as Whoosh's analysis and formats give them
        (tests/whoosh/test_fast_writer.py compares the postings, tests/whoosh/test_analysis.py
        the items).
        """
        kind = self._index_kinds.get(name)
        if kind is None:
            kind = self._index_kinds[name] = _index_kind(field)
        is_text = isinstance(value, str)
        if kind is _IndexKind.ID and is_text:
            return [(value.encode("utf-8"), 1, field.format.field_boost, b"")]
        cache = self._index_cache[name]
        try:
            items = cache.get(value)
        except TypeError:  # unhashable (a list)
            return list(field.index(value))
        if items is None:
            if kind is _IndexKind.COMMAS and is_text:
                items = keyword_items(value, field.format.field_boost)
            else:
                items = list(field.index(value))
            if len(cache) >= _CACHED_VALUES_MAX:
                cache.clear()
            cache[value] = items
        return items

    def _set_length(self, name: str, docnum: int, length: int) -> None:
        length_bytes = self._length_bytes[name]
        if len(length_bytes) < docnum:
            length_bytes.extend(bytes(docnum - len(length_bytes)))
        length_bytes.append(length_to_byte(length))

    # -- writing ---------------------------------------------------------------------------
    def finish(self) -> W3Segment:
        """Write the segment's files (as one compound file) and return the segment."""
        self._columns.write(self._per_doc, self.doc_count, self._length_bytes)
        self._per_doc.close()
        segment = self._segment
        segment.set_doc_count(self.doc_count)
        writer = SegmentPostingsWriter(self._storage, segment)
        # The postings pass through here in order anyway: saving them as flat arrays too
        # (accel/posting_arrays_file.py) costs little, and spares searches decoding Whoosh's blocks.
        arrays = PostingArraysWriter()
        array_names = set(array_fields(self._schema))
        # Only fields with postings: Whoosh numbers a field in the term index when it meets
        # the field's first posting.
        names = {
            name for name, terms in (*self._items.items(), *self._spelling.items()) if terms
        } | {
            name
            for name, tokens in (*self._tokens.items(), *self._spelling_words.items())
            if tokens
        }
        if self._spelling.keys() & self._spelling_words.keys():
            raise ValueError("a spelling field has words from analysed and from other fields")
        # Spelling field -> each document's posting value of its text field (see below).
        last_values: dict[str, DocValues | None] = {}
        for name in sorted(names):
            field = self._schema[name]
            packing = values_packing(field.format.fixed_value_size())
            if name in self._tokens:
                length_bytes = self._length_bytes.get(name) if field.scorable else None
                terms, tokens = self._tokens.pop(name).arrays(self._texts, _Texts.STEM)
                # Whoosh's loop over a text's terms (in first-occurrence order) posts the text's
                # spelling words with the value its loop variable last held: the posting value
                # of the term that occurs first last.
                spelled = name in self._spelled
                written = writer.add_positions_field(
                    name, terms, tokens, self.doc_count, length_bytes, last_values=spelled
                )
                if spelled:
                    last_values[field.spelling_fieldname(name)] = written.last_values
                if name in array_names:
                    arrays.add_field(name, terms, written.ends, written.docs, written.weights)
            elif name in self._spelling_words:
                words, tokens = self._spelling_words.pop(name).arrays(self._texts, _Texts.WORD)
                values = last_values.pop(name)
                assert values is not None  # its text field was written first, with values
                writer.add_spelling_words(name, words, tokens, values)
            elif name in self._spelling:
                spelling = self._spelling.pop(name)
                spelled_words = (
                    (word.encode("utf-8"), sorted(spelling[word])) for word in sorted(spelling)
                )
                writer.add_spelling_field(name, spelled_words)
            else:
                length_bytes = self._length_bytes.get(name) if field.scorable else None
                terms, items = self._items.pop(name).arrays()
                written = writer.add_items_field(
                    name, terms, items, packing, self.doc_count, length_bytes
                )
                if name in array_names:
                    arrays.add_field(name, terms, written.ends, written.docs, written.weights)
        writer.close()
        if segment.should_assemble():
            # Before the arrays file: the compound file takes every file named after the segment.
            segment.create_compound_file(self._storage)
        folder = getattr(self._storage, "folder", None)
        if folder:  # a directory to map the file from (not a RamStorage)
            segment_id = segment.segment_id()
            arrays.write(sidecar_path(folder, segment_id), segment_id, self.doc_count)
        return segment


class _IndexKind(enum.Enum):
    ID = "a whole-value ID field"
    COMMAS = "a comma-separated keyword field"
    OTHER = "any other field"


def _index_kind(field) -> _IndexKind:
    boost = getattr(field.format, "field_boost", None)
    if (
        type(field) is fields.ID
        and type(field.analyzer) is IDTokenizer
        and type(field.format) is formats.Existence
        and isinstance(boost, float)
    ):
        return _IndexKind.ID
    if _splits_on_commas(field) and type(field.format) is formats.Frequency:
        return _IndexKind.COMMAS
    return _IndexKind.OTHER


def keyword_items(value: str, field_boost: float) -> list[tuple[bytes, int, float, bytes]]:
    """KEYWORD(commas=True)'s `index(value)`: the runs of non-commas, each stripped (an empty
    one too), counted, in the order first met; Frequency format values and weights."""
    counts: dict[str, int] = {}
    for part in value.split(","):
        if part:
            word = part.strip()
            counts[word] = counts.get(word, 0) + 1
    return [
        (word.encode("utf-8"), count, float(count) * field_boost, pack_uint(count))
        for word, count in counts.items()
    ]


def _splits_on_commas(field) -> bool:
    """Whether the field's analysis is KEYWORD(commas=True)'s: runs of non-commas, stripped."""
    analyzer = field.analyzer
    parts = getattr(analyzer, "items", None)
    return (
        isinstance(field, fields.KEYWORD)
        and parts is not None
        and len(parts) == 2
        and isinstance(parts[0], RegexTokenizer)
        and parts[0].expression.pattern == "[^,]+"
        and not parts[0].gaps
        and type(parts[1]) is StripFilter
    )
