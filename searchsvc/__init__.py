"""searchsvc: full-text search over scholarly publication records."""

__version__ = "0.1.0"
