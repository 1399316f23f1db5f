"""The LLM protocol every backend implements, and the values it passes.

One method, :meth:`LLM.complete`, takes chat messages and returns a :class:`Completion`.
Streaming is a callback (``on_token``) rather than a second API, so callers that do not
stream and callers that do get the same final value, usage included.

Backends that support tool calling (function calling) also implement
:meth:`ToolLLM.complete_with_tools`: the model may answer with :class:`ToolCall` s instead
of (or besides) text; the caller runs them and sends the results back as ``tool``
messages (``Message("tool", result, tool_call_id=call.id)``) after the assistant message
that asked for them (``Message("assistant", text, tool_calls=calls)``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]

#: The wall-clock instant (``time.monotonic()``) by which the LLM calls of this context must end.
_DEADLINE: ContextVar[float | None] = ContextVar("beleg_llm_deadline", default=None)


@contextmanager
def llm_deadline(seconds: float) -> Iterator[None]:
    """LLM calls made inside the block end within ``seconds`` of wall time, retries and
    streamed bodies included, or fail with :class:`~beleg.errors.LLMUnavailableError`.

    A caller's time budget (a strategy's ``Budget.max_seconds``) reaches the HTTP backends
    this way rather than through every ``complete`` signature; nested blocks keep the
    earlier deadline. The backend's own ``timeout_s`` still bounds each attempt.
    """
    at = time.monotonic() + max(0.0, seconds)
    outer = _DEADLINE.get()
    token = _DEADLINE.set(at if outer is None else min(outer, at))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> float | None:
    """The deadline :func:`llm_deadline` set for this context (``time.monotonic()`` scale), or None."""
    return _DEADLINE.get()


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool the model asked for.

    ``arguments`` is the decoded JSON object. When the model sent arguments that are not a
    JSON object, ``arguments`` is empty and ``invalid_arguments`` holds the raw text, so
    the caller can answer with an error instead of guessing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    invalid_arguments: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """A chat message. ``Message(role, content)`` is all plain chat needs.

    For tool calling, an assistant message may carry the ``tool_calls`` it made, and a
    ``tool`` message answers one of them (``tool_call_id``) with the result in ``content``.
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the endpoint reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    #: Wall time of the call including retries, in seconds.
    latency_s: float = 0.0
    #: How many HTTP attempts the call took (1 = no retry).
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class ToolCompletion:
    """The reply to :meth:`ToolLLM.complete_with_tools`: text, tool calls, or both.

    ``tool_calls`` is empty when the model answered in text only (it is done).
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    model: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    latency_s: float = 0.0
    attempts: int = 1

    def message(self) -> Message:
        """This reply as the assistant message to send back with the tool results."""
        return Message("assistant", self.text, tool_calls=self.tool_calls)


@runtime_checkable
class LLM(Protocol):
    """A chat model. ``name`` is the spec string shown in traces (``"openai:gpt-4.1-mini"``)."""

    name: str

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 1024, temperature: float = 0.0,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        """Return the model's reply. With ``on_token`` the reply is streamed and each text
        delta is passed to it as it arrives; the returned Completion holds the whole text."""
        ...


@runtime_checkable
class ToolLLM(LLM, Protocol):
    """An LLM that can call tools (OpenAI-style function calling).

    ``tools`` are OpenAI chat-completions tool specs:
    ``{"type": "function", "function": {"name", "description", "parameters": JSON schema}}``.
    """

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *,
                            max_tokens: int | None = None) -> ToolCompletion:
        """Return the model's next turn: tool calls to run, or its final text."""
        ...
