"""Cross-encoder reranking with onnxruntime: a model exported to ONNX, no torch at run time.

The directory holds ``model.onnx`` (or ``onnx/model.onnx``, where sentence-transformers
and optimum put their exports) and the fast tokenizer's ``tokenizer.json``. This is the
light way to rerank on a machine without torch: onnxruntime and tokenizers are tens of
megabytes, torch is hundreds. Scores equal the PyTorch model's logits up to float error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from beleg.backends.rerankers.cross_encoder import _read_json, local_model_dir, max_input_length
from beleg.errors import ConfigError, ModelError, missing_dependency

#: Pad tokens tried, in order, when the tokenizer files name none.
_PAD_GUESSES = ("[PAD]", "<pad>")


class OnnxCrossEncoderReranker:
    """Score (query, passage) pairs with a cross-encoder exported to ONNX.

    Scores are raw logits, as in :class:`~beleg.backends.rerankers.cross_encoder.CrossEncoderReranker`:
    the single output of a one-label model, the second ("relevant") logit of a two-label one.

    Args:
        model_dir: Directory with ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``.
        batch_size: Pairs per ``session.run``.
        max_length: Longest query+passage token sequence; longer pairs are truncated
            longest-first, as the transformers tokenizer does.

    Raises:
        MissingDependencyError: onnxruntime or tokenizers is not installed.
        ConfigError: ``model_dir`` is not a directory with those files.
        ModelError: The ONNX graph or tokenizer could not be loaded, or has an unexpected shape.

    Example:
        >>> r = OnnxCrossEncoderReranker("/models/ms-marco-MiniLM-L-6-v2-onnx")  # doctest: +SKIP
        >>> scores = r.rerank("reset a password", ["Click 'Forgot password'.", "Pricing tiers"])  # doctest: +SKIP
        >>> scores[0] > scores[1]  # doctest: +SKIP
        True
    """

    def __init__(self, model_dir: str, *, batch_size: int = 32, max_length: int = 512) -> None:
        path = local_model_dir(model_dir, needs=("model.onnx|onnx/model.onnx", "tokenizer.json"),
                               kind="ONNX cross-encoder",
                               example="a model.onnx exported with torch.onnx.export or optimum, beside the "
                                       "tokenizer.json that the model's fast tokenizer saves")
        if batch_size < 1 or max_length < 1:
            raise ConfigError(f"batch_size and max_length must be at least 1, got {batch_size} and {max_length}")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise missing_dependency("onnxruntime", "rerank", exc) from exc
        onnx_file = path / "model.onnx" if (path / "model.onnx").is_file() else path / "onnx" / "model.onnx"
        try:
            self._session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
            self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as exc:  # onnxruntime and tokenizers raise their own exception types
            raise ModelError(f"could not load the ONNX cross-encoder in {path}: {exc}") from exc
        # Feed only the inputs the graph declares: XLM-R style models have no token_type_ids.
        self._inputs = {i.name: (np.int32 if "int32" in i.type else np.int64) for i in self._session.get_inputs()}
        if "input_ids" not in self._inputs:
            raise ModelError(f"{onnx_file} has no 'input_ids' input (it has {', '.join(self._inputs)}); "
                             "export the model with input_ids / attention_mask / token_type_ids inputs")
        outputs = [o.name for o in self._session.get_outputs()]
        self._output = "logits" if "logits" in outputs else outputs[0]
        self._tokenizer.enable_truncation(max_length=max_input_length(path, max_length), strategy="longest_first")
        pad_token = self._pad_token(path)
        # Pad each batch to its longest pair; whatever padding tokenizer.json stored is replaced.
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id(pad_token), pad_token=pad_token)
        self._batch_size = batch_size
        self.spec = f"onnx:{path}"

    def _pad_token(self, path: Path) -> str:
        declared: Any = _read_json(path / "tokenizer_config.json").get("pad_token")
        if isinstance(declared, dict):  # older configs store AddedToken dicts
            declared = declared.get("content")
        padding = self._tokenizer.padding
        candidates = [declared, padding.get("pad_token") if padding else None, *_PAD_GUESSES]
        for token in candidates:
            if isinstance(token, str) and self._tokenizer.token_to_id(token) is not None:
                return token
        raise ModelError(f"the tokenizer in {path} has no pad token (tried {', '.join(_PAD_GUESSES)}); "
                         "set pad_token in tokenizer_config.json")

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is more relevant), in input order.

        Args:
            query: The search query.
            passages: Candidate passages.

        Returns:
            Raw logits as floats; ``[]`` for no passages.

        Raises:
            ModelError: The ONNX session failed or returned more than two labels.
        """
        scores: list[float] = []
        for start in range(0, len(passages), self._batch_size):
            batch = passages[start:start + self._batch_size]
            scores.extend(self._score(query, batch))
        return scores

    def _score(self, query: str, passages: Sequence[str]) -> list[float]:
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        columns = {"input_ids": [e.ids for e in encodings], "attention_mask": [e.attention_mask for e in encodings],
                   "token_type_ids": [e.type_ids for e in encodings]}
        feed = {name: np.asarray(columns[name], dtype=dtype) for name, dtype in self._inputs.items() if name in columns}
        missing = set(self._inputs) - set(feed)
        if missing:
            raise ModelError(f"ONNX cross-encoder {self.spec} expects inputs Beleg cannot build: {', '.join(sorted(missing))}")
        try:
            (logits,) = self._session.run([self._output], feed)
        except Exception as exc:  # onnxruntime's own error types
            raise ModelError(f"ONNX cross-encoder {self.spec} failed: {exc}") from exc
        logits = np.asarray(logits, dtype=np.float32).reshape(len(passages), -1)
        if logits.shape[1] not in (1, 2):
            raise ModelError(f"ONNX cross-encoder {self.spec} returned {logits.shape[1]} labels per pair; a reranker "
                             "needs 1 (a relevance score) or 2 (not relevant / relevant)")
        return [float(s) for s in logits[:, -1]]

    def __repr__(self) -> str:
        return f"OnnxCrossEncoderReranker({self.spec!r})"
