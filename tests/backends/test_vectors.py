"""What engines share about vectors (backends/vectors.py): the model an index notes, and the
refusal to embed a write with another model than the index's vectors were made with."""

from __future__ import annotations

import numpy as np
import pytest

from searchsvc.backends.contract import NoProgress
from searchsvc.backends.shared.vectors import (
    VECTORS_METADATA,
    embed_for_index,
    encoder_for,
    model_of,
    vectors_metadata,
)
from searchsvc.domain.errors import ModelUnavailable
from searchsvc.embeddings import shared_encoder
from tests.support import FIXTURE_RECORDS


class StagesSeen(NoProgress):
    def __init__(self) -> None:
        self.seen: list[str | int] = []

    def advance(self, count: int) -> None:
        self.seen.append(count)

    def stage(self, name: str) -> None:
        self.seen.append(name)


def test_an_index_notes_the_model_of_its_vectors_and_none_without():
    encoder = shared_encoder()
    noted = {VECTORS_METADATA: vectors_metadata(encoder)}
    assert model_of(noted) == encoder.fingerprint
    assert model_of({}) is None
    assert model_of({VECTORS_METADATA: "damaged"}) is None


def test_embedding_is_a_stage_of_its_own():
    progress = StagesSeen()
    vectors = embed_for_index(shared_encoder(), FIXTURE_RECORDS, progress)
    assert vectors.shape == (len(FIXTURE_RECORDS), shared_encoder().dimensions)
    assert progress.seen[0] == "embedding" and progress.seen[-1] == "indexing"
    assert sum(n for n in progress.seen if isinstance(n, int)) == len(FIXTURE_RECORDS)


def test_a_write_is_embedded_only_by_the_model_of_the_index():
    assert encoder_for(shared_encoder().fingerprint) is shared_encoder()
    with pytest.raises(ModelUnavailable):
        encoder_for("another-model:0000:v1")


def test_a_large_write_is_embedded_a_chunk_at_a_time_into_a_memory_map(monkeypatch):
    # Issue 20: every record's text, tokens and float vector were in memory at once.
    from searchsvc.backends.shared import vectors as vectors_module

    monkeypatch.setattr(vectors_module, "EMBED_CHUNK", 2)
    progress = StagesSeen()
    chunked = embed_for_index(shared_encoder(), FIXTURE_RECORDS, progress)
    whole = shared_encoder().embed_records(FIXTURE_RECORDS)
    assert isinstance(chunked, np.memmap)
    assert chunked.shape == whole.shape and chunked.dtype == whole.dtype
    # The model quantises each token alone: chunks and batch-mates change no vector.
    assert np.array_equal(chunked, whole)
    assert sum(n for n in progress.seen if isinstance(n, int)) == len(FIXTURE_RECORDS)
