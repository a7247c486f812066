"""Build one Whoosh segment from documents, as Whoosh's SegmentWriter would, only faster.

Whoosh's writer analyses every text field through generators of Token objects, pushes each
posting as a tuple through a sorting pool, and writes the postings one method call at a time;
at ~344 postings a record that is most of a build's time. `SegmentBuilder` analyses title and
abstract once (analysis.py, identical to the schema's analyzers) and derives `content` and its
spelling words from the same words, keeps each field's postings in a dict of lists (documents
arrive in number order, so the lists are already sorted), and writes them with
segment_postings.py. Stored fields, field lengths and columns still go through Whoosh's own
per-document writer. The result is the segment Whoosh would write for the same documents, file
for file (tests/test_fast_writer.py).
"""

from __future__ import annotations

import pickle
from collections import defaultdict
from collections.abc import Iterator
from itertools import pairwise
from operator import itemgetter
from typing import Any

from whoosh.codec.whoosh3 import W3Segment
from whoosh.fields import Schema
from whoosh.system import pack_uint
from whoosh.util.numeric import length_to_byte

from searchsvc.backends.whoosh.analysis import name_words, text_words, token_count
from searchsvc.backends.whoosh.posting_arrays import (
    PostingArraysWriter,
    array_fields,
    sidecar_path,
)
from searchsvc.backends.whoosh.segment_postings import (
    Posting,
    SegmentPostingsWriter,
    values_packing,
)

# Fields analysed here instead of by Whoosh: their analyzers are the schema's text and name
# analyzers, which analysis.py reproduces. Every other field goes through its own `index()`.
TITLE, ABSTRACT = "title", "abstract"
COMBINED_FIELD = "content"  # title + "\n" + abstract (documents.to_document)
NAME_FIELD = "author_names"
# Values of other fields repeat across records (years, categories): their `index()` output is
# cached, up to this many values a field.
_CACHED_VALUES_MAX = 4096
_CACHED_POSITION_LISTS = 200_000

Postings = dict[Any, list[Posting]]


class _PositionValues:
    """Positions-format posting values (formats.Positions.encode), cached.

    Sharing one bytes object between postings is safe: segment_postings copies repeats within a
    block so the pickles stay Whoosh's.
    """

    def __init__(self) -> None:
        self.single: list[bytes] = []
        self._many: dict[tuple[int, ...], bytes] = {}

    def reserve(self, positions: int) -> list[bytes]:
        """The cached single-position values, covering positions below `positions`."""
        single = self.single
        if positions > len(single):
            single.extend(
                pack_uint(1) + pickle.dumps([p], 2) for p in range(len(single), positions)
            )
        return single

    def encode_many(self, positions: list[int]) -> bytes:
        key = tuple(positions)
        value = self._many.get(key)
        if value is None:
            deltas = [positions[0], *[b - a for a, b in pairwise(positions)]]
            value = pack_uint(len(deltas)) + pickle.dumps(deltas, 2)
            if len(self._many) >= _CACHED_POSITION_LISTS:
                self._many.clear()
            self._many[key] = value
        return value


def _positions_by_term(terms: list[str], first: int) -> dict[str, list[int]]:
    # Insertion order is first-occurrence order, as in Positions.word_values: the spelling
    # field's posting value depends on which term comes last.
    positions: dict[str, list[int]] = {}
    get = positions.get
    for position, term in enumerate(terms, first):
        found = get(term)
        if found is None:
            positions[term] = [position]
        else:
            found.append(position)
    return positions


