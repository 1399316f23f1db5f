"""Chat completions over the OpenAI wire format (``POST {base_url}/chat/completions``).

One class serves OpenAI itself and the local servers that copy its API (Ollama, vLLM,
llama.cpp's server, LM Studio), because they differ only in base URL and whether a key is
needed. :meth:`OpenAICompatibleLLM.complete` sends only the common core and asks for plain
text. :meth:`OpenAICompatibleLLM.complete_with_tools` adds OpenAI's ``tools`` /
``tool_calls`` function-calling format, which vLLM, Ollama and llama.cpp's server copy
(for models whose chat template supports tools); it does not stream.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from beleg.backends.llms.base import (
    Completion,
    Message,
    ToolCall,
    ToolCompletion,
    Usage,
)
from beleg.backends.llms.http import HTTPClient, parse_json_payload
from beleg.errors import LLMResponseError

logger = logging.getLogger(__name__)


class OpenAICompatibleLLM:
    """An OpenAI-compatible chat endpoint.

    Args:
        model: Model name as the server knows it (``"gpt-4.1-mini"``, ``"llama3.1:8b"``).
        base_url: API root including the version prefix, e.g. ``"http://localhost:11434/v1"``.
        api_key: Sent as ``Authorization: Bearer``; omit for local servers without auth.
        name: Spec string shown in traces; defaults to ``"openai-compatible:MODEL"``.
        key_env: Environment variable for the key, named in authentication errors.
        timeout_s, max_retries, backoff_base_s: See :class:`~beleg.backends.llms.http.HTTPClient`.
        max_tokens, temperature: Defaults for :meth:`complete` calls that do not pass them.

    Example:
        >>> llm = OpenAICompatibleLLM("llama3.1:8b", base_url="http://localhost:11434/v1")
        >>> llm.complete([Message("user", "Say hi")]).text  # doctest: +SKIP
    """

    def __init__(self, model: str, *, base_url: str, api_key: str | None = None, name: str | None = None,
                 key_env: str | None = None, timeout_s: float = 60.0, max_retries: int = 2,
                 backoff_base_s: float = 0.5, max_tokens: int = 1024, temperature: float = 0.0) -> None:
        self.model = model
        self.name = name or f"openai-compatible:{model}"
        self.max_tokens = max_tokens
        self.temperature = temperature
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = HTTPClient(base_url, headers=headers, timeout_s=timeout_s, max_retries=max_retries,
                                backoff_base_s=backoff_base_s, key_env=key_env, secret=api_key)

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                 temperature: float | None = None, on_token: Callable[[str], None] | None = None) -> Completion:
        """Send ``messages`` and return the reply; stream deltas to ``on_token`` if given.

        Raises:
            LLMUnavailableError, LLMAuthError, LLMResponseError: see :class:`HTTPClient`.
        """
        start = time.perf_counter()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(m) for m in messages],
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if on_token is None:
            data, attempts = self._http.post_json("chat/completions", body)
            text, model, usage, finish = self._parse(data)
        else:
            body["stream"] = True
            # Without this OpenAI sends no usage when streaming; other servers ignore it.
            body["stream_options"] = {"include_usage": True}
            text, model, usage, finish, attempts = self._stream(body, on_token)
        latency = time.perf_counter() - start
        logger.debug("%s: %d+%d tokens in %.2fs (%d attempts)", self.name, usage.prompt_tokens,
                     usage.completion_tokens, latency, attempts)
        return Completion(text=text, model=model, usage=usage, finish_reason=finish,
                          latency_s=latency, attempts=attempts)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *,
                            max_tokens: int | None = None, temperature: float | None = None,
                            tool_choice: str | dict[str, Any] | None = None) -> ToolCompletion:
        """One turn with tools: the model answers with tool calls, text, or both.

        Args:
            messages: The conversation so far; assistant messages carry the ``tool_calls``
                they made and each call is answered by a ``tool`` message with its id.
            tools: OpenAI tool specs (``{"type": "function", "function": {...}}``).
            tool_choice: ``"auto"`` (the server default), ``"none"``, ``"required"`` or a
                named function; omitted when None.

        Raises:
            LLMUnavailableError, LLMAuthError, LLMResponseError: see :class:`HTTPClient`;
            LLMResponseError also when a tool call in the answer is malformed.
        """
        start = time.perf_counter()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(m) for m in messages],
            "tools": list(tools),
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if tool_choice is not None:
            body["tool_choice"] = tool_choice
        data, attempts = self._http.post_json("chat/completions", body)
        url = self._http.url("chat/completions")
        try:
            choice = data["choices"][0]
            message = choice["message"]
            content = message.get("content") or ""
            raw_calls = message.get("tool_calls") or []
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMResponseError(f"{url} answered without choices[0].message: {str(data)[:300]!r}") from exc
        if not isinstance(content, str):
            raise LLMResponseError(f"{url} answered with non-text content: {str(content)[:300]!r}")
        if not isinstance(raw_calls, list):
            raise LLMResponseError(f"{url} answered with tool_calls that are not a list: {str(raw_calls)[:300]!r}")
        calls = tuple(parse_tool_call(raw, i, url) for i, raw in enumerate(raw_calls))
        latency = time.perf_counter() - start
        usage = _usage(data.get("usage"))
        logger.debug("%s: %d+%d tokens, %d tool calls in %.2fs (%d attempts)", self.name, usage.prompt_tokens,
                     usage.completion_tokens, len(calls), latency, attempts)
        return ToolCompletion(text=content, tool_calls=calls, model=str(data.get("model") or self.model),
                              usage=usage, finish_reason=choice.get("finish_reason"), latency_s=latency,
                              attempts=attempts)

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._http.close()

    def _parse(self, data: Any) -> tuple[str, str, Usage, str | None]:
        url = self._http.url("chat/completions")
        try:
            choice = data["choices"][0]
            content = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMResponseError(f"{url} answered without choices[0].message.content: "
                                   f"{str(data)[:300]!r}") from exc
        if not isinstance(content, str):
            raise LLMResponseError(f"{url} answered with non-text content: {str(content)[:300]!r}")
        return content, str(data.get("model") or self.model), _usage(data.get("usage")), choice.get("finish_reason")

    def _stream(self, body: dict[str, Any],
                on_token: Callable[[str], None]) -> tuple[str, str, Usage, str | None, int]:
        url = self._http.url("chat/completions")
        parts: list[str] = []
        model, usage, finish = self.model, Usage(), None
        with self._http.stream_sse("chat/completions", body) as events:
            for payload in events:
                if payload.strip() == "[DONE]":
                    break
                chunk = parse_json_payload(payload, url)
                if not isinstance(chunk, dict):
                    raise LLMResponseError(f"{url} sent a stream event that is not an object: {payload[:300]!r}")
                if "error" in chunk:
                    raise LLMResponseError(f"{url} reported an error mid-stream: {str(chunk['error'])[:300]}")
                model = str(chunk.get("model") or model)
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
                for choice in chunk.get("choices") or []:
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        parts.append(delta)
                        on_token(delta)
                    finish = choice.get("finish_reason") or finish
            attempts = events.attempts
        return "".join(parts), model, usage, finish, attempts

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.base_url!r})"


def wire_message(m: Message) -> dict[str, Any]:
    """A message in the OpenAI chat format; plain messages stay ``{"role", "content"}``."""
    if m.role == "tool":
        return {"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content}
    if m.tool_calls:
        return {"role": m.role, "content": m.content or None,
                "tool_calls": [{"id": c.id, "type": "function",
                                "function": {"name": c.name,
                                             "arguments": c.invalid_arguments if c.invalid_arguments is not None
                                             else json.dumps(c.arguments, ensure_ascii=False)}}
                               for c in m.tool_calls]}
    return {"role": m.role, "content": m.content}


def parse_tool_call(raw: Any, index: int, url: str) -> ToolCall:
    """One entry of ``message.tool_calls``. Arguments that are not a JSON object are kept raw
    in :attr:`ToolCall.invalid_arguments` (models do emit broken JSON); a call without a
    function name is an LLMResponseError."""
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(function, dict) or not isinstance(function.get("name"), str) \
            or not function["name"]:
        raise LLMResponseError(f"{url} answered with a tool call without a function name: {str(raw)[:300]!r}")
    name = function["name"]
    call_id = raw.get("id")
    call_id = call_id if isinstance(call_id, str) and call_id else f"call_{index}"
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # Ollama sends an object instead of a JSON string
        return ToolCall(call_id, name, arguments)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return ToolCall(call_id, name, {})
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        return ToolCall(call_id, name, {}, invalid_arguments=text)
    return ToolCall(call_id, name, decoded)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(prompt_tokens=int(raw.get("prompt_tokens") or 0),
                 completion_tokens=int(raw.get("completion_tokens") or 0))


__all__ = ["OpenAICompatibleLLM", "parse_tool_call", "wire_message"]
