"""Each document's position in title order, from the `title_sort` column of every segment."""

from __future__ import annotations

import bisect

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.segment_columns import leaf_column_bytes, release_mapped_pages

# Bytes of a title's sort key that order documents before titles are compared whole (a
# multiple of 8).
_TITLE_PREFIX = 24


def title_rank(reader: IndexReader, doc_count: int) -> np.ndarray:
    """Each document's position in title order (the `title_sort` column holds the keys), equal
    titles in document order.

    Every title held at once took more memory than the rest of a million-record table; the
    documents are ordered by the first _TITLE_PREFIX bytes of their keys instead (UTF-8 bytes
    order as str does), and only a run of documents whose prefixes tie reads its titles.
    """
    prefixes = np.zeros((doc_count, _TITLE_PREFIX), dtype=np.uint8)
    columns = []
    for leaf, offset in reader.leaf_readers():
        if not leaf.doc_count_all():
            continue
        keys = leaf_column_bytes(leaf, "title_sort")
        release_mapped_pages(leaf)
        padded = b"".join(key[:_TITLE_PREFIX].ljust(_TITLE_PREFIX, b"\0") for key in keys)
        prefixes[offset : offset + len(keys)] = np.frombuffer(padded, np.uint8).reshape(
            len(keys), _TITLE_PREFIX
        )
        columns.append((offset, leaf.column_reader("title_sort", translate=False)))
    words = prefixes.view(">u8")  # big-endian words compare as the bytes do
    del prefixes
    order = np.lexsort(
        [np.arange(doc_count), *(words[:, i] for i in reversed(range(words.shape[1])))]
    )
    ordered = words[order]
    tied = np.all(ordered[1:] == ordered[:-1], axis=1)
    del words, ordered
    if tied.any():
        starts = [offset for offset, _ in columns]

        def title(docnum: int) -> bytes:
            number = bisect.bisect_right(starts, docnum) - 1
            offset, column = columns[number]
            return column[docnum - offset]

        # Runs of ties: each i with tied[i] joins order[i + 1] to order[i]'s run.
        edges = np.flatnonzero(np.diff(np.concatenate(([0], tied.astype(np.int8), [0]))))
        for first, last in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
            run = order[first : last + 1].tolist()  # in document order already
            order[first : last + 1] = sorted(run, key=title)
    for leaf, _ in reader.leaf_readers():
        release_mapped_pages(leaf)  # the titles of ties, read again
    title_rank = np.empty(doc_count, dtype=np.int32)
    title_rank[order] = np.arange(doc_count, dtype=np.int32)
    return title_rank
