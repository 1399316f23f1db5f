"""A deterministic LLM for tests: replies come from a script, not a model.

It is for testing the control flow around an LLM (prompt assembly, retries of a
strategy, citation checks, streaming to a UI), where a real model would make tests slow,
paid and flaky. It implements the same :class:`~beleg.backends.llms.base.LLM` protocol as
the HTTP backends, so code under test cannot tell the difference.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beleg.backends.llms.base import (
    Completion,
    Message,
    ToolCall,
    ToolCompletion,
    Usage,
)
from beleg.errors import LLMError


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    """A scripted turn in which the model calls tools (for :meth:`ScriptedLLM.complete_with_tools`).

    Build it with :meth:`of`; call ids default to ``call_<call number>_<index>``.

    Example:
        >>> ToolCallReply.of(("keyword_search", {"query": "E-4290"}), text="Let me look.").calls[0].name
        'keyword_search'
    """

    calls: tuple[ToolCall, ...]
    text: str = ""

    @classmethod
    def of(cls, *calls: ToolCall | tuple[str, Mapping[str, Any]] | Mapping[str, Any], text: str = "") -> ToolCallReply:
        """Calls as :class:`ToolCall`, ``(name, arguments)`` or ``{"name", "arguments", "id"}``
        (``"arguments"`` may be a JSON string; one that is not an object becomes
        :attr:`ToolCall.invalid_arguments`, as the HTTP backends parse it)."""
        return cls(tuple(_tool_call(c) for c in calls), text)


#: What a scripted turn may be: text, a :class:`ToolCallReply`, or a mapping
#: ``{"tool_calls": [{"name", "arguments", "id"?}, ...], "text"?: str}``.
Reply = str | ToolCallReply | Mapping[str, Any]
Responder = Callable[[list[Message]], Reply]

_WORD_START = re.compile(r"(?<=\s)(?=\S)")


class ScriptedLLM:
    """An LLM that answers from a script.

    Args:
        replies: Answers for the first calls, in order; each is a string or a callable that
            gets the call's messages and returns the string. For
            :meth:`complete_with_tools` a reply may also be tool calls: a
            :class:`ToolCallReply` or ``{"tool_calls": [{"name", "arguments"}], "text": ...}``.
        responder: Answers every call after ``replies`` is used up (all calls when there
            are no ``replies``).
        name: Spec-like name shown in traces and returned as ``Completion.model``.

    Usage counts whitespace-separated words (prompt: all message contents). A reply longer
    than ``max_tokens`` words is cut there with ``finish_reason="length"``, so truncation
    handling can be tested too. With ``on_token`` the reply is streamed word by word
    (each piece keeps its trailing whitespace, so the pieces join to the full text).
    Thread-safe: calls are recorded in :attr:`calls` in the order they arrive.

    Example:
        >>> llm = ScriptedLLM(["Paris.", lambda msgs: f"You said {len(msgs)} things."])
        >>> llm.complete([Message("user", "Capital of France?")]).text
        'Paris.'

    Raises:
        LLMError: On a call when the script is exhausted and there is no responder.
    """

    def __init__(self, replies: Sequence[Reply | Responder] | None = None, responder: Responder | None = None,
                 name: str = "scripted") -> None:
        self.name = name
        self.calls: list[list[Message]] = []
        #: The tool specs of each call, aligned with :attr:`calls` (None for :meth:`complete`).
        self.tools: list[list[dict[str, Any]] | None] = []
        self._replies = list(replies or [])
        self._responder = responder
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet (a responder is not counted)."""
        with self._lock:
            return max(0, len(self._replies) - len(self.calls))

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 1024, temperature: float = 0.0,
                 on_token: Callable[[str], None] | None = None) -> Completion:
        """Return the next scripted reply (see the class docstring)."""
        received, number, reply = self._next(messages, None)
        if not isinstance(reply, str):
            raise LLMError(f"ScriptedLLM reply for call {number} is {type(reply).__name__}, not str"
                           + (" (tool calls need complete_with_tools)" if _is_tool_reply(reply) else ""))
        text, pieces, finish = _cut(reply, max_tokens)
        if on_token is not None:
            for piece in pieces:
                on_token(piece)
        usage = Usage(prompt_tokens=_prompt_words(received), completion_tokens=count_words(text))
        return Completion(text=text, model=self.name, usage=usage, finish_reason=finish)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *,
                            max_tokens: int | None = None) -> ToolCompletion:
        """Return the next scripted reply as a tool-calling turn.

        A string is a final text answer (no tool calls); a :class:`ToolCallReply` or a
        mapping with ``"tool_calls"`` is a turn that calls tools. ``finish_reason`` is
        ``"tool_calls"`` then, as OpenAI reports it.
        """
        _, number, reply = self._next(messages, [dict(t) for t in tools])
        if isinstance(reply, str):
            text, _, finish = _cut(reply, max_tokens or 1024)
            calls: tuple[ToolCall, ...] = ()
        else:
            tool_reply = _as_tool_reply(reply, number)
            text, calls, finish = tool_reply.text, tool_reply.calls, "tool_calls"
        completion_words = count_words(text) + sum(count_words(_arguments_text(c)) for c in calls)
        usage = Usage(prompt_tokens=_prompt_words(list(messages)), completion_tokens=completion_words)
        return ToolCompletion(text=text, tool_calls=calls, model=self.name, usage=usage, finish_reason=finish)

    def _next(self, messages: Sequence[Message],
              tools: list[dict[str, Any]] | None) -> tuple[list[Message], int, Reply]:
        received = list(messages)
        with self._lock:
            self.calls.append(received)
            self.tools.append(tools)
            number = len(self.calls)
        if number <= len(self._replies):
            scripted = self._replies[number - 1]
        elif self._responder is not None:
            scripted = self._responder
        else:
            raise LLMError(f"ScriptedLLM has no reply left for call {number} "
                           f"(scripted {len(self._replies)}, no responder); add replies or a responder")
        reply = scripted(received) if callable(scripted) else scripted
        if not isinstance(reply, (str, ToolCallReply, Mapping)):
            raise LLMError(f"ScriptedLLM reply for call {number} is {type(reply).__name__}, not str")
        return received, number, reply

    def __repr__(self) -> str:
        return f"ScriptedLLM(name={self.name!r}, replies={len(self._replies)}, calls={len(self.calls)})"


