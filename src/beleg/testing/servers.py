"""Fake OpenAI and Anthropic servers on localhost, for testing over real HTTP.

They answer their provider's chat endpoint from a script (a :class:`ScriptedLLM`), stream
server-sent events when asked, and can be told to misbehave (error statuses, slow
answers, invalid JSON, dropped connections), so the whole client path (serialisation,
headers, retries, error messages) is exercised without a network or an API bill.

Example:
    >>> from beleg.backends.llms import Message, load_llm
    >>> with FakeOpenAIServer(["Hello."]) as server:
    ...     server.fail(status(503))
    ...     llm = load_llm("openai-compatible:m", base_url=server.base_url, backoff_base_s=0)
    ...     llm.complete([Message("user", "hi")]).attempts
    2
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

from beleg.backends.llms.base import Completion, Message, Role, ToolCall, ToolCompletion
from beleg.errors import LLMError
from beleg.testing.scripted import (
    Reply,
    Responder,
    ScriptedLLM,
    count_words,
    split_words,
)

logger = logging.getLogger(__name__)

FailureKind = Literal["status", "delay", "garbage", "disconnect"]


@dataclass(frozen=True, slots=True)
class Failure:
    """One scripted misbehaviour; build it with :func:`status`, :func:`delay`,
    :func:`garbage` or :func:`disconnect`."""

    kind: FailureKind
    status: int = 0
    retry_after: float | None = None
    message: str | None = None
    seconds: float = 0.0


def status(code: int, *, retry_after: float | None = None, message: str | None = None) -> Failure:
    """Answer with HTTP ``code`` and the provider's error body (``message`` inside it),
    plus a ``Retry-After: retry_after`` header when given."""
    return Failure("status", status=code, retry_after=retry_after, message=message)


def delay(seconds: float) -> Failure:
    """Wait ``seconds`` before answering normally (to trigger client timeouts). The reply
    is taken from the script even if the client has given up by then."""
    return Failure("delay", seconds=seconds)


def garbage() -> Failure:
    """Answer HTTP 200 with a body (or stream event) that is not valid JSON."""
    return Failure("garbage")


def disconnect() -> Failure:
    """Close the connection without sending any response."""
    return Failure("disconnect")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request the server received. Header names are lower-case; ``json`` is ``None``
    when the body was not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Closing must not wait for a handler sleeping in delay(): the test is already done.
    block_on_close = False
    fake: LoopbackFake


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_POST(self) -> None:
        self.server.fake._handle(self)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s: " + format, self.server.fake.base_url, *args)


class _KeepAliveHandler(_Handler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do: clients reuse connections


class LoopbackFake(ABC):
    """A fake HTTP service on 127.0.0.1 (a free port, a daemon thread): records every POST,
    hands queued failures to the requests that take them; subclasses answer (``_handle``)."""

    base_path: ClassVar[str] = ""
    handler: ClassVar[type[_Handler]] = _Handler

    def __init__(self, *, failures: Iterable[Failure] = (), api_key: str | None = None) -> None:
        #: Every request received, in order, including failed and rejected ones.
        self.requests: list[RecordedRequest] = []
        self.api_key = api_key
        self._failures: deque[Failure] = deque(failures)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), self.handler)
        self._httpd.fake = self
        self.port = int(self._httpd.server_address[1])
        self.base_url = f"http://127.0.0.1:{self.port}{self.base_path}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                        name=f"{type(self).__name__}:{self.port}", daemon=True)
        self._thread.start()

    def fail(self, *failures: Failure) -> None:
        """Queue failures; each request to the service's endpoint takes the next one, if any."""
        with self._lock:
            self._failures.extend(failures)

    def close(self) -> None:
        """Stop serving and free the port."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @abstractmethod
    def _handle(self, handler: _Handler) -> None: ...

    def _receive(self, handler: _Handler, *, takes_failure: bool) -> tuple[dict[str, str], Any, Failure | None]:
        """Read and record one request: its lower-case headers, its JSON body (None when it is not
        JSON) and the next queued failure when this request takes one."""
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {key.lower(): value for key, value in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest("POST", handler.path, headers, body))
            failure = self._failures.popleft() if takes_failure and self._failures else None
        return headers, body, failure


class _FakeChatServer(LoopbackFake):
    """What both chat fakes share; subclasses supply the provider's wire format."""

    chat_path: ClassVar[str]

    def __init__(self, replies: Sequence[Reply | Responder] | None = None, responder: Responder | None = None, *,
                 failures: Iterable[Failure] = (), api_key: str | None = None) -> None:
        #: Produces the answers; inspect ``llm.calls`` for the messages it was given.
        self.llm = ScriptedLLM(replies, responder, name="fake")
        super().__init__(failures=failures, api_key=api_key)

    # -- request handling ----------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        headers, body, failure = self._receive(handler, takes_failure=handler.path == self.chat_path)
        try:
            self._answer(handler, headers, body, failure)
        except (BrokenPipeError, ConnectionResetError):
            logger.debug("%s: client went away before the answer was sent", self.base_url)

    def _answer(self, handler: _Handler, headers: dict[str, str], body: Any, failure: Failure | None) -> None:
        if handler.path != self.chat_path:
            self._send_error(handler, 404, f"no route for POST {handler.path}; the chat endpoint is {self.chat_path}")
            return
        stream = isinstance(body, dict) and body.get("stream") is True
        if failure is not None and failure.kind != "delay":
            self._misbehave(handler, failure, stream)
            return
        if failure is not None and self._stopping.wait(failure.seconds):
            return
        problem = "invalid api key" if self.api_key is not None and not self._authorized(headers) else None
        if problem is not None:
            self._send_error(handler, 401, problem)
            return
        problem = self._invalid(body)
        if problem is not None:
            self._send_error(handler, 400, problem)
            return
        try:
            messages = self._messages(body)
            completion = self._complete(messages, body)
        except LLMError as exc:
            self._send_error(handler, 500, str(exc))
            return
        model = str(body.get("model") or "fake")
        if isinstance(completion, ToolCompletion):
            self._send(handler, 200, json.dumps(self._tool_completion_body(completion, model)).encode(),
                       "application/json")
        elif stream:
            events = self._stream_events(completion, model, messages, body)
            self._send(handler, 200, b"".join(events), "text/event-stream")
        else:
            self._send(handler, 200, json.dumps(self._completion_body(completion, model)).encode(),
                       "application/json")

    def _misbehave(self, handler: _Handler, failure: Failure, stream: bool) -> None:
        if failure.kind == "status":
            message = failure.message or f"fake failure: HTTP {failure.status}"
            self._send_error(handler, failure.status, message, failure.retry_after)
        elif failure.kind == "garbage":
            self._send(handler, 200, b"data: {not json\n\n" if stream else b"{not json",
                       "text/event-stream" if stream else "application/json")
        else:  # disconnect: answer nothing; the handler closes the socket
            handler.close_connection = True

    def _send(self, handler: _Handler, code: int, payload: bytes, content_type: str,
              extra_headers: dict[str, str] | None = None) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in (extra_headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()

    def _send_error(self, handler: _Handler, code: int, message: str, retry_after: float | None = None) -> None:
        extra = {} if retry_after is None else {"Retry-After": f"{retry_after:g}"}
        self._send(handler, code, json.dumps(self._error_body(code, message)).encode(), "application/json", extra)

    # -- provider specifics ----------------------------------------------------------------

    @abstractmethod
    def _authorized(self, headers: dict[str, str]) -> bool:
        """Whether the request carries the provider's credentials (when the fake has a key)."""

    def _invalid(self, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "request body must be a JSON object"
        if not isinstance(body.get("messages"), list):
            return "messages: field required (a list)"
        if not isinstance(body.get("model"), str):
            return "model: field required (a string)"
        return None

    def _messages(self, body: dict[str, Any]) -> list[Message]:
        return [Message(_role(m.get("role")), _text(m.get("content"))) for m in body["messages"]]

    def _complete(self, messages: list[Message], body: dict[str, Any]) -> Completion | ToolCompletion:
        return self.llm.complete(messages, max_tokens=int(body.get("max_tokens") or 1024))

    @abstractmethod
    def _completion_body(self, completion: Completion, model: str) -> dict[str, Any]:
        """A complete (non-streamed) reply in the provider's JSON format."""

    def _tool_completion_body(self, completion: ToolCompletion, model: str) -> dict[str, Any]:
        """A tool-call reply; only fakes whose ``_complete`` returns tool calls override this."""
        raise TypeError(f"{type(self).__name__} does not serve tool calls")

    @abstractmethod
    def _stream_events(self, completion: Completion, model: str, messages: list[Message],
                       body: dict[str, Any]) -> Iterator[bytes]:
        """The reply as the provider's server-sent events."""

    @abstractmethod
    def _error_body(self, code: int, message: str) -> dict[str, Any]:
        """An error body in the provider's JSON format."""


class FakeOpenAIServer(_FakeChatServer):
    """Speaks ``POST /v1/chat/completions``; ``base_url`` ends in ``/v1`` like OpenAI's.

    Tool calling: a request with ``tools`` is answered by
    :meth:`ScriptedLLM.complete_with_tools`, so a scripted :class:`ToolCallReply` comes
    back as ``choices[0].message.tool_calls`` (arguments as a JSON string,
    ``finish_reason: "tool_calls"``). Requests are checked the way OpenAI checks them
    (400 otherwise): tool specs are ``{"type": "function", "function": {"name"}}``, an
    assistant's ``tool_calls`` carry string arguments, every ``tool`` message answers a
    call of the assistant message before it, and every such call is answered. Streaming
    with tools is not supported (400).

    Args:
        replies, responder: As for :class:`ScriptedLLM`.
        failures: Failures for the first requests (more with :meth:`fail`).
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get 401.
    """

    chat_path = "/v1/chat/completions"
    base_path = "/v1"

    def _authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.api_key}"

    def _invalid(self, body: Any) -> str | None:
        problem = super()._invalid(body)
        if problem is not None:
            return problem
        tools = body.get("tools")
        if tools is not None:
            if not isinstance(tools, list) or not tools:
                return "tools: must be a non-empty list"
            for i, tool in enumerate(tools):
                function = tool.get("function") if isinstance(tool, dict) else None
                if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict) \
                        or not isinstance(function.get("name"), str):
                    return f"tools[{i}]: expected {{'type': 'function', 'function': {{'name': ...}}}}"
            if body.get("stream") is True:
                return "the fake server does not stream tool calls; send tools without stream"
        return _tool_messages_problem(body["messages"])

    def _messages(self, body: dict[str, Any]) -> list[Message]:
        out = []
        for m in body["messages"]:
            if not isinstance(m, dict):
                continue
            if m.get("role") == "tool":
                out.append(Message("tool", _text(m.get("content")), tool_call_id=str(m.get("tool_call_id"))))
                continue
            calls = tuple(ToolCall(str(c["id"]), str(c["function"]["name"]), _decode_arguments(c))
                          for c in m.get("tool_calls") or [])
            out.append(Message(_role(m.get("role")), _text(m.get("content")), tool_calls=calls))
        return out

    def _complete(self, messages: list[Message], body: dict[str, Any]) -> Completion | ToolCompletion:
        if body.get("tools"):
            max_tokens = body.get("max_tokens")
            return self.llm.complete_with_tools(messages, body["tools"],
                                                max_tokens=int(max_tokens) if max_tokens else None)
        return super()._complete(messages, body)

    def _tool_completion_body(self, completion: ToolCompletion, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        if completion.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.invalid_arguments if c.invalid_arguments is not None
                              else json.dumps(c.arguments)}}
                for c in completion.tool_calls]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": completion.finish_reason}],
            "usage": {"prompt_tokens": completion.usage.prompt_tokens,
                      "completion_tokens": completion.usage.completion_tokens,
                      "total_tokens": completion.usage.total_tokens},
        }

    def _completion_body(self, completion: Completion, model: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": completion.text},
                         "finish_reason": completion.finish_reason}],
            "usage": {"prompt_tokens": completion.usage.prompt_tokens,
                      "completion_tokens": completion.usage.completion_tokens,
                      "total_tokens": completion.usage.total_tokens},
        }

    def _stream_events(self, completion: Completion, model: str, messages: list[Message],
                       body: dict[str, Any]) -> Iterator[bytes]:
        base = {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion.chunk", "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            data = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return _sse(data)

        yield chunk({"role": "assistant", "content": ""})
        for piece in split_words(completion.text):
            yield chunk({"content": piece})
        yield chunk({}, completion.finish_reason)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": completion.usage.prompt_tokens,
                     "completion_tokens": completion.usage.completion_tokens,
                     "total_tokens": completion.usage.total_tokens}
            yield _sse({**base, "choices": [], "usage": usage})
        yield b"data: [DONE]\n\n"

    def _error_body(self, code: int, message: str) -> dict[str, Any]:
        kinds = {400: "invalid_request_error", 401: "invalid_api_key", 404: "model_not_found",
                 429: "rate_limit_exceeded"}
        return {"error": {"message": message, "type": kinds.get(code, "server_error"), "code": code}}


