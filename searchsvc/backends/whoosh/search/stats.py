"""What an index holds: document count and exact facet value counts, read from the facet arrays.

Every facet column of a snapshot's facet arrays (accel/facet_table.py) already counts each
value's live documents (`totals`), the counts a search without words shows. Reading them costs
nothing per value; walking Whoosh's terms instead took minutes on a 5M-record index (a
`doc_frequency` per author per segment), on the first request for stats and on every
Prometheus scrape after a change.
"""

from __future__ import annotations

import numpy as np
from whoosh.reading import IndexReader

from searchsvc.backends.whoosh.accel.facet_table import FacetTable
from searchsvc.backends.whoosh.store import IndexDirectory, version_token
from searchsvc.domain.facets import FACET_NAMES
from searchsvc.domain.query import IndexStats


def index_stats(
    directory: IndexDirectory,
    generation: str,
    reader: IndexReader,
    table: FacetTable,
    top: int = 10,
) -> IndexStats:
    """Document count, the `top` values of each facet with exact counts, and build details of
    the generation served, read with one snapshot's `reader` and `table` (its facet arrays)."""
    columns = {facet: table.column(facet) for facet in FACET_NAMES}
    return IndexStats(
        documents=reader.doc_count(),
        # Ties by value, so the order is stable.
        facets={facet: column.top(column.totals, top) for facet, column in columns.items()},
        cardinalities={
            facet: int(np.count_nonzero(column.totals)) for facet, column in columns.items()
        },
        built_at=directory.built_at(generation),
        # Changes with every build (new generation) and every update (new Whoosh TOC).
        version=version_token(generation, reader.generation()),
        index_dir=str(directory.root),
        size_bytes=directory.size_bytes(generation),
    )
