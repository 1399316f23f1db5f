"""The HTTP plumbing both LLM backends share: JSON POSTs, SSE streams, retries, errors.

Hosted LLM APIs fail in a few well-known ways: the server is down or unreachable, it is
overloaded (429/5xx, sometimes with ``Retry-After``), the key is wrong (401/403), or the
request is wrong (404 for an unknown model, 400 for a bad field). Only the first two are
worth retrying. Everything here exists so that each of those cases ends in one error that
names the URL and says what to do, instead of an httpx traceback.

Streams are retried only until the response headers arrive: once text has been handed to
``on_token`` a retry would deliver it twice.
"""

from __future__ import annotations

import codecs
import email.utils
import json
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from beleg.backends.llms.base import current_deadline
from beleg.errors import (
    ConfigError,
    LLMAuthError,
    LLMError,
    LLMResponseError,
    LLMUnavailableError,
)

logger = logging.getLogger(__name__)

#: Statuses that mean "try again later" rather than "your request is wrong".
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}
_EXCERPT_CHARS = 300


class HTTPClient:
    """POST JSON to one base URL with timeouts, retries and readable errors.

    Args:
        base_url: ``scheme://host[:port][/prefix]``; request paths are appended to it.
        headers: Sent with every request (auth headers go here).
        timeout_s: Wall-clock limit of one attempt in seconds, from connecting to the last
            byte of the answer (a streamed answer included).
        max_retries: Retries after the first attempt for connection errors, timeouts and
            HTTP 429/500/502/503/504. Other 4xx are never retried.
        backoff_base_s: First retry waits about this long, doubling each time (with
            jitter, so many clients do not retry in lockstep). Tests set it near zero.
        backoff_max_s: Upper bound for one backoff wait.
        retry_after_max_s: Upper bound for honouring a server's ``Retry-After``.
        key_env: Environment variable that holds the key, named in 401/403 errors.
        secret: The API key; it is scrubbed from any server text quoted in an error.

    Raises:
        ConfigError: ``base_url`` is not an http(s) URL.
    """

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = 60.0,
                 max_retries: int = 2, backoff_base_s: float = 0.5, backoff_max_s: float = 8.0,
                 retry_after_max_s: float = 30.0, key_env: str | None = None,
                 secret: str | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"LLM base URL {base_url!r} is not an http(s) URL; "
                              "expected something like 'http://localhost:11434/v1'")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.retry_after_max_s = retry_after_max_s
        self.key_env = key_env
        self._secret = secret
        self._headers = dict(headers or {})
        # A local server never sits behind the corporate proxy that HTTP(S)_PROXY names.
        self._trust_env = (parts.hostname or "") not in _LOOPBACK
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _http(self) -> httpx.Client:
        # Built on first use: creating the TLS context costs ~20 ms, and building a backend
        # (load_llm, config checks) should not pay for a request it may never make.
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(headers=self._headers, timeout=httpx.Timeout(self.timeout_s),
                                            trust_env=self._trust_env)
            return self._client

    def post_json(self, path: str, body: Mapping[str, Any]) -> tuple[Any, int]:
        """POST ``body`` and return ``(parsed JSON answer, attempts)``.

        Raises:
            LLMUnavailableError: Unreachable, or no whole answer within the time limits, after all retries.
            LLMAuthError: HTTP 401/403.
            LLMResponseError: Any other error status, or a body that is not UTF-8 JSON.
        """
        response, content, attempts = self._send(path, body, stream=False)
        url = response.request.url
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LLMResponseError(f"{url} sent a body that is not valid UTF-8 (HTTP {response.status_code}, "
                                   f"byte {exc.start}: {content[exc.start:exc.start + 4]!r})") from None
        try:
            return json.loads(text), attempts
        except ValueError as exc:
            raise LLMResponseError(
                f"{url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{self._excerpt(text)!r}") from exc

    def stream_sse(self, path: str, body: Mapping[str, Any]) -> SSEStream:
        """POST ``body`` and return the server-sent-event stream of the answer.

        Use it as a context manager; iterating yields each event's ``data:`` payload.
        Retries happen on entering, before any event is read.
        """
        return SSEStream(self, path, body)

    # -- internals ---------------------------------------------------------------------

    def _send(self, path: str, body: Mapping[str, Any], *,
              stream: bool) -> tuple[httpx.Response, bytes, int]:
        """One request with retries: ``(response, body bytes, attempts)``; for ``stream`` the
        response is open, its body unread (b""), and ``response.extensions["beleg_deadline"]``
        holds the instant the whole stream must have ended by.

        Each attempt must end (body included) within ``timeout_s`` of wall time, and every
        attempt and wait within the caller's :func:`~beleg.backends.llms.base.llm_deadline`.
        httpx's own timeout applies per read, so a server that trickles a byte now and
        then would never trip it: the body is read here, checking the clock at every chunk.
        """
        url = self.url(path)
        outer = current_deadline()
        attempts = 0
        while True:
            attempts += 1
            started = time.monotonic()
            deadline = started + self.timeout_s
            if outer is not None:
                deadline = min(deadline, outer)
            if deadline <= started:
                raise self._timeout_error(url, attempts - 1, outer)
            wait: float | None = None
            try:
                client = self._http()
                request = client.build_request("POST", url, json=body,
                                               timeout=httpx.Timeout(deadline - started))
                response = client.send(request, stream=True)
                if response.is_success and stream:
                    response.extensions = {**response.extensions, "beleg_deadline": deadline}
                    return response, b"", attempts
                content = _read_before(response, deadline)
                if response.is_success:
                    return response, content, attempts
            except (httpx.TimeoutException, _Overdue) as exc:
                if attempts > self.max_retries or _passed(outer):
                    raise self._timeout_error(url, attempts, outer) from exc
                reason = f"no whole answer within {deadline - started:.3g}s"
            except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
                if attempts > self.max_retries or _passed(outer):
                    raise LLMUnavailableError(
                        f"could not reach {url} ({_tries(attempts)}): {_describe(exc)}; "
                        "is the server running and is the base URL right?") from exc
                reason = _describe(exc)
            except httpx.HTTPError as exc:
                # e.g. an illegal header value; httpx's message would quote the API key,
                # so neither it nor the chained exception may reach a log.
                raise LLMError(f"request to {url} could not be sent: "
                               f"{self._excerpt(str(exc))} ({type(exc).__name__})") from None
            else:
                status = response.status_code
                if status not in RETRY_STATUSES or attempts > self.max_retries:
                    raise self._status_error(url, response, content, attempts)
                reason = f"HTTP {status}"
                wait = self._retry_after(response)
            if wait is None:
                wait = self._backoff(attempts)
            if outer is not None and time.monotonic() + wait >= outer:
                raise LLMUnavailableError(f"{url} failed ({reason}) and the caller's time budget leaves no time "
                                          f"to retry ({_tries(attempts)})")
            logger.warning("LLM request to %s failed (%s); retry %d/%d in %.2fs",
                           url, reason, attempts, self.max_retries, wait)
            time.sleep(wait)

    def _timeout_error(self, url: str, attempts: int, outer: float | None) -> LLMUnavailableError:
        if _passed(outer):
            return LLMUnavailableError(f"{url} did not answer within the caller's time budget "
                                       f"({_tries(attempts)}); the call was cut off")
        return LLMUnavailableError(
            f"{url} did not answer within {self.timeout_s:g}s ({_tries(attempts)}); "
            "is the server running? For slow models raise the timeout "
            "(BELEG_LLM_TIMEOUT or [llm].timeout_s).")

    def _backoff(self, attempt: int) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(delay / 2, delay)

    def _retry_after(self, response: httpx.Response) -> float | None:
        value = response.headers.get("retry-after")
        if value is None:
            return None
        try:
            seconds = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            seconds = when.timestamp() - time.time()
        return min(max(seconds, 0.0), self.retry_after_max_s)

    def _status_error(self, url: str, response: httpx.Response, content: bytes,
                      attempts: int) -> LLMResponseError | LLMAuthError:
        status = response.status_code
        detail = self._excerpt(_error_message(response, content))
        if status in (401, 403):
            where = f"set {self.key_env} to a valid API key" if self.key_env else \
                "set BELEG_LLM_API_KEY (or [llm].api_key_env in beleg.toml) to a valid API key"
            return LLMAuthError(f"{url} rejected the credentials (HTTP {status}: {detail}); {where}")
        retried = f" after {_tries(attempts)}" if attempts > 1 else ""
        hint = " Check the model name and the base URL." if status == 404 else ""
        return LLMResponseError(f"{url} answered HTTP {status}{retried}: {detail}.{hint}")

    def _excerpt(self, text: str) -> str:
        text = " ".join(text.split())
        if self._secret:
            text = text.replace(self._secret, "***")
        return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "…"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class SSEStream:
    """An open ``text/event-stream`` answer; see :meth:`HTTPClient.stream_sse`.

    ``attempts`` is set once the stream is open. Iterating yields the ``data:`` payload of
    each event (multi-line data joined with newlines); comments and other fields are
    dropped because both providers repeat the event type inside the JSON payload.
    """

    def __init__(self, client: HTTPClient, path: str, body: Mapping[str, Any]) -> None:
        self._client = client
        self._path = path
        self._body = body
        self._response: httpx.Response | None = None
        self.attempts = 0

    def __enter__(self) -> Self:
        self._response, _, self.attempts = self._client._send(self._path, self._body, stream=True)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._response is not None:
            self._response.close()

    def __iter__(self) -> Iterator[str]:
        if self._response is None:
            raise RuntimeError("SSEStream must be entered (`with client.stream_sse(...) as events:`)")
        url = str(self._response.request.url)
        data: list[str] = []
        seen: list[str] = []  # the first lines, to quote when the answer is no event stream
        events = 0
        for line in self._lines(url):
            if len(seen) < 5:
                seen.append(line)
            if not line:
                if data:
                    events += 1
                    yield "\n".join(data)
                    data = []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events += 1
            yield "\n".join(data)
        if not events:
            # A proxy or server that ignores "stream": true must not pass for an empty answer.
            kind = self._response.headers.get("content-type", "no content type")
            raise LLMResponseError(f"{url} answered a streaming request without any events ({kind}): "
                                   f"{self._client._excerpt(' '.join(seen))!r}")

    def _lines(self, url: str) -> Iterator[str]:
        """The body's lines, decoded as strict UTF-8, within the deadline of the whole stream.

        httpx's ``iter_lines`` replaces undecodable bytes silently, which would print
        replacement characters as the answer; a wrong encoding is the server's error."""
        assert self._response is not None
        deadline: float = self._response.extensions["beleg_deadline"]
        decoder = codecs.getincrementaldecoder("utf-8")(errors="strict")
        pending = ""
        try:
            for chunk in self._response.iter_bytes():
                if time.monotonic() > deadline:
                    raise _Overdue
                pending += decoder.decode(chunk)
                *lines, pending = pending.split("\n")
                for line in lines:
                    yield line.removesuffix("\r")
            pending += decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise LLMResponseError(f"{url} sent a body that is not valid UTF-8 in the middle of a streamed "
                                   "answer") from None
        except (httpx.TimeoutException, _Overdue) as exc:
            cut = "the caller's time budget" if _passed(current_deadline()) else f"{self._client.timeout_s:g}s"
            raise LLMUnavailableError(f"{url} did not finish a streamed answer within {cut}; the stream was "
                                      "closed. For slow models raise the timeout (BELEG_LLM_TIMEOUT or "
                                      "[llm].timeout_s).") from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise LLMUnavailableError(f"{url} broke off a streamed answer: {_describe(exc)}") from exc
        if pending:
            yield pending.removesuffix("\r")


