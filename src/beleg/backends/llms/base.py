"""The LLM protocol every backend implements, and the values it passes.

One method, :meth:`LLM.complete`, takes chat messages and returns a :class:`Completion`.
Streaming is a callback (``on_token``) rather than a second API, so callers that do not
stream and callers that do get the same final value, usage included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol, Sequence, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


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


@runtime_checkable
class LLM(Protocol):
    """A chat model. ``name`` is the spec string shown in traces (``"openai:gpt-4.1-mini"``)."""

    name: str

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 1024, temperature: float = 0.0,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        """Return the model's reply. With ``on_token`` the reply is streamed and each text
        delta is passed to it as it arrives; the returned Completion holds the whole text."""
        ...
