"""Which int8 kernels onnxruntime takes on this processor, and a way to make it take AVX2's.

onnxruntime (MLAS) picks the kernel of a u8 x s8 matrix product from CPUID once per process:
AMX, AVX-512 VNNI or AVX-VNNI add the products in 32 bits (exact); AVX-512BW and AVX2 without
VNNI use vpmaddubsw, which adds pairs of products into 16 bits and saturates. `hidden_avx512`
runs a command with AVX-512, VNNI and AMX hidden from CPUID (benchmarks/hide_avx512.c, on Linux
processors with CPUID faulting), so that one machine measures both paths.

    python -m benchmarks.kernel_paths      # prints this processor and what it can show
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SHIM_SOURCE = Path(__file__).resolve().parent / "hide_avx512.c"


def cpu_flags() -> set[str]:
    """The processor's feature flags as Linux names them (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def processor_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def int8_kernel_path(flags: set[str] | None = None) -> str:
    """The u8 x s8 kernel onnxruntime's MLAS takes with these flags (platform.cpp's order)."""
    flags = cpu_flags() if flags is None else flags
    if {"amx_tile", "amx_int8"} <= flags:
        return "AMX"
    if {"avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-512BW (vpmaddubsw, no VNNI)"
    if "avx_vnni" in flags:
        return "AVX-VNNI"
    if "avx2" in flags:
        return "AVX2 (vpmaddubsw, no VNNI)"
    return "other (" + platform.machine() + ")"


def saturating(path: str) -> bool:
    """Whether a kernel path adds int8 products in saturating 16-bit pairs."""
    return "vpmaddubsw" in path


def int8_product_sum(weight: int, depth: int = 64) -> int:
    """What onnxruntime's u8 x s8 product (MatMulIntegerToFloat, as the model's dense layers
    use) makes of `depth` products 255 x `weight`: 255 x weight x depth where the kernel adds
    exactly, less where it saturates 16-bit pair sums (weight 127: 32,767 per pair instead of
    64,770). Tells which path this process's onnxruntime really takes."""
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    rows = columns = 16  # a matrix product, not onnxruntime's one-row (GEMV) kernel
    node = helper.make_node(
        "MatMulIntegerToFloat",
        ["a", "b", "a_scale", "b_scale", "a_zero", "b_zero"],
        ["y"],
        domain="com.microsoft",
    )
    initialisers = [
        numpy_helper.from_array(np.full((depth, columns), weight, np.int8), "b"),
        numpy_helper.from_array(np.array(1.0, np.float32), "a_scale"),
        numpy_helper.from_array(np.array(1.0, np.float32), "b_scale"),
        numpy_helper.from_array(np.array(0, np.uint8), "a_zero"),
        numpy_helper.from_array(np.array(0, np.int8), "b_zero"),
    ]
    graph = helper.make_graph(
        [node],
        "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [rows, depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, columns])],
        initialisers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (result,) = session.run(None, {"a": np.full((rows, depth), 255, np.uint8)})
    return int(result[0, 0])


def describe_processor() -> str:
    """One line for a benchmark's header: the processor and its int8 kernel path."""
    return f"{processor_name()}, {os.cpu_count()} cores, int8 kernels: {int8_kernel_path()}"


def hiding_library(cache: Path | None = None) -> Path | None:
    """The compiled shim (built once into `cache`), or None without a C compiler or on
    another system than x86-64 Linux."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    folder = cache or Path(tempfile.gettempdir()) / f"searchsvc-hide-avx512-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"hide_avx512-{int(SHIM_SOURCE.stat().st_mtime_ns)}.so"
    if not library.exists():
        partial = library.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(
            [compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SHIM_SOURCE)], check=True
        )
        os.replace(partial, library)
    return library


def without_avx512_env(library: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose processes see no AVX-512, VNNI or AMX (where CPUID faults)."""
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONFAULTHANDLER", None)  # its SIGSEGV handler would replace the shim's
    env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    return env


def can_hide_avx512(library: Path) -> bool:
    """Whether this machine's processor faults on CPUID, so the shim can hide features."""
    probe = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('HIDE_AVX512_STATE', ''))"],
        env=without_avx512_env(library),
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode == 0 and probe.stdout.strip() == "hidden"


def run_without_avx512(argv: Sequence[str], library: Path, **kwargs) -> subprocess.CompletedProcess:
    """`argv` run with AVX-512, VNNI and AMX hidden (check `can_hide_avx512` first)."""
    return subprocess.run(list(argv), env=without_avx512_env(library), **kwargs)


def main() -> None:
    print(describe_processor())
    exact = 255 * 127 * 64
    found = int8_product_sum(127)
    print(
        f"onnxruntime's u8 x s8 product of 64 x 255 x 127: {found:,} "
        + ("(exact)" if found == exact else f"(saturated; exact is {exact:,})")
    )
    library = hiding_library()
    if library is None:
        print("the AVX2 path cannot be forced here (needs x86-64 Linux and a C compiler)")
    elif can_hide_avx512(library):
        print("AVX-512, VNNI and AMX can be hidden (CPUID faulting): both kernel paths run here")
    else:
        print("this processor cannot fault on CPUID: only its own kernel path runs here")


if __name__ == "__main__":
    main()