def _cut(text: str, max_tokens: int) -> tuple[str, list[str], str]:
    pieces = split_words(text)
    if count_words(text) > max_tokens:
        pieces = pieces[:max_tokens]
        return "".join(pieces), pieces, "length"
    return text, pieces, "stop"


def _is_tool_reply(reply: Any) -> bool:
    return isinstance(reply, ToolCallReply) or (isinstance(reply, Mapping) and "tool_calls" in reply)


def _as_tool_reply(reply: Reply, number: int) -> ToolCallReply:
    if isinstance(reply, ToolCallReply):
        calls = reply
    elif isinstance(reply, Mapping) and isinstance(reply.get("tool_calls"), (list, tuple)):
        calls = ToolCallReply.of(*reply["tool_calls"], text=str(reply.get("text") or reply.get("content") or ""))
    else:
        raise LLMError(f"ScriptedLLM reply for call {number} is neither text nor tool calls: {str(reply)[:200]!r}")
    # Default ids are unique per call, as a real model's are.
    return ToolCallReply(tuple(c if c.id else ToolCall(f"call_{number}_{i}", c.name, c.arguments, c.invalid_arguments)
                               for i, c in enumerate(calls.calls)), calls.text)


def _tool_call(spec: ToolCall | tuple[str, Mapping[str, Any]] | Mapping[str, Any]) -> ToolCall:
    if isinstance(spec, ToolCall):
        return spec
    name: Any
    arguments: Any
    raw_id: Any = None
    if isinstance(spec, tuple):
        name, arguments = spec[0], spec[1]
    elif isinstance(spec, Mapping):
        name, arguments, raw_id = spec.get("name"), spec.get("arguments", {}), spec.get("id")
    else:
        raise LLMError(f"a scripted tool call is a ToolCall, (name, arguments) or a mapping, not {spec!r}")
    if not isinstance(name, str) or not name:
        raise LLMError(f"a scripted tool call needs a name: {spec!r}")
    call_id = str(raw_id) if raw_id else ""  # "": numbered per turn in _as_tool_reply
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            return ToolCall(call_id, name, {}, invalid_arguments=arguments)
        return ToolCall(call_id, name, decoded)
    return ToolCall(call_id, name, dict(arguments or {}))


def _arguments_text(call: ToolCall) -> str:
    return call.invalid_arguments if call.invalid_arguments is not None else json.dumps(call.arguments)


def _prompt_words(messages: list[Message]) -> int:
    return sum(count_words(m.content) + sum(count_words(_arguments_text(c)) for c in m.tool_calls) for m in messages)


def count_words(text: str) -> int:
    """The scripted token count: whitespace-separated words."""
    return len(text.split())


def split_words(text: str) -> list[str]:
    """``"Hi  there"`` → ``["Hi  ", "there"]``: words with trailing whitespace, joining to ``text``.

    Leading whitespace rides on the first word, so each piece holds exactly one word.
    """
    pieces = [p for p in _WORD_START.split(text) if p]
    if len(pieces) > 1 and not pieces[0].strip():
        pieces[1] = pieces[0] + pieces[1]
        del pieces[0]
    return pieces


__all__ = ["Reply", "Responder", "ScriptedLLM", "ToolCallReply", "count_words", "split_words"]
