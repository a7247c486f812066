"""Sentence embeddings for semantic and hybrid search: the packaged model run by onnxruntime.

Engine-neutral: engines store and search the int8 vectors these functions make; nothing here
knows an engine, Flask or torch.
"""

from searchsvc.embeddings.encoder import (
    Encoder,
    document_text,
    quantise,
    shared_encoder,
)
from searchsvc.embeddings.model import MODEL_NAME, model_installed, model_zip, prepare

__all__ = [
    "MODEL_NAME",
    "Encoder",
    "document_text",
    "model_installed",
    "model_zip",
    "prepare",
    "quantise",
    "shared_encoder",
]
