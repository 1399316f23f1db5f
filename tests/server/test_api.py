"""The JSON API over a real uvicorn server: search, ask, documents, status, errors, open routes."""

from __future__ import annotations

import httpx
import pytest

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


def test_status_counts_only_what_the_key_may_read(server_url, api_keys, server_kb):
    """Facets, counts, the generation and the index path of the whole index told any read key
    about other tenants' and acl-restricted documents (a version value, a new upload)."""
    seen = {}
    for name in ("public", "acme", "globex", "acme_admin"):
        r = httpx.get(f"{server_url}/v1/status", headers=bearer(api_keys[name]), timeout=30)
        assert r.status_code == 200, r.text
        seen[name] = r.json()
        for index_wide in ("index", "version_path", "generation", "chunks", "terms", "config", "versions"):
            assert index_wide not in seen[name], (name, index_wide)
        assert seen[name]["index_version"] == server_kb.status()["index_version"]
    assert (seen["public"]["documents"], seen["acme"]["documents"], seen["globex"]["documents"]) == (2, 3, 3)
    assert seen["acme_admin"]["documents"] == 3  # a tenant's admin is still one tenant's
    assert seen["globex"]["documents_by"]["authority"] == {"contract": 1, "guide": 1, "reference": 1}
    assert seen["public"]["documents_by"]["authority"] == {"contract": 1, "reference": 1}
    assert seen["acme"]["principal"] == {"user": "alice", "tenant": "acme", "groups": ["acme-ops"],
                                         "scopes": ["read"]}


def test_status_of_the_whole_index_is_for_an_operator(start_server, server_kb):
    from beleg.server.auth import ApiKey, AuthConfig, hash_key

    auth = AuthConfig((ApiKey(hash_key("k-op"), "op", None, (), frozenset({"admin"})),))
    with start_server(auth=auth) as url:
        r = httpx.get(f"{url}/v1/status", headers=bearer("k-op"), timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["chunks"] == server_kb.status()["chunks"] and r.json()["index"] == str(server_kb.root)
    assert r.json()["documents"] == 4 and r.json()["principal"]["scopes"] == ["admin"]


BAD_BODIES = [
    ("/v1/search", b"[" * 100_000 + b"]" * 100_000, "nested"),
    ("/v1/search", b'{"query": "\\ud800 x"}', "surrogate"),
    ("/v1/search", b'{"query": "retry", "filters": {"\\ud800": "x"}}', "surrogate"),
    ("/v1/ask", b'{"question": "retry window?", "context": ["\\udfff x"]}', "surrogate"),
    ("/v1/ask", b'{"question": "retry window?", "stream": true, "context": ["\\udfff x"]}', "surrogate"),
]


@pytest.mark.parametrize("path, body, needle", BAD_BODIES)
def test_bad_json_is_a_400_not_an_internal_error(server_url, api_keys, path, body, needle):
    r = httpx.post(f"{server_url}{path}", content=body, timeout=60,
                   headers={**bearer(api_keys["acme_admin"]), "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request", r.text
    assert needle in r.json()["error"]["message"]


@pytest.mark.parametrize("kwargs, needle", [
    ({"files": [("files", (f"f{i}.md", b"# t\nx")) for i in range(51)]}, "50"),
    ({"content": b"garbage", "headers": {"Content-Type": "multipart/form-data; boundary=x"}}, "multipart"),
    ({"content": b"garbage", "headers": {"Content-Type": "multipart/form-data"}}, "boundary"),
])
def test_bad_uploads_are_a_400_not_an_internal_error(server_url, api_keys, kwargs, needle):
    headers = {**bearer(api_keys["acme_admin"]), **kwargs.pop("headers", {})}
    r = httpx.post(f"{server_url}/v1/ingest", headers=headers, timeout=60, **kwargs)
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request", r.text
    assert needle in r.json()["error"]["message"].lower()
