"""Reranking backends, looked up by spec string (``cross-encoder:PATH_OR_NAME``, ``onnx:PATH``)."""

from __future__ import annotations

from beleg.backends.rerankers.base import Reranker
from beleg.errors import ConfigError
from beleg.registry import Registry

#: prefix → (module, class, description); plugins: the ``beleg.rerankers`` entry-point group.
RERANKERS = Registry("rerankers", {
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
}, noun="reranker kind")


def load_reranker(spec: str) -> Reranker:
    """``"cross-encoder:/models/ms-marco-MiniLM"`` → a loaded reranker. A bare path means cross-encoder."""
    prefix, sep, arg = spec.partition(":")
    if not sep or prefix not in RERANKERS:
        if sep and "/" not in prefix and not prefix.startswith("."):
            raise ConfigError(f"unknown reranker kind {prefix!r}; available: {', '.join(RERANKERS)}."
                              f"{RERANKERS.hint(prefix)}")
        prefix, arg = "cross-encoder", spec
    reranker: Reranker = RERANKERS.load(prefix)(arg)
    return reranker


__all__ = ["Reranker", "RERANKERS", "load_reranker"]
