"""The records' vectors of one snapshot as one int8 matrix by document number, and the search
for the nearest of them.

Each document keeps its vector in the `vector` column (documents.py): it travels with the
document through updates and segment merges like any stored value, so nothing has to carry it
forward. A snapshot reads the column of every segment once (the first semantic or hybrid search
on it) into a matrix; documents without a vector (an index built without them, or deleted) get
a zero row and are never returned as neighbours.

Nearest records are found exactly (one scan of the allowed vectors) unless a segment is large
(GRAPH_MIN_DOCS) and the filters leave many of its documents: then its HNSW graph, a file beside
the segment (`<segment id>.vectorgraph`, derived like the posting arrays: written by builds and
updates, deleted by Whoosh with its segment, and a missing or damaged one means an exact scan),
proposes candidates, OVERSAMPLE times more than needed for the share of the segment the filters
allow, and they are scored exactly. Too few allowed candidates: the segment is scanned exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.posting_arrays_file import segment_folder
from searchsvc.backends.whoosh.accel.segment_columns import leaf_column_bytes
from searchsvc.backends.whoosh.accel.top_k import best_positions
from searchsvc.backends.whoosh.documents import VECTOR_COLUMN
from searchsvc.embeddings import quantise
from searchsvc.embeddings.ann import Graph, write_graph
from searchsvc.embeddings.scan import cosines

GRAPH_EXTENSION = ".vectorgraph"
# Segments with fewer documents are scanned: a scan of 50,000 int8 vectors takes a few ms.
GRAPH_MIN_DOCS = 50_000
# A segment whose filters allow at most this many documents is scanned too (the graph would
# have to propose most of the segment to find enough of them).
SCAN_MAX_ALLOWED = 20_000
# Candidates asked of a graph: this many times those needed, scaled up by the filters' share.
OVERSAMPLE = 2.0


@dataclass(frozen=True)
class SegmentVectors:
    offset: int
    count: int
    graph: Graph | None


@dataclass(frozen=True)
class VectorTable:
    """int8 vectors of every document number, which documents have one, and per segment its
    graph (if any)."""

    vectors: np.ndarray  # [doc_count_all, dimensions] int8
    present: np.ndarray  # [doc_count_all] bool
    segments: tuple[SegmentVectors, ...] = field(default=())

    @classmethod
    def read(cls, reader: IndexReader, dimensions: int) -> VectorTable:
        count = reader.doc_count_all()
        vectors = np.zeros((count, dimensions), dtype=np.int8)
        present = np.zeros(count, dtype=bool)
        segments = []
        for leaf, offset in reader.leaf_readers():
            size = leaf.doc_count_all()
            if not size or not leaf.has_column(VECTOR_COLUMN):
                continue
            keys, matrix = segment_vectors(leaf, dimensions)
            vectors[offset + keys] = matrix
            present[offset + keys] = True
            path = graph_path(leaf)
            graph = None
            if path is not None and size >= GRAPH_MIN_DOCS:
                graph = Graph.open(path, dimensions, len(keys))
            segments.append(SegmentVectors(offset, size, graph))
        return cls(vectors, present, tuple(segments))

    def cosines_of(self, query: np.ndarray, docnums: np.ndarray) -> np.ndarray:
        """The cosine of each of `docnums` with the unit float `query`."""
        return cosines(self.vectors[docnums], query)

    def nearest(
        self, query: np.ndarray, allowed: np.ndarray, count: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The `count` allowed documents with vectors nearest `query` and their cosines,
        nearest first (ties: lower document number first)."""
        allowed = allowed & self.present
        found: list[tuple[np.ndarray, np.ndarray]] = []
        parts = [
            (part, int(np.count_nonzero(allowed[part.offset : part.offset + part.count])))
            for part in self.segments
        ]
        if not any(part.graph is not None and n > SCAN_MAX_ALLOWED for part, n in parts):
            # No graph to ask: one scan of every vector (one call is faster than one a segment).
            parts = [(SegmentVectors(0, len(self.present), None), int(np.count_nonzero(allowed)))]
        for part, allowed_count in parts:
            if not allowed_count:
                continue
            window = slice(part.offset, part.offset + part.count)
            local = allowed[window]
            if part.graph is not None and allowed_count > SCAN_MAX_ALLOWED:
                share = allowed_count / part.count
                keys = part.graph.candidates(quantise(query), math.ceil(count * OVERSAMPLE / share))
                keys = keys[(keys >= 0) & (keys < part.count)]
                keys = keys[local[keys]] + part.offset
                if len(keys) >= min(count, allowed_count):
                    found.append((keys, self.cosines_of(query, keys)))
                    continue
            if allowed_count * 2 > part.count:
                # Most of the segment: scan it in place (no copy of its vectors), rule out the
                # documents not allowed, then pick.
                scores = cosines(self.vectors[window], query)
                scores[~local] = -np.inf
                rows = best_positions(scores, count)
                rows = rows[scores[rows] > -np.inf]
                found.append((rows + part.offset, scores[rows]))
            else:
                rows = np.flatnonzero(local) + part.offset
                scores = self.cosines_of(query, rows)
                keep = best_positions(scores, count)
                found.append((rows[keep], scores[keep]))
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        candidates = np.concatenate([docnums for docnums, _ in found])
        scores = np.concatenate([scores for _, scores in found])
        keep = best_positions(scores, count)
        candidates, scores = candidates[keep], scores[keep]
        # Every candidate scoring at least the count-th best is here, ties included, so this
        # order decides ties by document number.
        order = np.lexsort((candidates, -scores))[:count]
        return candidates[order], scores[order]


def segment_vectors(leaf, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
    """A segment's documents that have a vector (local numbers) and their int8 vectors."""
    values = leaf_column_bytes(leaf, VECTOR_COLUMN)
    keys = np.array([i for i, value in enumerate(values) if len(value) == dimensions], np.int64)
    joined = b"".join(values[i] for i in keys.tolist())
    return keys, np.frombuffer(joined, dtype=np.int8).reshape(len(keys), dimensions)


def graph_path(leaf) -> Path | None:
    """Where a segment's graph is kept (None for a segment with no directory)."""
    folder = segment_folder(leaf)
    if folder is None or not hasattr(leaf, "segment"):
        return None
    return folder / f"{leaf.segment().segment_id()}{GRAPH_EXTENSION}"


def write_missing_graphs(index, dimensions: int) -> list[str]:
    """Write the graph of every large segment of `index` lacking a sound one; their ids."""
    written: list[str] = []
    with index.reader() as reader:
        if VECTOR_COLUMN not in reader.schema:
            return written
        for leaf, _ in reader.leaf_readers():
            size = leaf.doc_count_all()
            path = graph_path(leaf)
            if path is None or size < GRAPH_MIN_DOCS or not leaf.has_column(VECTOR_COLUMN):
                continue
            keys, matrix = segment_vectors(leaf, dimensions)
            if Graph.open(path, dimensions, len(keys)) is not None:
                continue
            write_graph(path, matrix, keys)
            written.append(leaf.segment().segment_id())
    return written