class FakeAnthropicServer(_FakeChatServer):
    """Speaks ``POST /v1/messages``; ``base_url`` is the bare host like Anthropic's.

    Args:
        replies, responder: As for :class:`ScriptedLLM`; the ``system`` field reaches them
            as a leading system message.
        failures: Failures for the first requests (more with :meth:`fail`).
        api_key: When set, requests without ``x-api-key: <api_key>`` get 401.
    """

    chat_path = "/v1/messages"
    base_path = ""

    def _authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("x-api-key") == self.api_key

    def _invalid(self, body: Any) -> str | None:
        problem = super()._invalid(body)
        if problem is None and not isinstance(body.get("max_tokens"), int):
            return "max_tokens: field required"
        if problem is None and any(m.get("role") == "system" for m in body["messages"]):
            return "messages: role 'system' is not allowed; use the top-level system field"
        return problem

    def _messages(self, body: dict[str, Any]) -> list[Message]:
        system = _text(body.get("system"))
        return ([Message("system", system)] if system else []) + super()._messages(body)

    def _completion_body(self, completion: Completion, model: str) -> dict[str, Any]:
        return {
            "id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": completion.text}],
            "stop_reason": _stop_reason(completion), "stop_sequence": None,
            "usage": {"input_tokens": completion.usage.prompt_tokens,
                      "output_tokens": completion.usage.completion_tokens},
        }

    def _stream_events(self, completion: Completion, model: str, messages: list[Message],
                       body: dict[str, Any]) -> Iterator[bytes]:
        start = self._completion_body(completion, model)
        start.update(content=[], stop_reason=None, usage={"input_tokens": completion.usage.prompt_tokens,
                                                         "output_tokens": 1})
        yield _sse({"type": "message_start", "message": start}, "message_start")
        yield _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                   "content_block_start")
        yield _sse({"type": "ping"}, "ping")
        for piece in split_words(completion.text):
            yield _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}},
                       "content_block_delta")
        yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        yield _sse({"type": "message_delta", "delta": {"stop_reason": _stop_reason(completion),
                                                        "stop_sequence": None},
                    "usage": {"output_tokens": count_words(completion.text)}}, "message_delta")
        yield _sse({"type": "message_stop"}, "message_stop")

    def _error_body(self, code: int, message: str) -> dict[str, Any]:
        kinds = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}
        return {"type": "error", "error": {"type": kinds.get(code, "api_error"), "message": message}}


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _tool_messages_problem(messages: list[Any]) -> str | None:
    """What OpenAI would reject about the tool-call messages of a conversation, or None."""
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"messages[{i}]: must be an object"
        role = m.get("role")
        if role == "tool":
            call_id = m.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in open_calls:
                return (f"messages[{i}]: a message with role 'tool' must be a response to a preceding message "
                        f"with 'tool_calls' (tool_call_id {call_id!r} not found)")
            if not isinstance(m.get("content"), str):
                return f"messages[{i}].content: a tool result must be a string"
            open_calls.discard(call_id)
            continue
        if open_calls:
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id'; missing: {', '.join(sorted(open_calls))}")
        calls = m.get("tool_calls")
        if calls is None:
            continue
        if role != "assistant" or not isinstance(calls, list):
            return f"messages[{i}].tool_calls: only assistant messages carry a list of tool calls"
        for j, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or call.get("type") != "function" \
                    or not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                    or not isinstance(function.get("arguments"), str):
                return (f"messages[{i}].tool_calls[{j}]: expected {{'id': str, 'type': 'function', "
                        "'function': {'name': str, 'arguments': JSON string}}")
            open_calls.add(call["id"])
    return None


def _decode_arguments(call: dict[str, Any]) -> dict[str, Any]:
    try:
        decoded = json.loads(call["function"]["arguments"])
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _role(value: Any) -> Role:
    if value in ("system", "developer"):
        return "system"
    return "assistant" if value == "assistant" else "user"


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content-block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _stop_reason(completion: Completion) -> str:
    return "max_tokens" if completion.finish_reason == "length" else "end_turn"


__all__ = [
    "Failure",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "RecordedRequest",
    "delay",
    "disconnect",
    "garbage",
    "status",
]
