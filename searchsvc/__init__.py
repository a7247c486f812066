"""searchsvc: full-text search over scholarly publication records.

The in-process Python API is `SearchService`: `SearchService.open("index").search("q")`.
"""

__version__ = "0.1.0"

# After __version__: modules the service imports read it.
from searchsvc.service import SearchService

__all__ = ["SearchService", "__version__"]
