"""Reranking backends, looked up by spec string (``cross-encoder:PATH_OR_NAME``, ``onnx:PATH``)."""

from __future__ import annotations

import difflib
import importlib

from beleg.backends.rerankers.base import Reranker
from beleg.errors import ConfigError

#: prefix → (module, class, description)
RERANKERS: dict[str, tuple[str, str, str]] = {
    "cross-encoder": (
        "beleg.backends.rerankers.cross_encoder",
        "CrossEncoderReranker",
        "a sentence-transformers CrossEncoder from a local directory (pip install \"beleg[rerank]\")",
    ),
    "onnx": (
        "beleg.backends.rerankers.onnx",
        "OnnxCrossEncoderReranker",
        "a cross-encoder exported to ONNX (model.onnx + tokenizer.json), run by onnxruntime without torch",
    ),
}


def load_reranker(spec: str) -> Reranker:
    """``"cross-encoder:/models/ms-marco-MiniLM"`` → a loaded reranker. A bare path means cross-encoder."""
    prefix, sep, arg = spec.partition(":")
    if not sep or prefix not in RERANKERS:
        if sep and "/" not in prefix and not prefix.startswith("."):
            close = difflib.get_close_matches(prefix, RERANKERS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown reranker kind {prefix!r}; available: {', '.join(RERANKERS)}.{hint}")
        prefix, arg = "cross-encoder", spec
    module, cls, _ = RERANKERS[prefix]
    return getattr(importlib.import_module(module), cls)(arg)


__all__ = ["Reranker", "RERANKERS", "load_reranker"]
