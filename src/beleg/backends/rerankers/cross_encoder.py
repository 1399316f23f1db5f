"""Cross-encoder reranking through sentence-transformers, from a local model directory.

Beleg never downloads models: no cross-encoder ships in a PyPI package, and the machines
it runs on may have no route to a model hub. So the spec names a directory that already
holds the model (``config.json``, weights, tokenizer files), for example one written by
``CrossEncoder("cross-encoder/ms-marco-MiniLM-L-6-v2").save_pretrained(DIR)`` on a
machine that can download it. Anything else fails before any network code is reached.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, ModelError, missing_dependency

#: What a model hub id looks like ("org/name" or "name"); used only to word the error.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
#: Tokenizers that declare no limit report this huge sentinel as their model_max_length.
_NO_LIMIT = 1_000_000


def local_model_dir(model: str | Path, *, needs: Sequence[str] = ("config.json",), kind: str = "cross-encoder",
                    example: str = "one written by CrossEncoder(NAME).save_pretrained(DIR) on a machine with network "
                                   "access") -> Path:
    """Check that ``model`` is a local model directory and return it.

    Args:
        model: The directory given in the reranker spec.
        needs: Files the directory must contain; each entry may list alternatives
            separated by ``|`` (``"model.onnx|onnx/model.onnx"``).
        kind: The backend's name, for the messages.
        example: How such a directory is made, for the messages.

    Returns:
        The directory as an absolute :class:`~pathlib.Path`.

    Raises:
        ConfigError: The path is missing, is a file, or lacks one of ``needs``. The message
            says that nothing is downloaded and what to pass instead.

    Example:
        >>> local_model_dir("/models/ms-marco-MiniLM-L-6-v2")  # doctest: +SKIP
        PosixPath('/models/ms-marco-MiniLM-L-6-v2')
    """
    text = str(model).strip()
    if not text:
        raise ConfigError(f"the {kind} reranker needs a model directory; got an empty path")
    path = Path(text).expanduser()
    how = f"Beleg never downloads models, so pass a local directory that holds the {kind} model (for example {example})"
    if not path.exists():
        looks_like_hub_id = bool(_HUB_ID.match(text)) and not text.startswith((".", "~"))
        resolved = "" if str(path.absolute()) == text else f" ({path.absolute()})"
        lead = (f"{text!r} is not a local directory (it looks like a model hub name, and no model can be "
                f"downloaded here)" if looks_like_hub_id else
                f"the {kind} model directory {text!r} does not exist{resolved}")
        raise ConfigError(f"{lead}. {how}.")
    if not path.is_dir():
        raise ConfigError(f"the {kind} model path {text!r} is a file, not a directory; pass the directory "
                          f"that contains it ({path.absolute().parent}) instead")
    for need in needs:
        options = need.split("|")
        if not any((path / option).is_file() for option in options):
            names = sorted(p.name for p in path.iterdir())
            found = ", ".join(names[:8]) + (f", ... ({len(names)} entries)" if len(names) > 8 else "") or "nothing"
            raise ConfigError(f"the {kind} model directory {text!r} has no {' or '.join(options)} (found: {found}); "
                              f"{how}.")
    return path.absolute()


def max_input_length(path: Path, requested: int, tokenizer_limit: int | None = None) -> int:
    """The longest (query, passage) token sequence the model can take, capped at ``requested``.

    Args:
        path: The model directory (its ``tokenizer_config.json`` and ``config.json`` are read).
        requested: The caller's ``max_length``.
        tokenizer_limit: The loaded tokenizer's ``model_max_length``, when one is loaded.

    Returns:
        ``requested``, lowered to the tokenizer's declared limit or, without one, to the
        model's position-embedding count, so a long passage is truncated instead of
        indexing past the position table.
    """
    if requested < 1:
        raise ConfigError(f"max_length must be at least 1, got {requested}")
    if tokenizer_limit is None:
        tokenizer_limit = _read_json(path / "tokenizer_config.json").get("model_max_length")
    if isinstance(tokenizer_limit, (int, float)) and 0 < tokenizer_limit < _NO_LIMIT:
        return min(requested, int(tokenizer_limit))
    positions = _read_json(path / "config.json").get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        return min(requested, positions)
    return requested


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class CrossEncoderReranker:
    """Score (query, passage) pairs with a sentence-transformers ``CrossEncoder``.

    Scores are the model's raw logits: a monotone sigmoid would not change the order, and
    logits do not saturate at 1.0 the way probabilities do, so near-ties stay apart. For a
    one-label model (the ms-marco family) that is its single output; for a two-label
    classifier it is the logit of the second ("relevant") class.

    Args:
        model: A local model directory (``config.json``, weights, tokenizer files).
        batch_size: Pairs per forward pass.
        max_length: Longest query+passage token sequence; longer pairs are truncated
            (and never beyond what the model itself supports).
        device: Torch device, e.g. ``"cpu"`` or ``"cuda"``.

    Raises:
        MissingDependencyError: sentence-transformers is not installed.
        ConfigError: ``model`` is not a local model directory.
        ModelError: The directory could not be loaded, or the model has more than two labels.

    Example:
        >>> r = CrossEncoderReranker("/models/ms-marco-MiniLM-L-6-v2")  # doctest: +SKIP
        >>> scores = r.rerank("reset a password", ["Click 'Forgot password'.", "Pricing tiers"])  # doctest: +SKIP
        >>> scores[0] > scores[1]  # doctest: +SKIP
        True
    """

    def __init__(self, model: str, *, batch_size: int = 32, max_length: int = 512, device: str = "cpu") -> None:
        path = local_model_dir(model)
        if batch_size < 1 or max_length < 1:
            raise ConfigError(f"batch_size and max_length must be at least 1, got {batch_size} and {max_length}")
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise missing_dependency("sentence-transformers", "rerank", exc) from exc
        try:
            # local_files_only: the path was checked above; this keeps transformers from
            # ever asking a hub for a missing tokenizer or config file.
            self._model = CrossEncoder(str(path), device=device, local_files_only=True)
        except Exception as exc:  # transformers raises OSError, ValueError, KeyError, ... for bad directories
            raise ModelError(f"could not load the cross-encoder in {path}: {exc}") from exc
        labels = int(self._model.num_labels)
        if labels not in (1, 2):
            raise ModelError(f"the model in {path} has {labels} output labels; a reranker needs 1 (a relevance "
                             "score) or 2 (not relevant / relevant)")
        self._labels = labels
        self._model.max_seq_length = max_input_length(path, max_length, self._model.max_seq_length)
        self._identity = torch.nn.Identity()
        self._batch_size = batch_size
        self.spec = f"cross-encoder:{path}"

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One relevance score per passage (higher is more relevant), in input order.

        Args:
            query: The search query.
            passages: Candidate passages.

        Returns:
            Raw logits as floats; ``[]`` for no passages.

        Raises:
            ModelError: The forward pass failed.
        """
        if not passages:
            return []
        pairs = [(query, p) for p in passages]
        try:
            scores = self._model.predict(pairs, batch_size=self._batch_size, activation_fn=self._identity,
                                         show_progress_bar=False, convert_to_numpy=True)
        except Exception as exc:  # a failed forward pass (out of memory, bad input) is a model error to the caller
            raise ModelError(f"cross-encoder {self.spec} failed: {exc}") from exc
        if self._labels == 2:
            scores = scores[:, 1]
        return [float(s) for s in scores.reshape(len(pairs))]

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.spec!r})"
