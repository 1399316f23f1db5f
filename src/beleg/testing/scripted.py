"""A deterministic LLM for tests: replies come from a script, not a model.

It is for testing the control flow around an LLM (prompt assembly, retries of a
strategy, citation checks, streaming to a UI), where a real model would make tests slow,
paid and flaky. It implements the same :class:`~beleg.backends.llms.base.LLM` protocol as
the HTTP backends, so code under test cannot tell the difference.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence

from beleg.backends.llms.base import Completion, Message, Usage
from beleg.errors import LLMError

Responder = Callable[[list[Message]], str]

_WORD_START = re.compile(r"(?<=\s)(?=\S)")


class ScriptedLLM:
    """An LLM that answers from a script.

    Args:
        replies: Answers for the first calls, in order; each is a string or a callable that
            gets the call's messages and returns the string.
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

    def __init__(self, replies: Sequence[str | Responder] | None = None, responder: Responder | None = None,
                 name: str = "scripted") -> None:
        self.name = name
        self.calls: list[list[Message]] = []
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
        received = list(messages)
        with self._lock:
            self.calls.append(received)
            number = len(self.calls)
        if number <= len(self._replies):
            reply = self._replies[number - 1]
        elif self._responder is not None:
            reply = self._responder
        else:
            raise LLMError(f"ScriptedLLM has no reply left for call {number} "
                           f"(scripted {len(self._replies)}, no responder); add replies or a responder")
        text = reply if isinstance(reply, str) else reply(received)
        if not isinstance(text, str):
            raise LLMError(f"ScriptedLLM reply for call {number} is {type(text).__name__}, not str")
        pieces = split_words(text)
        finish = "stop"
        if count_words(text) > max_tokens:
            pieces, finish = pieces[:max_tokens], "length"
            text = "".join(pieces)
        if on_token is not None:
            for piece in pieces:
                on_token(piece)
        usage = Usage(prompt_tokens=sum(count_words(m.content) for m in received), completion_tokens=count_words(text))
        return Completion(text=text, model=self.name, usage=usage, finish_reason=finish)

    def __repr__(self) -> str:
        return f"ScriptedLLM(name={self.name!r}, replies={len(self._replies)}, calls={len(self.calls)})"


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


__all__ = ["Responder", "ScriptedLLM", "count_words", "split_words"]