class _Text:
    """One analysed text: its terms' positions in first-occurrence order, and its words."""

    __slots__ = ("_kept", "_stemmed", "end", "length", "positions")

    def __init__(self, positions, length: int, end: int, kept, stemmed: bool = True) -> None:
        self.positions: dict[str, list[int]] = positions
        self.length = length  # kept words (the field length)
        self.end = end  # one past the last position
        self._kept = kept  # (word, stem) pairs, or words when not stemmed
        self._stemmed = stemmed

    @classmethod
    def of(cls, words, stemmed: bool = True) -> _Text:
        """From analysis.text_words output, or (0, words) of an unstemmed text."""
        first, kept = words
        terms = list(map(itemgetter(1), kept)) if stemmed else kept
        positions = _positions_by_term(terms, first)
        return cls(positions, len(terms), first + len(terms), kept, stemmed)

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
        positions = dict(title_text.positions)
        for term, places in abstract_text.positions.items():
            shifted = [place + shift for place in places]
            before = positions.get(term)
            positions[term] = shifted if before is None else before + shifted
        kept = title_text._kept + abstract_text._kept
        end = abstract_text.end + shift if abstract_text.length else title_text.end
        return cls(positions, title_text.length + abstract_text.length, end, kept)

    def words(self) -> set[str]:
        """The text's distinct unstemmed words (what Whoosh's spelling field gets)."""
        return set(map(itemgetter(0), self._kept)) if self._stemmed else set(self._kept)


