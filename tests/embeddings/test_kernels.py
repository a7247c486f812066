"""The encoder's vectors on both of onnxruntime's int8 kernel paths (issue 38).

Processors with VNNI or AMX add int8 products exactly; AVX2 without VNNI (many AMD EPYC and
laptop processors) adds them in saturating 16-bit pairs. The model is built so that it never
reaches that limit (onnx_graph.py), and these tests run the other path on this machine where
they can: benchmarks/hide_avx512.c hides AVX-512, VNNI and AMX from CPUID in a child process
(on processors with CPUID faulting), and onnxruntime then takes AVX2's kernels.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from benchmarks.kernel_paths import (
    can_hide_avx512,
    hiding_library,
    int8_kernel_path,
    int8_product_sum,
    run_without_avx512,
)
from searchsvc.embeddings import prepare, shared_encoder
from searchsvc.embeddings.onnx_graph import WEIGHT_LIMIT

REFERENCE = Path(__file__).parents[1] / "data" / "minilm_reference_vectors.json"
ROOT = Path(__file__).resolve().parents[2]
# The texts (a short one beside a long one moved most on AVX2), the reference texts,
# and record-like texts of several lengths.
TEXTS = [
    "short",
    "a much longer text about cache coherence " * 20,
    "",
    "GPUs",
    *json.loads(REFERENCE.read_text())["texts"],
    "Serverless scheduling. We schedule short-lived functions on a shared cluster " * 6,
    "Learned index structures for key-value stores",
]
EXACT = 255 * 127 * 64

# Run in a child process: its vectors in a batch and alone, and what onnxruntime's kernel makes
# of products that saturate AVX2's pair sums.
CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from numpy._core._multiarray_umath import __cpu_features__
    from benchmarks.kernel_paths import int8_product_sum
    from searchsvc.embeddings import shared_encoder

    texts = json.loads(sys.stdin.read())
    encoder = shared_encoder()
    np.savez(
        sys.argv[1],
        together=encoder.embed(texts),
        alone=np.vstack([encoder.embed([text]) for text in texts]),
    )
    print(json.dumps({
        "avx512": bool(__cpu_features__["AVX512F"]),
        "sum_127": int8_product_sum(127),
        "sum_63": int8_product_sum(63),
    }))
    """
)


def _embed_in_child(tmp_path: Path, library: Path | None) -> tuple[dict, dict]:
    out = tmp_path / f"vectors-{'hidden' if library else 'native'}.npz"
    argv = [sys.executable, "-c", CHILD, str(out)]
    run = subprocess.run if library is None else run_without_avx512
    kwargs = {"input": json.dumps(TEXTS), "capture_output": True, "text": True, "cwd": ROOT}
    completed = run(argv, library, **kwargs) if library else run(argv, **kwargs)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1]), dict(np.load(out))


def test_the_models_integer_products_cannot_saturate_on_any_processor():
    # Weights within +-63 against u8 activations: a pair of products is at most 2 x 255 x 63 =
    # 32,130, inside vpmaddubsw's 16 bits. Activations are quantised per row (QuantizeLinear
    # with a row's scale), never per batch (DynamicQuantizeLinear, one scale for the batch).
    model = onnx.load(str(prepare().onnx_path))
    weights = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    products = [n for n in model.graph.node if n.op_type.startswith("MatMulInteger")]
    assert len(products) == 36  # 6 layers x (query, key, value, output, intermediate, output)
    for node in products:
        matrix = weights[node.input[1]]
        assert matrix.dtype == np.int8 and np.abs(matrix.astype(int)).max() <= WEIGHT_LIMIT == 63
    assert not [n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]


def test_this_processors_kernel_adds_the_models_products_exactly():
    # On any path: 64 products of 255 x 63 come out exact. 255 x 127 is exact only where the
    # kernel adds in 32 bits (VNNI, AMX), which this machine's flags say.
    assert int8_product_sum(63) == 255 * 63 * 64
    saturated = int8_product_sum(127) != EXACT
    assert saturated == ("vpmaddubsw" in int8_kernel_path())


def test_a_text_gets_the_same_vector_in_any_batch_and_near_the_reference():
    encoder = shared_encoder()
    together = encoder.embed(TEXTS)
    alone = np.vstack([encoder.embed([text]) for text in TEXTS])
    # Each token's activations are quantised alone: batch-mates change nothing (0.9568 for
    # "short" on AVX2 and 0.9732 for "" on AMX when activations were quantised per batch).
    assert (together * alone).sum(axis=1).min() > 0.9999
    reference = json.loads(REFERENCE.read_text())
    expected = np.array(reference["vectors"], dtype=np.float32)
    assert (encoder.embed(reference["texts"]) * expected).sum(axis=1).min() > 0.99


@pytest.fixture(scope="module")
def hiding():
    library = hiding_library()
    if library is None or not can_hide_avx512(library):
        path = int8_kernel_path()
        pytest.skip(
            f"this machine cannot hide AVX-512 from onnxruntime (no CPUID faulting): only its "
            f"own int8 path ran ({path}), checked by the other tests of this file"
        )
    return library


def test_the_avx2_path_gives_the_vectors_this_processor_gives(tmp_path, hiding):
    native_probe, native = _embed_in_child(tmp_path, None)
    hidden_probe, hidden = _embed_in_child(tmp_path, hiding)
    # The child really ran AVX2's kernels: no AVX-512 seen, and 255 x 127 pairs saturated.
    assert hidden_probe == {"avx512": False, "sum_127": 1_048_544, "sum_63": 255 * 63 * 64}
    assert native_probe["sum_63"] == 255 * 63 * 64
    # One text's vectors on the two paths (0.99925 at least over 1,024 SciFact records, where
    # per-batch quantisation with 8-bit weights gave 0.969 for "short").
    across = (native["together"] * hidden["together"]).sum(axis=1)
    assert across.min() > 0.999
    # On the AVX2 path too, batch-mates change nothing, and the reference is met.
    assert (hidden["together"] * hidden["alone"]).sum(axis=1).min() > 0.9999
    reference = json.loads(REFERENCE.read_text())
    expected = np.array(reference["vectors"], dtype=np.float32)
    first = TEXTS.index(reference["texts"][0])
    on_avx2 = hidden["together"][first : first + len(expected)]
    assert (on_avx2 * expected).sum(axis=1).min() > 0.99
