"""What a reply exposes beyond its answer: no reply of the API may stay in a browser's cache
(a later page could read a restricted document after sign-out), a locked index is described
to a tenant's key without the path, pid and host of the lock, and a rejected value is not
echoed back whole."""

from __future__ import annotations

import os
import socket

import httpx

from beleg.index import versions
from tests.server.conftest import bearer


def _doc_id(server_kb, end: str) -> str:
    return next(d for d, s, _ in server_kb.catalog.documents_meta() if s.endswith(end))


def test_every_api_reply_says_no_store(server_url, server_kb, api_keys):
    acme, operator = bearer(api_keys["acme"]), bearer(api_keys["operator"])
    runbook = _doc_id(server_kb, "acme/runbook.md")
    replies = {
        "search": httpx.post(f"{server_url}/v1/search", json={"query": "failover"}, headers=acme, timeout=60),
        "ask": httpx.post(f"{server_url}/v1/ask", json={"question": "Which host for failover?"}, headers=acme,
                          timeout=120),
        "chat": httpx.post(f"{server_url}/v1/chat", json={"question": "Which host for failover?"}, headers=acme,
                           timeout=120),
        "document": httpx.get(f"{server_url}/v1/documents/{runbook}", headers=acme, timeout=60),
        "status": httpx.get(f"{server_url}/v1/status", headers=acme, timeout=60),
        "ingest (an error)": httpx.post(f"{server_url}/v1/ingest", headers=bearer(api_keys["acme_ingest"]),
                                        files={"other": ("a.md", b"x")}, timeout=60),
        "delete (not found)": httpx.delete(f"{server_url}/v1/documents/nope", headers=bearer(api_keys["acme_admin"]),
                                           timeout=60),
        "unauthorized": httpx.get(f"{server_url}/v1/documents/{runbook}", timeout=60),
        "healthz": httpx.get(f"{server_url}/healthz", timeout=60),
        "readyz": httpx.get(f"{server_url}/readyz", timeout=60),
        "metrics": httpx.get(f"{server_url}/metrics", headers=operator, timeout=60),
        "openapi": httpx.get(f"{server_url}/openapi.json", timeout=60),
    }
    assert replies["document"].status_code == 200 and "zanzibar-7" in replies["document"].text
    for name, r in replies.items():
        assert r.headers.get("cache-control") == "no-store", (name, r.status_code, dict(r.headers))


def test_a_locked_index_is_described_only_to_an_operator(start_server, server_kb, api_keys, tmp_path):
    from beleg.server import ServerSettings

    with start_server(ServerSettings(upload_dir=tmp_path / "uploads")) as url, \
            versions.write_lock(server_kb.root, "reindex", "0123456789ab"):
        tenant = httpx.post(f"{url}/v1/ingest", files={"files": ("n.md", b"# N\n\nA note.\n", "text/markdown")},
                            headers=bearer(api_keys["acme_ingest"]), timeout=60)
        operator = httpx.delete(f"{url}/v1/documents/{_doc_id(server_kb, 'public/errors.md')}",
                                headers=bearer(api_keys["operator"]), timeout=60)
    assert tenant.status_code == operator.status_code == 409, (tenant.text, operator.text)
    assert tenant.json()["error"]["type"] == "index_busy"
    message = tenant.json()["error"]["message"]
    for detail in (str(server_kb.root), str(os.getpid()), socket.gethostname(), "0123456789ab"):
        assert detail not in message, message
    assert str(server_kb.root) in operator.json()["error"]["message"]  # the operator learns what holds it


def test_a_rejected_value_is_not_echoed_whole(server_url, api_keys):
    h = bearer(api_keys["public"])
    for body in ({"query": "x" * 200_000}, {"query": "retry", "mode": "y" * 5000}, {"query": "q", "z" * 5000: 1},
                 {"query": "q", "weights": ["w"] * 20_000}):
        r = httpx.post(f"{server_url}/v1/search", json=body, headers=h, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request", r.text[:300]
        message = r.json()["error"]["message"]
        assert len(message) < 600 and "…" in message, message
    r = httpx.get(f"{server_url}/v1/documents/x", params={"quote": "9" * 20_000}, headers=h, timeout=60)
    assert r.status_code == 400 and len(r.json()["error"]["message"]) < 600, r.text[:300]
    r = httpx.post(f"{server_url}/v1/ingest", files={"files": ("n" * 20_000, b"x")},
                   headers=bearer(api_keys["acme_ingest"]), timeout=60)
    assert r.status_code == 400 and len(r.json()["error"]["message"]) < 600, r.text[:300]
