"""Texts to unit vectors with the prepared model, and the int8 form indexes keep.

Documents are embedded as "title. abstract" (the model reads the first MAX_TOKENS word pieces),
queries as typed. Vectors are unit length; the index keeps each as int8 (`quantise`: a
component times 127, rounded), which moves SciFact's dense nDCG@10 by less than 0.001 and is a
quarter of float32's size. A dot product of two quantised vectors, divided by 127², is their
cosine to within about 0.01.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from searchsvc.domain.records import Record
from searchsvc.embeddings.model import MAX_TOKENS, PreparedModel, prepare

QUANTISATION_SCALE = 127.0
# Texts per forward pass: batches of similar lengths (sorted) pad little. Batches of 4 embed
# 8-18% faster than one text at a time and 20-40% faster than batches of 32, whose attention
# matrices outgrow the caches (benchmarks/README.md, "Embeddings on every processor"). The
# model quantises each token's activations on their own: a text gets one vector in any batch.
BATCH_SIZE = 4
# Query vectors kept per process (1.5 KB each).
QUERY_CACHE_SIZE = 1024
# Callback told how many more texts were embedded (drives a progress bar).
OnEmbedded = Callable[[int], None]
# Threads embedding queries beside the searches that asked for them (`embed_query_soon`): a
# gunicorn sync worker serves one search at a time; the Python API may search from a few threads.
QUERY_THREADS = 4


def document_text(record: Record) -> str:
    """What a record's vector is made from: its title and abstract."""
    title, abstract = record.title.strip(), record.abstract.strip()
    if title and abstract:
        return f"{title}. {abstract}"
    return title or abstract


def quantise(vectors: np.ndarray) -> np.ndarray:
    """Unit float vectors as int8 (rows stay in [-127, 127])."""
    return np.clip(np.rint(vectors * QUANTISATION_SCALE), -127, 127).astype(np.int8)


class Encoder:
    """One onnxruntime session of the model; `embed` is safe to call from several threads."""

    def __init__(self, model: PreparedModel, threads: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.model = model
        self.name = model.name
        self.fingerprint = model.fingerprint
        self.dimensions = model.dimensions
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or max(1, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(model.onnx_path), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(model.tokenizer_path))
        tokenizer.enable_truncation(MAX_TOKENS)
        # The packaged tokenizer pads every text to 128 pieces; batches are padded here, to
        # their longest text, with the attention mask to match.
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # one tokenizer call at a time
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_lock = threading.Lock()

    def embed(self, texts: Sequence[str], on_embedded: OnEmbedded | None = None) -> np.ndarray:
        """Unit float32 vectors of `texts`, in their order ([len(texts), dimensions])."""
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return result
        pieces = self._word_pieces(texts)
        order = sorted(range(len(texts)), key=lambda i: len(pieces[i]))
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            result[batch] = self._run(_model_inputs([pieces[i] for i in batch]))
            if on_embedded is not None:
                on_embedded(len(batch))
        return result

    def embed_query(self, text: str) -> np.ndarray:
        """One query's unit vector (read-only). The last QUERY_CACHE_SIZE queries' vectors are
        kept: the next page of a search, a facet ticked, the page's second search for its
        subject counts all ask for the same query again."""
        cached = self._cached_query(text)
        if cached is not None:
            return cached
        return self._remember(text, self.embed([text])[0])

    def embed_query_soon(self, text: str) -> Future[np.ndarray]:
        """`embed_query` on another thread: a hybrid search matches the query's words while
        onnxruntime makes its vector, and the engine waits for the vector only when it needs
        it (modes.resolved). A cached vector comes at once."""
        cached = self._cached_query(text)
        if cached is not None:
            ready: Future[np.ndarray] = Future()
            ready.set_result(cached)
            return ready
        inputs = _model_inputs(self._word_pieces([text]))
        running = threading.Event()

        def embed() -> np.ndarray:
            running.set()
            return self._remember(text, self._run(inputs)[0])

        pending = _query_pool().submit(embed)
        # Onnxruntime lets go of the GIL while it runs, but its thread needs the GIL to get
        # there, and a caller busy in Python yields it only every 5 ms (sys.getswitchinterval),
        # far longer than the embedding. Waiting until the thread is about to run hands the GIL
        # over at the right moment; it comes back when onnxruntime starts.
        running.wait()
        return pending

    def _word_pieces(self, texts: Sequence[str]) -> list[list[int]]:
        with self._lock:
            return [encoding.ids for encoding in self._tokenizer.encode_batch(list(texts))]

    def _run(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Unit vectors of one batch of model inputs."""
        pooled = self._session.run(None, inputs)[0]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.maximum(norms, 1e-12)

    def _remember(self, text: str, vector: np.ndarray) -> np.ndarray:
        vector.flags.writeable = False  # shared by every caller of the cache
        with self._query_lock:
            self._queries[text] = vector
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    def _cached_query(self, text: str) -> np.ndarray | None:
        with self._query_lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
            return cached

    def forget_queries(self) -> None:
        """Empty the cache of query vectors (benchmarks time a query's embedding with it)."""
        with self._query_lock:
            self._queries.clear()

    def embed_records(
        self, records: Sequence[Record], on_embedded: OnEmbedded | None = None
    ) -> np.ndarray:
        """The records' int8 vectors, in their order."""
        return quantise(self.embed([document_text(r) for r in records], on_embedded))


def _model_inputs(pieces: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
    """The word pieces of a batch of texts, padded to the longest, with the attention mask."""
    width = max(len(ids) for ids in pieces)
    ids = np.zeros((len(pieces), width), dtype=np.int64)
    mask = np.zeros((len(pieces), width), dtype=np.int64)
    for row, tokens in enumerate(pieces):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return {"input_ids": ids, "attention_mask": mask}


_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _query_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(QUERY_THREADS, thread_name_prefix="embed-query")
        return _pool


def _forget_pool_after_fork() -> None:
    # A forked child (a gunicorn worker) has none of its parent's threads: it starts its own.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def shared_encoder(threads: int | None = None) -> Encoder:
    """This process's encoder (prepared and loaded on first use; ModelUnavailable without the
    model package). Serving uses one thread per query: gunicorn runs a worker per core."""
    key = str(threads)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = Encoder(prepare(), threads)
        return _shared[key]
