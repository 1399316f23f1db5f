"""``beleg serve`` as a person runs it: a process, a port, keys from auth.toml."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx

from tests.server.conftest import bearer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve(*args: str):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "beleg", "serve", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"beleg serve exited with {proc.returncode}: {proc.stdout.read()}")
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "beleg serve did not get ready"
            time.sleep(0.2)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_serve_without_auth_is_anonymous_read_only(server_kb):
    with serve("--index", str(server_kb.root)) as url:
        hits = httpx.post(f"{url}/v1/search", json={"query": "failover standby host zanzibar-7", "k": 10},
                          timeout=60).json()["hits"]
        assert hits and not any(h["source"].endswith("acme/runbook.md") for h in hits)
        r = httpx.post(f"{url}/v1/ingest", files={"files": ("a.md", b"# A\n\ntext\n")}, timeout=60)
        assert r.status_code == 403
        assert httpx.get(f"{url}/metrics", timeout=30).status_code == 403  # not without --metrics-public


def test_serve_with_auth_uses_the_keys(server_kb, auth_file, api_keys):
    with serve("--index", str(server_kb.root), "--auth", str(auth_file), "--metrics-public") as url:
        assert httpx.post(f"{url}/v1/search", json={"query": "x"}, timeout=60).status_code == 401
        assert httpx.get(f"{url}/metrics", timeout=30).status_code == 200
        r = httpx.post(f"{url}/v1/search", json={"query": "failover standby host", "k": 10},
                       headers=bearer(api_keys["acme"]), timeout=60)
        assert any(h["source"].endswith("acme/runbook.md") for h in r.json()["hits"])
        assert "openapi" in httpx.get(f"{url}/openapi.json", timeout=30).json()


def test_serve_with_a_verifier_checks_every_extractive_answer(server_kb):
    from beleg.answer.support import QUOTE_VERIFIER_SYSTEM
    from beleg.testing import FakeOpenAIServer

    question = "How long does Ferrolink retry failed webhook deliveries?"
    with FakeOpenAIServer(responder=lambda m: "NONE") as verifier, \
            serve("--index", str(server_kb.root), "--verifier", "openai-compatible:checker",
                  "--verifier-base-url", verifier.base_url) as url:
        answer = httpx.post(f"{url}/v1/ask", json={"question": question, "min_confidence": 0}, timeout=60).json()
    assert [r.json["messages"][0]["content"] for r in verifier.requests] == [QUOTE_VERIFIER_SYSTEM]
    assert answer["backend"] == "extractive" and answer["trace"]["llm"]["verifier"] == "openai-compatible:checker"
    check = answer["support"]["checks"]["llm_verifier"]
    assert check["passed"] is False and not answer["supported"]  # it found no answer in the passage


def test_serve_on_a_port_in_use_is_one_line_before_serving(server_kb, capsys):
    from beleg.cli.main import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--index", str(server_kb.root), "--port", str(port)])
    err = capsys.readouterr().err
    assert code == 1 and "serving" not in err
    assert err.startswith(f"beleg: error: port {port} on 127.0.0.1 is in use") and err.count("\n") == 1