class SegmentBuilder:
    """Collects documents (numbered from 0) for one new segment, then writes it."""

    def __init__(self, storage, schema: Schema, segment: W3Segment) -> None:
        self._storage = storage
        self._schema = schema
        self._segment = segment
        self._per_doc = segment.codec().per_document_writer(storage, segment)
        self._postings: dict[str, Postings] = defaultdict(lambda: defaultdict(list))
        # Spelling field -> word -> the posting values Whoosh gives it (see _add_spelling).
        self._spelling: dict[str, dict[str, list[bytes]]] = defaultdict(lambda: defaultdict(list))
        # Field -> per document, the field's length byte (as in its length column).
        self._length_bytes: dict[str, bytearray] = defaultdict(bytearray)
        self._index_cache: dict[str, dict[Any, list]] = defaultdict(dict)
        self._values = _PositionValues()
        self._spelled = {
            name for name in (TITLE, ABSTRACT, COMBINED_FIELD, NAME_FIELD)
            if name in schema and schema[name].separate_spelling()
        }  # fmt: skip
        self.doc_count = 0

    # -- adding documents ------------------------------------------------------------------
    def add(self, document: dict[str, Any]) -> None:
        """Add one document (field name -> value, as for `IndexWriter.add_document`)."""
        schema = self._schema
        docnum = self.doc_count
        per_doc = self._per_doc
        lengths = self._invert_text_fields(docnum, document)
        per_doc.start_doc(docnum)
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
            per_doc.add_field(name, field, value if field.stored else None, length)
            column = field.column_type
            if column:
                per_doc.add_column_value(name, column, field.to_column_value(value))
        per_doc.finish_doc()
        self.doc_count = docnum + 1

    def _invert_text_fields(self, docnum: int, document: dict[str, Any]) -> dict[str, int]:
        """Postings of the analysed text fields; returns their lengths."""
        lengths: dict[str, int] = {}
        title, abstract = document.get(TITLE), document.get(ABSTRACT)
        title_text = abstract_text = None
        if title is not None:
            title_text = _Text.of(text_words(title))
            lengths[TITLE] = self._add_text(docnum, TITLE, title_text)
        if abstract is not None:
            abstract_text = _Text.of(text_words(abstract))
            lengths[ABSTRACT] = self._add_text(docnum, ABSTRACT, abstract_text)
        content = document.get(COMBINED_FIELD)
        if content is not None:
            if title_text and abstract_text and content == f"{title}\n{abstract}":
                content_text = _Text.joined(title, title_text, abstract_text)
            else:
                content_text = _Text.of(text_words(content))
            lengths[COMBINED_FIELD] = self._add_text(docnum, COMBINED_FIELD, content_text)
        names = document.get(NAME_FIELD)
        if names is not None:
            name_text = _Text.of((0, name_words(names)), stemmed=False)
            lengths[NAME_FIELD] = self._add_text(docnum, NAME_FIELD, name_text)
        return lengths

    def _add_text(self, docnum: int, name: str, text: _Text) -> int:
        """Positions postings (and spelling words) of one text; returns its length."""
        if not text.length:
            return 0
        postings = self._postings[name]
        single = self._values.reserve(text.end)
        encode_many = self._values.encode_many
        value = b""
        for term, positions in text.positions.items():
            if len(positions) == 1:
                value = single[positions[0]]
                postings[term].append((docnum, 1, value))
            else:
                value = encode_many(positions)
                postings[term].append((docnum, len(positions), value))
        self._set_length(name, docnum, text.length)
        if name in self._spelled:
            # Whoosh posts the spelling words with the last posting value its loop saw.
            self._add_spelling(name, text.words(), value)
        return text.length

    def _add_spelling(self, name: str, words: set[str], value: bytes) -> None:
        # Whoosh posts every spelling word as (document 0, weight 1, value), the value being
        # whatever its loop variable last held: the field's last posting value.
        spelling = self._spelling[self._schema[name].spelling_fieldname(name)]
        for word in words:
            spelling[word].append(value)

    def _invert_by_field(self, docnum: int, name: str, field, value) -> int:
        """Postings of any other field, from the field's own `index()`; returns the length."""
        cache = self._index_cache[name]
        try:
            items = cache.get(value)
        except TypeError:  # unhashable (a list)
            items, cache = None, None
        if items is None:
            items = list(field.index(value))
            if cache is not None and len(cache) < _CACHED_VALUES_MAX:
                cache[value] = items
        postings = self._postings[name]
        length = 0
        for term, freq, weight, value_bytes in items:
            length += freq
            postings[term].append((docnum, weight, value_bytes))
        if not field.scorable:
            length = 0
        if length:
            self._set_length(name, docnum, length)
        if field.separate_spelling() and items:
            self._add_spelling(name, set(field.spellable_words(value)), items[-1][3])
        return length

    def _set_length(self, name: str, docnum: int, length: int) -> None:
        length_bytes = self._length_bytes[name]
        if len(length_bytes) < docnum:
            length_bytes.extend(bytes(docnum - len(length_bytes)))
        length_bytes.append(length_to_byte(length))

    # -- writing ---------------------------------------------------------------------------
    def finish(self) -> W3Segment:
        """Write the segment's files (as one compound file) and return the segment."""
        self._per_doc.close()
        segment = self._segment
        segment.set_doc_count(self.doc_count)
        writer = SegmentPostingsWriter(self._storage, segment)
        # The postings pass through here in order anyway: saving them as flat arrays too
        # (posting_arrays.py) costs little, and spares searches decoding Whoosh's blocks.
        arrays = PostingArraysWriter()
        array_names = set(array_fields(self._schema))
        # Only fields with postings: Whoosh numbers a field in the term index when it meets
        # the field's first posting.
        names = {
            name for name, terms in (*self._postings.items(), *self._spelling.items()) if terms
        }
        for name in sorted(names):
            field = self._schema[name]
            packing = values_packing(field.format.fixed_value_size())
            if name in self._spelling:
                spelling = self._spelling.pop(name)
                words = (
                    (word.encode("utf-8"), sorted(spelling[word])) for word in sorted(spelling)
                )
                writer.add_spelling_field(name, words)
            else:
                length_bytes = self._length_bytes.get(name) if field.scorable else None
                terms = _field_terms(self._postings.pop(name))
                if name in array_names:
                    terms = arrays.record(name, terms)
                writer.add_field(name, terms, packing, length_bytes)
        writer.close()
        if segment.should_assemble():
            # Before the arrays file: the compound file takes every file named after the segment.
            segment.create_compound_file(self._storage)
        folder = getattr(self._storage, "folder", None)
        if folder:  # a directory to map the file from (not a RamStorage)
            segment_id = segment.segment_id()
            arrays.write(sidecar_path(folder, segment_id), segment_id, self.doc_count)
        return segment


def _field_terms(postings: Postings) -> Iterator[tuple[bytes, list[Posting]]]:
    # Whoosh orders terms by their UTF-8 bytes; str order is code point order, which UTF-8
    # preserves, so sorting str keys and encoding them after gives the same order.
    for term in sorted(postings):
        yield (term.encode("utf-8") if isinstance(term, str) else term), postings[term]


def _spelling_words(spelling: dict[str, list[bytes]]) -> Iterator[tuple[bytes, list[bytes]]]:
    # Whoosh's pool sorts the postings, all (0, 1, value): the values come in order.
    for word in sorted(spelling):
        yield word.encode("utf-8"), sorted(spelling[word])
