"""Read accelerations: data derived from Whoosh's files (posting arrays, facet tables, lexicons),
the code that searches it, and highlighting without Whoosh's token streams.

Each saved form has a module of its own, named after what it saves: `facet_table.py` is the
in-memory table and `facet_table_file.py` its `facets.npz`; `lexicon.py` and `lexicon_file.py`
(`lexicons.npz`); `snapshot_postings.py` reads the `.postarrays` files of
`posting_arrays_file.py`, or decodes Whoosh's blocks (`posting_blocks.py`) where there are none.
A missing or damaged saved file only makes a search slower, never different.
"""
