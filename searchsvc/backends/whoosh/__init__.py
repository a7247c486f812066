"""The Whoosh backend: the only package of searchsvc that imports whoosh.

Its fast paths read Whoosh's files and private structures (posting blocks, term tables, segment
layouts) and replace some of its methods (patches.py), so it runs only on the Whoosh versions it
was built and tested against: importing it with another one fails with a message saying so.

Layout: `backend.py` implements the engine contract over an index directory (`store.py`);
`queries/` compiles the product's query tree; `search/` answers reads on one snapshot;
`build/` writes segments without Whoosh's writer; `accel/` holds the read accelerations.
"""

import whoosh

from searchsvc.domain.errors import IndexUnavailable

SUPPORTED_WHOOSH_VERSIONS = ("2.7.4",)

if whoosh.versionstring() not in SUPPORTED_WHOOSH_VERSIONS:
    raise IndexUnavailable(
        f"the Whoosh backend needs Whoosh {' or '.join(SUPPORTED_WHOOSH_VERSIONS)}, found "
        f"{whoosh.versionstring()}: its fast paths read Whoosh's files and internals "
        "(pip install 'whoosh==2.7.4')"
    )

from searchsvc.backends.whoosh import patches  # noqa: E402 (only for a supported version)

patches.apply()
