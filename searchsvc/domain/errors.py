"""The exception tree of searchsvc: failures are domain values, turned into HTTP/exit codes once."""


class SearchsvcError(Exception):
    """Base of every error searchsvc raises on purpose."""

    code = "error"
    # The message with what only a local user should see (the index's path): the command line
    # prints it when there is one; HTTP answers send `message`, which never names a path.
    local_message: str | None = None
    # Seconds after which the same request may succeed, for a refusal that passes (a bound of
    # the write queue): HTTP answers send it as Retry-After.
    retry_after: int | None = None

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidRequest(SearchsvcError, ValueError):
    """A request parameter is out of range or of the wrong kind."""

    code = "invalid_parameter"


class QueryError(SearchsvcError, ValueError):
    """The query text cannot be used; `details` says what and where (`position`)."""

    code = "invalid_query"


class RecordNotFound(SearchsvcError, LookupError):
    """No record has the requested id."""

    code = "not_found"


class UnknownFacet(SearchsvcError, LookupError):
    """No facet has the requested name; `details["facets"]` lists those there are."""

    code = "unknown_facet"


class InvalidLocation(SearchsvcError, ValueError):
    """An index location names no known engine, or is malformed for its engine."""

    code = "invalid_location"


class IndexUnavailable(SearchsvcError):
    """The index is missing, being created for the first time, or cannot be opened."""

    code = "index_unavailable"


class ModeUnavailable(SearchsvcError):
    """The search mode asked for needs what this index lacks (vectors for hybrid or semantic):
    a valid request the index cannot serve as it is."""

    code = "mode_unavailable"


class ModelUnavailable(SearchsvcError):
    """The embedding model that semantic and hybrid search need is not installed here."""

    code = "model_unavailable"


class SourceError(SearchsvcError):
    """An input file cannot be read at all (missing, unreadable, empty, unknown format)."""

    code = "source_error"


class BuildInProgress(SearchsvcError):
    """Another process holds the build lock of the index directory."""

    code = "build_in_progress"


class TaskNotFound(SearchsvcError, LookupError):
    """No write task has the requested id."""

    code = "task_not_found"


class TaskQueueUnavailable(SearchsvcError):
    """The task queue's database cannot be read or written (disk full, read-only, damaged)."""

    code = "task_queue_unavailable"


class _Refusal(SearchsvcError):
    """A write refused by a bound that passes with time: `retry_after` says when to retry."""

    def __init__(self, message: str, retry_after: int | None = None, **details: object) -> None:
        if retry_after is not None:
            details["retry_after"] = retry_after
        super().__init__(message, **details)
        self.retry_after = retry_after


class QueueFull(_Refusal):
    """The write queue holds as many bytes as it may (QUEUE_MAX_BYTES): the service is behind."""

    code = "queue_full"


class KeyQueueFull(_Refusal):
    """This API key's writes waiting in the queue reach its share (QUEUE_MAX_BYTES_PER_KEY)."""

    code = "key_queue_full"


class InsufficientStorage(_Refusal):
    """The disk of the write queue is below its free-space floor (MIN_FREE_DISK_BYTES): no
    write is acknowledged that could not be kept."""

    code = "insufficient_storage"


class WriteRateExceeded(_Refusal):
    """This API key made as many writes as WRITE_RATE_LIMIT allows in the current window."""

    # The code HTTP gives a 429, which clients already know.
    code = "too_many_requests"


class PayloadTooLarge(SearchsvcError):
    """A request body, or a batch of records, is larger than the service takes."""

    code = "payload_too_large"


class SolrClusterError(SearchsvcError):
    """The local SolrCloud (`searchsvc solr`) cannot be built, started, stopped or reached:
    Java or Maven missing, a port taken, a node that does not come up (the message says which)."""

    code = "solr_cluster_error"


class SolrClusterRunning(SolrClusterError):
    """`start` found the local SolrCloud of that data directory already running: nothing to do,
    which the command line reports as such rather than as a failure."""

    code = "solr_cluster_running"