def parse_json_payload(payload: str, url: str) -> Any:
    """Decode one JSON payload (an SSE event), as an LLMResponseError when it is not JSON."""
    try:
        return json.loads(payload)
    except ValueError as exc:
        raise LLMResponseError(f"{url} sent a stream event that is not JSON: {payload[:_EXCERPT_CHARS]!r}") from exc


def _error_message(response: httpx.Response, content: bytes) -> str:
    """The human part of an error body: OpenAI ``{"error": {"message"}}``, Ollama
    ``{"error": "..."}``, Anthropic ``{"type": "error", "error": {"message"}}``, else text."""
    text = content.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, str):
            return error
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return text


class _Overdue(Exception):
    """The answer did not arrive whole before the deadline (internal; becomes LLMUnavailableError)."""


def _passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _read_before(response: httpx.Response, deadline: float) -> bytes:
    """The whole body, or :class:`_Overdue` (the response closed) once ``deadline`` passes."""
    chunks: list[bytes] = []
    try:
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise _Overdue
    finally:
        response.close()
    return b"".join(chunks)


def _describe(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return text


def _tries(attempts: int) -> str:
    return "1 attempt" if attempts == 1 else f"{attempts} attempts"


__all__ = ["RETRY_STATUSES", "HTTPClient", "SSEStream", "parse_json_payload"]
