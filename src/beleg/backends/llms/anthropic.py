"""Anthropic's Messages API (``POST {base_url}/v1/messages``), spoken over plain HTTP.

Talking HTTP directly instead of through the ``anthropic`` SDK keeps Beleg's dependencies
to httpx and gives both providers the same retry and error behaviour. The Messages API
differs from OpenAI's in ways this module absorbs: system prompts are a top-level field,
``max_tokens`` is required, replies are a list of content blocks, and streams are typed
events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from beleg.backends.llms.base import Completion, Message, Usage
from beleg.backends.llms.http import HTTPClient, parse_json_payload
from beleg.errors import LLMResponseError

logger = logging.getLogger(__name__)

ANTHROPIC_VERSION = "2023-06-01"
_PATH = "v1/messages"


class AnthropicLLM:
    """A Claude model through the Anthropic Messages API.

    Args:
        model: Model name, e.g. ``"claude-sonnet-4-5"``.
        base_url: API root without the version, ``"https://api.anthropic.com"`` by default.
        api_key: Sent as ``x-api-key``.
        name: Spec string shown in traces; defaults to ``"anthropic:MODEL"``.
        key_env: Environment variable for the key, named in authentication errors.
        timeout_s, max_retries, backoff_base_s: See :class:`~beleg.backends.llms.http.HTTPClient`.
        max_tokens, temperature: Defaults for :meth:`complete` calls that do not pass them.
    """

    def __init__(self, model: str, *, base_url: str = "https://api.anthropic.com", api_key: str | None = None,
                 name: str | None = None, key_env: str | None = "ANTHROPIC_API_KEY", timeout_s: float = 60.0,
                 max_retries: int = 2, backoff_base_s: float = 0.5, max_tokens: int = 1024,
                 temperature: float = 0.0) -> None:
        self.model = model
        self.name = name or f"anthropic:{model}"
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._http = HTTPClient(base_url, headers=headers, timeout_s=timeout_s, max_retries=max_retries,
                                backoff_base_s=backoff_base_s, key_env=key_env, secret=api_key)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                 temperature: float | None = None, on_token: Callable[[str], None] | None = None) -> Completion:
        """Send ``messages`` and return the reply; stream text deltas to ``on_token`` if given.

        System messages are joined (blank line between them) into the ``system`` field.

        Raises:
            LLMUnavailableError, LLMAuthError, LLMResponseError: see :class:`HTTPClient`.
        """
        start = time.perf_counter()
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
        }
        system = [m.content for m in messages if m.role == "system"]
        if system:
            body["system"] = "\n\n".join(system)
        if on_token is None:
            data, attempts = self._http.post_json(_PATH, body)
            text, model, usage, finish = self._parse(data)
        else:
            body["stream"] = True
            text, model, usage, finish, attempts = self._stream(body, on_token)
        latency = time.perf_counter() - start
        logger.debug("%s: %d+%d tokens in %.2fs (%d attempts)", self.name, usage.prompt_tokens,
                     usage.completion_tokens, latency, attempts)
        return Completion(text=text, model=model, usage=usage, finish_reason=finish,
                          latency_s=latency, attempts=attempts)

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._http.close()

    def _parse(self, data: Any) -> tuple[str, str, Usage, str | None]:
        url = self._http.url(_PATH)
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise LLMResponseError(f"{url} answered without a content list: {str(data)[:300]!r}")
        text = "".join(str(block.get("text", "")) for block in data["content"]
                       if isinstance(block, dict) and block.get("type") == "text")
        usage = data.get("usage") or {}
        return (text, str(data.get("model") or self.model),
                Usage(prompt_tokens=_input_tokens(usage), completion_tokens=int(usage.get("output_tokens") or 0)),
                data.get("stop_reason"))

    def _stream(self, body: dict[str, Any],
                on_token: Callable[[str], None]) -> tuple[str, str, Usage, str | None, int]:
        url = self._http.url(_PATH)
        parts: list[str] = []
        model, finish = self.model, None
        prompt_tokens = completion_tokens = 0
        with self._http.stream_sse(_PATH, body) as events:
            for payload in events:
                event = parse_json_payload(payload, url)
                kind = event.get("type") if isinstance(event, dict) else None
                if kind == "content_block_delta":
                    delta = event.get("delta") or {}
                    if delta.get("type", "text_delta") == "text_delta" and delta.get("text"):
                        parts.append(delta["text"])
                        on_token(delta["text"])
                elif kind == "message_start":
                    message = event.get("message") or {}
                    model = str(message.get("model") or model)
                    usage = message.get("usage") or {}
                    prompt_tokens = _input_tokens(usage)
                    completion_tokens = int(usage.get("output_tokens") or 0)
                elif kind == "message_delta":
                    # output_tokens here is cumulative, so it replaces the start value.
                    completion_tokens = int((event.get("usage") or {}).get("output_tokens") or completion_tokens)
                    finish = (event.get("delta") or {}).get("stop_reason") or finish
                elif kind == "error":
                    error = event.get("error") or {}
                    raise LLMResponseError(f"{url} reported an error mid-stream: "
                                           f"{error.get('type', 'error')}: {error.get('message', '')}"[:400])
                elif kind == "message_stop":
                    break
            attempts = events.attempts
        return "".join(parts), model, Usage(prompt_tokens, completion_tokens), finish, attempts

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"


def _input_tokens(usage: dict[str, Any]) -> int:
    """All prompt tokens: with prompt caching Anthropic reports cached ones separately."""
    return sum(int(usage.get(key) or 0)
               for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


__all__ = ["ANTHROPIC_VERSION", "AnthropicLLM"]
