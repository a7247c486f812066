"""`solr://` locations: which SolrCloud nodes to talk to, and which collection holds the index.

    solr://HOST:PORT/solr/COLLECTION
    solr://HOST1:PORT1,HOST2:PORT2/solr/COLLECTION?shards=2&replicas=2

Any listed node will do: the backend asks one that answers for the cluster's live nodes and
fails over among them. `shards` and `replicas` are used when the collection is created (the
first write); `timeout` is the seconds a read may take (default 10; writes get at least 60).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from searchsvc.domain.errors import InvalidLocation

DEFAULT_SHARDS = 2
DEFAULT_REPLICAS = 2
# Below gunicorn's worker timeout (SEARCHSVC_TIMEOUT, 30 s): at 30 a hung Solr got the worker
# killed mid-request (the client an empty 500 from gunicorn, the warm-up of the next worker hung
# too) before the read gave up with the service's 503. Writes, which no request waits for, take
# longer (backend.WRITE_TIMEOUT).
DEFAULT_TIMEOUT = 10.0
MAX_SHARDS = 64
MAX_REPLICAS = 8
# Solr's own rule for collection and alias names.
_COLLECTION = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_HOST = re.compile(r"\[?[A-Za-z0-9.:-]+\]?:\d{1,5}|[A-Za-z0-9.-]+")
_OPTIONS = ("shards", "replicas", "timeout")


@dataclass(frozen=True)
class SolrLocation:
    """A parsed `solr://` location."""

    hosts: tuple[str, ...]  # "host:port", as given
    context: str  # the path Solr answers under, usually "solr"
    collection: str  # the name searched: an alias of the collection the backend made
    shards: int = DEFAULT_SHARDS
    replicas: int = DEFAULT_REPLICAS
    timeout: float = DEFAULT_TIMEOUT

    @property
    def base_urls(self) -> tuple[str, ...]:
        return tuple(f"http://{host}/{self.context}" for host in self.hosts)

    @property
    def url(self) -> str:
        options = []
        if self.shards != DEFAULT_SHARDS:
            options.append(f"shards={self.shards}")
        if self.replicas != DEFAULT_REPLICAS:
            options.append(f"replicas={self.replicas}")
        if self.timeout != DEFAULT_TIMEOUT:
            options.append(f"timeout={self.timeout:g}")
        query = "?" + "&".join(options) if options else ""
        return f"solr://{','.join(self.hosts)}/{self.context}/{self.collection}{query}"


def parse_location(url: str) -> SolrLocation:
    """The SolrLocation of a `solr://` URL; InvalidLocation saying what is wrong otherwise."""
    example = "solr://HOST:PORT[,HOST:PORT...]/solr/COLLECTION"
    parts = urlsplit(url)
    if parts.scheme.lower() != "solr" or parts.fragment:
        raise InvalidLocation(f"a Solr location is {example}, not {url}")
    hosts = tuple(host.strip() for host in parts.netloc.split(",") if host.strip())
    if not hosts or not all(_HOST.fullmatch(host) for host in hosts):
        raise InvalidLocation(f"a Solr location names its nodes as HOST:PORT: {example}")
    # The pattern takes any 1-5 digits: a port out of range (solr://h:99999/...) was accepted and
    # failed only at the first request, as "no Solr node answered", instead of naming the port.
    for host in hosts:
        _, colon, port = host.rpartition(":")
        if colon and port.isdigit() and not 0 < int(port) < 65536:
            raise InvalidLocation(f"port {port} of {host} in a Solr location is not 1 to 65535")
    path = [unquote(part) for part in parts.path.split("/") if part]
    if len(path) != 2:
        raise InvalidLocation(f"a Solr location ends with /solr/COLLECTION: {example}")
    context, collection = path
    if not _COLLECTION.fullmatch(collection) or not _COLLECTION.fullmatch(context):
        raise InvalidLocation(
            f"{collection!r} is no Solr collection name (letters, digits, _ . and -)"
        )
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InvalidLocation(
            f"unknown option {unknown[0]!r} in a Solr location (known: {', '.join(_OPTIONS)})"
        )
    return SolrLocation(
        hosts=hosts,
        context=context,
        collection=collection,
        shards=_number(options, "shards", DEFAULT_SHARDS, 1, MAX_SHARDS),
        replicas=_number(options, "replicas", DEFAULT_REPLICAS, 1, MAX_REPLICAS),
        timeout=_seconds(options.get("timeout")),
    )


def _number(options: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise InvalidLocation(f"{name} in a Solr location is a whole number from {low} to {high}")
    return int(text)


def _seconds(text: str | None) -> float:
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0.1 <= seconds <= 3600:
        raise InvalidLocation("timeout in a Solr location is seconds from 0.1 to 3600")
    return seconds
