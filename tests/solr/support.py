"""Solr helpers for tests: dropping a location's collections when a test is done with them."""

from __future__ import annotations

from searchsvc.backends.solr.admin import COLLECTIONS, Collections
from searchsvc.backends.solr.connection import SolrConnection
from searchsvc.backends.solr.location import parse_location


def drop_collections(location: str) -> None:
    """Delete the alias of a `solr://` location and every collection made for it."""
    parsed = parse_location(location)
    connection = SolrConnection(parsed)
    try:
        collections = Collections(connection, parsed.collection, parsed.shards, parsed.replicas)
        aliases = connection.get(COLLECTIONS, {"action": "LISTALIASES"}).get("aliases", {})
        if parsed.collection in aliases:
            connection.get(COLLECTIONS, {"action": "DELETEALIAS", "name": parsed.collection})
        for name in collections.generations():
            collections.delete(name)
    finally:
        connection.close()
