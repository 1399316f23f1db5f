"""An embedder that calls an OpenAI-compatible ``/v1/embeddings`` endpoint over HTTP.

OpenAI itself, and the servers that copy its API (vLLM, Hugging Face TEI, Ollama,
LiteLLM, LocalAI), answer ``POST {base}/embeddings`` with ``{"model", "input": [...]}``.

Spec: ``openai:MODEL`` or ``openai:MODEL@BASE_URL``::

    openai:text-embedding-3-small                  # https://api.openai.com/v1 (or $BELEG_EMBED_BASE_URL)
    openai:bge-m3@http://gpu-box:8080/v1           # a self-hosted server

The spec is part of the index configuration, so it must hold no secret: the API key comes
from ``$BELEG_EMBED_API_KEY`` (else ``$OPENAI_API_KEY``), and a base URL with a user or
password in it is refused. The fingerprint recorded in the index is the base URL's host,
the model and the vector dimension, so an index built with one remote model refuses
another (or the same name served elsewhere) instead of mixing incomparable vectors.

Texts go out in batches of ``BELEG_EMBED_BATCH`` (64), at most ``BELEG_EMBED_CONCURRENCY``
(4) requests at a time; 429, 5xx, timeouts and dropped connections are retried
(``BELEG_EMBED_RETRIES``, 5) with exponential backoff and jitter, honouring ``Retry-After``.
The dimension is learnt from one probe request when the embedder is made, and every
answer is checked against it (count, order by ``index``, length, finite numbers).
No query/passage prefixes are added: OpenAI's models use none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from beleg.backends.embedders.base import BaseEmbedder, Kind
from beleg.backends.llms.http import HTTPClient
from beleg.errors import ConfigError, LLMError, ModelError

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_ENVS = ("BELEG_EMBED_API_KEY", "OPENAI_API_KEY")
_PROBE = "dimension probe"


def _env_number(name: str, default: float, *, minimum: float) -> float:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not a number; unset it or give e.g. {default:g}") from None
    if number < minimum:
        raise ConfigError(f"{name}={value!r} is below {minimum:g}; give e.g. {default:g}")
    return number


def parse_spec(arg: str) -> tuple[str, str]:
    """``MODEL[@BASE_URL]`` (the part after ``openai:``) → (model, base URL)."""
    model, sep, base_url = arg.partition("@")
    model = model.strip()
    if not model:
        raise ConfigError(f"embedder spec 'openai:{arg}' names no model; "
                          "expected openai:MODEL or openai:MODEL@http://host:port/v1")
    if not sep:
        base_url = os.environ.get("BELEG_EMBED_BASE_URL") or DEFAULT_BASE_URL
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"embedder base URL {base_url!r} is not an http(s) URL; "
                          "expected e.g. openai:MODEL@http://localhost:8080/v1")
    if parts.username or parts.password or "@" in parts.netloc:
        raise ConfigError(f"embedder base URL for {model!r} carries credentials; the spec is stored in the index, "
                          f"so put the key in ${KEY_ENVS[0]} instead")
    return model, base_url.rstrip("/")


class RemoteEmbedder(BaseEmbedder):
    """Embeds through ``POST {base_url}/embeddings`` (see the module docstring for the spec)."""

    def __init__(self, arg: str = "", *, api_key: str | None = None, batch_size: int | None = None,
                 concurrency: int | None = None, timeout_s: float | None = None, max_retries: int | None = None,
                 backoff_base_s: float = 0.5, dim: int | None = None) -> None:
        self.model, self.base_url = parse_spec(arg)
        self.spec = f"openai:{arg}"
        self.batch_size = int(batch_size or _env_number("BELEG_EMBED_BATCH", 64, minimum=1))
        self.concurrency = int(concurrency or _env_number("BELEG_EMBED_CONCURRENCY", 4, minimum=1))
        key_env = next((name for name in KEY_ENVS if os.environ.get(name)), KEY_ENVS[0])
        key = api_key if api_key is not None else os.environ.get(key_env)
        self._client = HTTPClient(
            self.base_url, headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout_s=timeout_s or _env_number("BELEG_EMBED_TIMEOUT", 60.0, minimum=0.001),
            max_retries=int(max_retries if max_retries is not None else _env_number("BELEG_EMBED_RETRIES", 5,
                                                                                     minimum=0)),
            backoff_base_s=backoff_base_s, key_env=key_env, secret=key)
        self.host = urlsplit(self.base_url).hostname or ""
        self.dim = dim or self._request([_PROBE]).shape[1]
        # What the index records: vectors from another host, model or size are not comparable.
        self.fingerprint = f"openai-embeddings:{self.host}:{self.model}:{self.dim}"

    def _embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        texts = list(texts)
        if len(texts) <= self.batch_size or self.concurrency == 1:
            return super()._embed(texts, kind)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        # Threads, not processes: the work is waiting on the network. map keeps the order.
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)),
                                thread_name_prefix="beleg-embed") as pool:
            parts = list(pool.map(lambda batch: self.embed_batch(batch, kind), batches))
        out = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_batch(self, texts: list[str], kind: Kind) -> np.ndarray:
        vectors = self._request(texts)
        if vectors.shape[1] != self.dim:
            raise ModelError(f"{self._where()} returned {vectors.shape[1]}-dimensional vectors, but this embedder "
                             f"(and the index) uses {self.dim}; the server's model changed: re-ingest into a new "
                             "index or point the spec at the original model")
        return vectors

    def _request(self, texts: list[str]) -> np.ndarray:
        try:
            answer, _ = self._client.post_json("embeddings", {"model": self.model, "input": texts})
        except LLMError as exc:  # the shared HTTP client words its timeout hint for LLMs
            message = str(exc).replace("BELEG_LLM_TIMEOUT or [llm].timeout_s", "BELEG_EMBED_TIMEOUT")
            raise ModelError(f"remote embedder {self.model!r}: {message}") from None
        return self._vectors(answer, len(texts))

    def _vectors(self, answer: Any, expected: int) -> np.ndarray:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            got = f"{len(data)} embeddings" if isinstance(data, list) else "no 'data' list"
            raise ModelError(f"{self._where()} answered with {got} for {expected} inputs; "
                             "expected an OpenAI embeddings response")
        try:
            ordered = sorted(data, key=lambda item: int(item.get("index", 0)))
            rows = [item["embedding"] for item in ordered]
            vectors = np.asarray(rows, dtype=np.float32)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"{self._where()} answered with malformed embeddings ({type(exc).__name__}: {exc}); "
                             "expected data: [{index, embedding: [floats]}]") from None
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise ModelError(f"{self._where()} answered with embeddings of unequal length, empty or not finite")
        return vectors

    def _where(self) -> str:
        return f"{self._client.url('embeddings')} (model {self.model!r})"

    def close(self) -> None:
        self._client.close()
