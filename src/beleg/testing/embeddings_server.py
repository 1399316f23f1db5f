"""A fake OpenAI-compatible embeddings server on localhost, for testing over real HTTP.

It answers ``POST /v1/embeddings`` with deterministic vectors (a hash of each input, so
the same text always gets the same vector and different texts different ones), checks
requests the way OpenAI does (``model`` and ``input`` present, the bearer key when one
is set), records every request, counts how many were in flight at once (to test a
client's concurrency limit) and can be told to misbehave with the failures of
:mod:`beleg.testing.servers`: :func:`status` (429/500 with ``Retry-After``),
:func:`delay` (slow answers, client timeouts), :func:`garbage`, :func:`disconnect`.

Example:
    >>> from beleg.backends.embedders.remote import RemoteEmbedder
    >>> with FakeEmbeddingsServer(dim=8) as server:
    ...     server.fail(status(429, retry_after=0))
    ...     embedder = RemoteEmbedder(f"m@{server.base_url}", backoff_base_s=0)
    ...     embedder.embed_documents(["hello"]).shape
    (1, 8)
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from beleg.testing.servers import (
    Failure,
    LoopbackFake,
    _Handler,
    _KeepAliveHandler,
    delay,
    disconnect,
    garbage,
    status,
)

logger = logging.getLogger(__name__)

EMBEDDINGS_PATH = "/v1/embeddings"


def fake_vector(text: str, dim: int) -> np.ndarray:
    """The unit vector the fake serves for ``text`` (float32; tests compare against it)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


class FakeEmbeddingsServer(LoopbackFake):
    """Serves ``POST /v1/embeddings``; ``base_url`` ends in ``/v1`` like OpenAI's.

    Args:
        dim: Length of every vector served.
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get 401.
        failures: Failures for the first requests (more with :meth:`fail`).
        max_inputs: Requests with more inputs than this get 400 (OpenAI allows 2048).
        latency_s: Every answer waits this long (to make overlapping requests visible).
    """

    base_path = "/v1"
    handler = _KeepAliveHandler

    def __init__(self, *, dim: int = 16, api_key: str | None = None, failures: Iterable[Failure] = (),
                 max_inputs: int = 2048, latency_s: float = 0.0) -> None:
        self.dim = dim
        self.max_inputs = max_inputs
        self.latency_s = latency_s
        #: The most requests that were being answered at the same moment.
        self.max_in_flight = 0
        self._in_flight = 0
        super().__init__(failures=failures, api_key=api_key)

    def embedded_texts(self) -> list[str]:
        """Every input of every answered-or-not request, in arrival order."""
        return [t for r in self.requests if isinstance(r.json, dict) for t in r.json.get("input") or []]

    # -- request handling ----------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        headers, body, failure = self._receive(handler, takes_failure=True)
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            self._answer(handler, headers, body, failure)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("%s: client went away before the answer was sent", self.base_url)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(self, handler: _Handler, headers: dict[str, str], body: Any, failure: Failure | None) -> None:
        if handler.path != EMBEDDINGS_PATH:
            self._error(handler, 404, f"no route for POST {handler.path}; the endpoint is {EMBEDDINGS_PATH}")
            return
        if failure is not None and failure.kind == "delay":
            if self._stopping.wait(failure.seconds):
                return
        elif failure is not None:
            self._misbehave(handler, failure)
            return
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            self._error(handler, 401, "Incorrect API key provided")
            return
        problem = self._invalid(body)
        if problem is not None:
            self._error(handler, 400, problem)
            return
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, self.dim).tolist()}
                for i, t in enumerate(inputs)]
        data.reverse()  # OpenAI promises an index per item, not the order: clients must sort
        answer = {"object": "list", "data": data, "model": body["model"],
                  "usage": {"prompt_tokens": sum(len(t.split()) for t in inputs),
                            "total_tokens": sum(len(t.split()) for t in inputs)}}
        self._send(handler, 200, json.dumps(answer).encode())

    def _invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "the body must be a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' is required"
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) and t for t in inputs):
            return "'input' must be a non-empty string or a non-empty list of non-empty strings"
        if len(inputs) > self.max_inputs:
            return f"'input' has {len(inputs)} items; at most {self.max_inputs} are allowed"
        return None

    def _misbehave(self, handler: _Handler, failure: Failure) -> None:
        if failure.kind == "status":
            self._error(handler, failure.status, failure.message or f"fake failure: HTTP {failure.status}",
                        failure.retry_after)
        elif failure.kind == "garbage":
            self._send(handler, 200, b"{not json")
        else:  # disconnect: answer nothing and close the socket
            handler.close_connection = True

    def _send(self, handler: _Handler, code: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in (extra or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    def _error(self, handler: _Handler, code: int, message: str, retry_after: float | None = None) -> None:
        extra = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
        self._send(handler, code, json.dumps(body).encode(), extra)


__all__ = ["EMBEDDINGS_PATH", "FakeEmbeddingsServer", "delay", "disconnect", "fake_vector", "garbage", "status"]
