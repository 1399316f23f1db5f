"""Test doubles shipped with Beleg, so pipelines can be tested without a model or network.

:class:`ScriptedLLM` answers in-process from a script; :class:`FakeOpenAIServer` and
:class:`FakeAnthropicServer` answer the same script over real HTTP on localhost and can be
told to fail (:func:`status`, :func:`delay`, :func:`garbage`, :func:`disconnect`).
"""

from __future__ import annotations

from beleg.testing.scripted import Responder, ScriptedLLM
from beleg.testing.servers import (
    Failure,
    FakeAnthropicServer,
    FakeOpenAIServer,
    RecordedRequest,
    delay,
    disconnect,
    garbage,
    status,
)

__all__ = [
    "Failure",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "RecordedRequest",
    "Responder",
    "ScriptedLLM",
    "delay",
    "disconnect",
    "garbage",
    "status",
]
