"""What every engine does alike with the records' vectors (searchsvc.embeddings) when it writes:
embed records as a stage of the write's progress, note the model in the index's metadata, and
embed later writes with that same model only.

An index keeps, under VECTORS_METADATA, the fingerprint and the dimensions of the model its
vectors were made with; `vector_model()` answers the fingerprint (None: no vectors).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from searchsvc.backends.contract import Progress
from searchsvc.domain.errors import ModelUnavailable
from searchsvc.domain.records import Record
from searchsvc.embeddings import Encoder, shared_encoder

# Records embedded at once by a build (embed_for_index).
EMBED_CHUNK = 8_192
# The metadata key of the vectors' model (as the Whoosh index names it in its metadata too).
VECTORS_METADATA = "vectors"


def embed_for_index(encoder: Encoder, records: Sequence[Record], progress: Progress) -> np.ndarray:
    """The records' int8 vectors, in their order, with embedding shown as a stage of its own
    (it is the slow part of a write).

    Records are embedded EMBED_CHUNK at a time, so that their texts and token ids are never
    all in memory at once; beyond a chunk the vectors go to a memory map of an unlinked
    temporary file (384 bytes a record, which the kernel may write out) rather than the heap.
    """
    progress.stage("embedding")
    count = len(records)
    if count <= EMBED_CHUNK:
        vectors = encoder.embed_records(records, progress.advance)
    else:
        with tempfile.TemporaryFile(prefix="searchsvc-vectors-") as scratch:
            vectors = np.memmap(
                scratch, dtype=np.int8, mode="w+", shape=(count, encoder.dimensions)
            )
        for start in range(0, count, EMBED_CHUNK):
            chunk = records[start : start + EMBED_CHUNK]
            vectors[start : start + len(chunk)] = encoder.embed_records(chunk, progress.advance)
    progress.stage("indexing")
    return vectors


def vectors_metadata(encoder: Encoder) -> dict[str, Any]:
    """What an index built with `encoder`'s vectors notes under VECTORS_METADATA."""
    return {"model": encoder.fingerprint, "dimensions": encoder.dimensions}


def model_of(metadata: dict[str, Any]) -> str | None:
    """The fingerprint of the model an index's vectors were made with, from its metadata;
    None when it has no vectors."""
    info = metadata.get(VECTORS_METADATA)
    model = info.get("model") if isinstance(info, dict) else None
    return str(model) if model else None


def encoder_for(model: str) -> Encoder:
    """The installed encoder, if it is the model an index's vectors were made with: vectors of
    two models do not compare, so a write with another one is refused (ModelUnavailable)."""
    encoder = shared_encoder()
    if encoder.fingerprint != model:
        raise ModelUnavailable(
            "the index's vectors were made by another model version than the one installed: "
            "rebuild the index (searchsvc index) to write to it"
        )
    return encoder
