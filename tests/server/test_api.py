"""The JSON API over a real uvicorn server: search, ask, documents, status, errors, open routes."""

from __future__ import annotations

import httpx

from tests.server.conftest import bearer


def test_search_returns_the_search_json_object(server_url, api_keys):
    r = httpx.post(f"{server_url}/v1/search", json={"query": "What does E-4012 mean?", "k": 3},
                   headers=bearer(api_keys["public"]), timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"hits", "trace", "self_query"}
    assert body["hits"][0]["source"].endswith("errors.md")
    assert {"chunk_id", "doc_id", "start", "end", "score", "text", "metadata", "scores"} <= set(body["hits"][0])
    assert body["trace"]["strategy"] == "hybrid"


def test_ask_returns_a_verified_answer(server_url, api_keys):
    r = httpx.post(f"{server_url}/v1/ask", json={"question": "How long does Ferrolink retry failed webhook deliveries?"},
                   headers=bearer(api_keys["public"]), timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert not body["refused"]
    assert "72 hours" in body["answer"]
    assert body["citations"] and all(c["verified"] for c in body["citations"])


def test_the_web_page_is_served_at_the_root(server_url):
    from beleg.server.app import STATIC

    r = httpx.get(f"{server_url}/", timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.text == (STATIC / "index.html").read_text(encoding="utf-8")


def test_status_is_the_status_json_object(server_url, api_keys, server_kb):
    r = httpx.get(f"{server_url}/v1/status", headers=bearer(api_keys["public"]), timeout=30)
    assert r.status_code == 200
    assert r.json()["chunks"] == server_kb.status()["chunks"]
    assert r.json()["index_version"] == server_kb.status()["index_version"]
