"""The encoder on this processor: records/s, and how its vectors agree across kernel paths.

    python -m benchmarks.bench_embeddings [--records 1024] [--batch-sizes 1,8,32]

Embeds the first `--records` SciFact documents ("title. abstract", as records are embedded) and
prints, for this processor's int8 kernel path and, where CPUID faulting lets it hide AVX-512,
VNNI and AMX (benchmarks/kernel_paths.py), for AVX2's too:

- records/s at each batch size (2 threads, as `searchsvc index` embeds);
- the cosine of each record's vector in a batch to the one it gets alone;
- the cosine to the float32 graph's vector (the same weights unquantised, which reproduces
  sentence-transformers to 1.0000: tests/data/minilm_reference_vectors.json);
- across the two paths, the cosine of one record's two vectors.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from benchmarks.common import format_table, load_scifact, log, print_section
from benchmarks.kernel_paths import (
    can_hide_avx512,
    describe_processor,
    hiding_library,
    int8_kernel_path,
    run_without_avx512,
)


def _texts(count: int) -> list[str]:
    from searchsvc.embeddings.encoder import document_text

    return [document_text(record) for record in load_scifact().corpus.records[:count]]


def _encoder(float32: bool = False):
    from searchsvc.embeddings import model as model_module
    from searchsvc.embeddings.encoder import Encoder

    prepared = model_module.prepare()
    if not float32:
        return Encoder(prepared)
    import onnx
    from safetensors.numpy import load

    from searchsvc.embeddings.onnx_graph import build_encoder

    folder = Path(tempfile.mkdtemp(prefix="float32-model-"))
    with zipfile.ZipFile(model_module.model_zip()) as archive:
        config = json.loads(archive.read("config.json"))
        weights = load(archive.read("model.safetensors"))
    onnx.save(build_encoder(weights, config, quantised=False), str(folder / "model.onnx"))
    return Encoder(
        model_module.PreparedModel(
            folder / "model.onnx",
            prepared.tokenizer_path,
            prepared.name,
            "float32",
            prepared.dimensions,
        )
    )


def measure(count: int, batch_sizes: list[int], out: Path) -> None:
    """Vectors and speeds of this process's kernel path, saved to `out` (npz)."""
    import searchsvc.embeddings.encoder as encoder_module

    texts = _texts(count)
    encoder = _encoder()
    encoder.embed(texts[:32])  # warm-up
    speeds = {}
    vectors = None
    for size in batch_sizes:
        encoder_module.BATCH_SIZE = size
        started = time.perf_counter()
        vectors = encoder.embed(texts)
        speeds[size] = len(texts) / (time.perf_counter() - started)
        log(f"  batches of {size}: {speeds[size]:.1f} records/s")
    alone = np.vstack([encoder.embed([text]) for text in texts])
    np.savez(out, vectors=vectors, alone=alone, sizes=list(speeds), speeds=list(speeds.values()))


def _child(count: int, batch_sizes: list[int], out: Path, hide: Path | None) -> None:
    argv = [
        sys.executable,
        "-m",
        "benchmarks.bench_embeddings",
        "--records",
        str(count),
        "--batch-sizes",
        ",".join(map(str, batch_sizes)),
        "--measure-into",
        str(out),
    ]
    if hide is None:
        subprocess.run(argv, check=True)
    else:
        run_without_avx512(argv, hide, check=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1024)
    parser.add_argument(
        "--batch-sizes",
        type=lambda text: [int(p) for p in text.split(",") if p.strip()],
        default=[1, 8, 32],
    )
    parser.add_argument("--measure-into", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure_into:
        measure(args.records, args.batch_sizes, args.measure_into)
        return

    print_section("Embeddings", describe_processor())
    log("float32 reference vectors ...")
    reference = _encoder(float32=True).embed(_texts(args.records))
    paths = {f"{int8_kernel_path()} (this processor)": None}
    library = hiding_library()
    if library is not None and can_hide_avx512(library):
        paths["AVX2 (vpmaddubsw; AVX-512, VNNI, AMX hidden)"] = library
    else:
        log("this processor cannot hide AVX-512 (no CPUID faulting): one path only")
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for number, (label, hide) in enumerate(paths.items()):
            log(f"{label} ...")
            out = Path(folder) / f"path{number}.npz"
            _child(args.records, args.batch_sizes, out, hide)
            results[label] = dict(np.load(out))
    rows = []
    for label, data in results.items():
        batch_alone = (data["vectors"] * data["alone"]).sum(axis=1)
        to_float = (data["vectors"] * reference).sum(axis=1)
        speeds = ", ".join(
            f"{int(size)}: {speed:.1f}"
            for size, speed in zip(data["sizes"], data["speeds"], strict=True)
        )
        rows.append(
            [
                label,
                speeds,
                f"{batch_alone.min():.4f}",
                f"{to_float.min():.4f} / {to_float.mean():.4f}",
            ]
        )
    print(
        format_table(
            [
                "kernel path",
                "records/s by batch size",
                "batch vs alone (min)",
                "vs float32 (min / mean)",
            ],
            rows,
        )
    )
    if len(results) == 2:
        first, second = (data["vectors"] for data in results.values())
        across = (first * second).sum(axis=1)
        print(
            f"\none record's vectors on the two paths: cosine min {across.min():.5f}, "
            f"mean {across.mean():.5f} ({args.records} SciFact records)"
        )


if __name__ == "__main__":
    main()
