"""The HTTP LLM client against a small raw server that misbehaves in ways the fake servers of
``beleg.testing`` do not: a body that trickles in a byte at a time, and bytes that are not UTF-8.

``timeout_s`` bounds each attempt's wall time, body and stream included; a caller's
:func:`~beleg.backends.llms.base.llm_deadline` bounds the whole call."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from beleg.backends.llms import Message, load_llm
from beleg.backends.llms.base import llm_deadline
from beleg.errors import LLMResponseError, LLMUnavailableError

CHAT = [Message("user", "Hi")]
NOT_UTF8 = b"Gr\xf6\xdfe \xff\xfe"


def _body(text: bytes) -> bytes:
    body = json.dumps({"model": "raw", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                            "content": "PLACEHOLDER"}}]}).encode()
    return body.replace(b"PLACEHOLDER", text)


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "drip"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        stream = request.get("stream") is True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        try:
            if self.mode == "drip" and stream:  # one event every 0.1 s for 10 s
                self.end_headers()
                for i in range(100):
                    self.wfile.write(_event(f"w{i} "))
                    self.wfile.flush()
                    time.sleep(0.1)
                self.wfile.write(b"data: [DONE]\n\n")
            elif self.mode == "drip":  # a valid body, one byte every 0.05 s
                body = _body(b"hello there, this takes a while")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i in range(len(body)):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            elif stream:  # not UTF-8
                self.end_headers()
                self.wfile.write(b'data: {"choices":[{"delta":{"content":"' + NOT_UTF8 + b'"}}]}\n\ndata: [DONE]\n\n')
            else:
                body = _body(NOT_UTF8)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should


@pytest.fixture
def raw_server(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("Handler", (_Handler,), {"mode": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _llm(base_url: str, **options: object):  # type: ignore[no-untyped-def]
    return load_llm("openai-compatible:m", base_url=base_url, backoff_base_s=0.0, max_retries=0, **options)


@pytest.mark.parametrize("raw_server", ["drip"], indirect=True)
@pytest.mark.parametrize("stream", [False, True])
def test_the_timeout_bounds_a_trickling_answer(raw_server: str, stream: bool) -> None:
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailableError, match=r"within 1s") as info:
        _llm(raw_server, timeout_s=1).complete(CHAT, on_token=(lambda _: None) if stream else None)
    took = time.perf_counter() - t0
    assert took < 3, took  # the server would take 10 s; httpx's per-read timeout never trips
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("raw_server", ["drip"], indirect=True)
@pytest.mark.parametrize("stream", [False, True])
def test_a_caller_deadline_cuts_the_call(raw_server: str, stream: bool) -> None:
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailableError, match="caller's time budget"), llm_deadline(0.8):
        _llm(raw_server, timeout_s=30).complete(CHAT, on_token=(lambda _: None) if stream else None)
    assert time.perf_counter() - t0 < 3


@pytest.mark.parametrize("raw_server", ["bytes"], indirect=True)
@pytest.mark.parametrize("stream", [False, True])
def test_a_body_that_is_not_utf8_is_an_error(raw_server: str, stream: bool) -> None:
    tokens: list[str] = []
    with pytest.raises(LLMResponseError, match="sent a body that is not valid UTF-8") as info:
        _llm(raw_server).complete(CHAT, on_token=tokens.append if stream else None)
    assert "not JSON" not in str(info.value) and "\n" not in str(info.value)
    assert not any("\ufffd" in t for t in tokens)
