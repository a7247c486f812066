"""Approximate nearest neighbours over int8 vectors (usearch's HNSW graph), for large indexes.

An exact scan reads every vector for every query: fine at tens of thousands of records, 40 ms
and more at a million. An engine keeps one graph per large, immutable part of its index (a
Whoosh segment) and asks it for candidates; the caller scores the candidates exactly, so the
graph decides only which records are looked at, never their scores. Recall against the exact
scan is measured by benchmarks/bench_ann.py.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np

# HNSW parameters: edges per node, and candidates kept while building and while searching
# (512: recall@100 0.99 against the exact scan on clustered test vectors, 0.92 at 128).
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 512


def _index(dimensions: int):
    # onnxruntime first: imported after usearch's extension, onnxruntime 1.32's crashes the
    # process (a segfault in its module init, seen with usearch 2.26).
    import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index(
        ndim=dimensions,
        metric="ip",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def write_graph(path: Path, vectors: np.ndarray, keys: np.ndarray, threads: int = 0) -> None:
    """Build the graph of int8 `vectors` (one row per key) and save it at `path` atomically."""
    graph = _index(vectors.shape[1])
    if len(keys):
        graph.add(keys.astype(np.uint64), vectors, threads=threads)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        graph.save(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class Graph:
    """A saved graph, loaded into memory.

    Not memory-mapped (usearch's `view`), which would let processes share its pages: a viewed
    index closes a file descriptor it no longer owns when collected (seen with usearch 2.26:
    another file's later reads fail with EBADF)."""

    def __init__(self, path: Path, dimensions: int) -> None:
        graph = _index(dimensions)
        graph.load(str(path))
        graph.expansion_search = EXPANSION_SEARCH
        self._graph = graph
        self.size = len(graph)

    @classmethod
    def open(cls, path: Path, dimensions: int, size: int) -> Graph | None:
        """The graph at `path` if it loads and holds `size` vectors, else None (the caller
        scans exactly)."""
        try:
            graph = cls(path, dimensions)
        except Exception:  # missing, truncated, another format: scan instead
            return None
        return graph if graph.size == size else None

    def candidates(self, query: np.ndarray, count: int) -> np.ndarray:
        """Keys of about the `count` vectors nearest the int8 `query`."""
        found = self._graph.search(query, min(count, self.size), threads=1)
        return np.asarray(found.keys, dtype=np.int64)
