"""Limits and error shapes: 413, 429, 400, 404, 405, CORS off unless configured, no tracebacks,
open routes (healthz, readyz; metrics for an operator's key or with metrics_public), the audit log."""

from __future__ import annotations

import json

import httpx
import pytest

from beleg.server.limits import RateLimiter
from tests.server.conftest import bearer


def _is_error(r: httpx.Response, status: int, kind: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind
    assert "Traceback" not in r.text and 'File "' not in r.text


def test_a_body_over_the_limit_is_413(server_url, api_keys):
    h = bearer(api_keys["public"])
    big = {"query": "retry", "where": "x" * 300_000}
    _is_error(httpx.post(f"{server_url}/v1/search", json=big, headers=h, timeout=30), 413, "too_large")

    def chunked():  # no Content-Length: the limit is counted while reading
        for _ in range(40):
            yield b" " * 10_000
    r = httpx.post(f"{server_url}/v1/search", content=chunked(), headers={**h, "Content-Type": "application/json"},
                   timeout=30)
    _is_error(r, 413, "too_large")


@pytest.mark.parametrize("body, needle", [
    ({"query": ""}, "query"), ({"query": "x", "k": 0}, "k"), ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "mmr": 2}, "mmr"), ({"query": "x", "strategy": "nope"}, "strategy"),
    ({"query": "x", "where": "version >>> 2"}, ""), ({"k": 3}, "query"), (["not", "an", "object"], "object"),
])
def test_invalid_bodies_are_400_with_a_reason(server_url, api_keys, body, needle):
    r = httpx.post(f"{server_url}/v1/search", json=body, headers=bearer(api_keys["public"]), timeout=30)
    _is_error(r, 400, "invalid_request")
    assert needle in r.json()["error"]["message"]


def test_malformed_json_is_400(server_url, api_keys):
    r = httpx.post(f"{server_url}/v1/ask", content=b"{not json", headers=bearer(api_keys["public"]), timeout=30)
    _is_error(r, 400, "invalid_request")


def test_a_strategy_that_needs_an_llm_says_so(server_url, api_keys):
    r = httpx.post(f"{server_url}/v1/search", json={"query": "retry", "strategy": "hyde"},
                   headers=bearer(api_keys["public"]), timeout=30)
    _is_error(r, 400, "needs_llm")


def test_unknown_routes_and_methods_are_json_errors(server_url, api_keys):
    _is_error(httpx.get(f"{server_url}/v1/nope", headers=bearer(api_keys["public"]), timeout=30), 404, "not_found")
    _is_error(httpx.get(f"{server_url}/v1/search", headers=bearer(api_keys["public"]), timeout=30), 405,
              "method_not_allowed")


def test_rate_limit_is_429_per_key(start_server, api_keys):
    from beleg.server import ServerSettings

    with start_server(ServerSettings(rate_per_second=0.5, burst=3)) as url:
        codes = [httpx.get(f"{url}/v1/status", headers=bearer(api_keys["public"]), timeout=30) for _ in range(5)]
        other = httpx.get(f"{url}/v1/status", headers=bearer(api_keys["globex"]), timeout=30)
    assert [r.status_code for r in codes] == [200, 200, 200, 429, 429]
    _is_error(codes[3], 429, "rate_limited")
    assert int(codes[3].headers["retry-after"]) >= 1
    assert other.status_code == 200  # another key has its own bucket


def test_token_bucket_refills_at_the_rate():
    limiter = RateLimiter(rate=2.0, burst=2)
    assert [limiter.take("a", now=0.0) for _ in range(3)] == [0.0, 0.0, pytest.approx(0.5)]
    assert limiter.take("a", now=0.5) == 0.0  # one token back after 1/rate seconds
    assert limiter.take("a", now=0.5) > 0


def test_cors_is_off_unless_configured(server_url, start_server, api_keys):
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization"}
    r = httpx.options(f"{server_url}/v1/search", headers=preflight, timeout=30)
    assert "access-control-allow-origin" not in r.headers
    r = httpx.post(f"{server_url}/v1/search", json={"query": "retry"},
                   headers={**bearer(api_keys["public"]), "Origin": "https://evil.example"}, timeout=30)
    assert "access-control-allow-origin" not in r.headers
    from beleg.server import ServerSettings

    with start_server(ServerSettings(cors_origins=("https://help.example",))) as url:
        ok = httpx.options(f"{url}/v1/search", headers={**preflight, "Origin": "https://help.example"}, timeout=30)
        bad = httpx.options(f"{url}/v1/search", headers=preflight, timeout=30)
    assert ok.headers.get("access-control-allow-origin") == "https://help.example"
    assert "access-control-allow-origin" not in bad.headers


def test_health_and_ready_need_no_key_metrics_an_operators(server_url, api_keys):
    assert httpx.get(f"{server_url}/healthz", timeout=30).json() == {"status": "ok"}
    assert httpx.get(f"{server_url}/readyz", timeout=30).json() == {"status": "ready"}
    httpx.post(f"{server_url}/v1/search", json={"query": "retry"}, headers=bearer(api_keys["public"]), timeout=30)
    httpx.post(f"{server_url}/v1/search", json={"query": "retry"}, timeout=30)  # a 401
    # The counters show every tenant's activity: no key, a reader's or a tenant admin's is refused.
    _is_error(httpx.get(f"{server_url}/metrics", timeout=30), 401, "unauthorized")
    for name in ("public", "acme_admin"):
        _is_error(httpx.get(f"{server_url}/metrics", headers=bearer(api_keys[name]), timeout=30), 403, "forbidden")
    r = httpx.get(f"{server_url}/metrics", headers=bearer(api_keys["operator"]), timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert 'beleg_http_requests_total{method="POST",route="/v1/search",status="200"}' in text
    assert 'beleg_http_errors_total{route="/v1/search",type="unauthorized"}' in text
    assert '# TYPE beleg_http_request_duration_seconds histogram' in text
    assert 'beleg_http_request_duration_seconds_bucket{method="POST",route="/v1/search",le="+Inf"}' in text
    assert 'beleg_cache_requests_total{cache="index_view",result="hit"}' in text
    for line in text.splitlines():  # every sample line is NAME{LABELS} VALUE
        if line and not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])


def test_metrics_public_serves_metrics_without_a_key(start_server, tmp_path):
    from beleg.server import ServerSettings

    with start_server(ServerSettings(metrics_public=True, upload_dir=tmp_path / "uploads")) as url:
        r = httpx.get(f"{url}/metrics", timeout=30)
    assert r.status_code == 200 and "# TYPE beleg_http_requests_total counter" in r.text


def test_no_stack_trace_when_something_breaks(start_server, server_kb, api_keys):
    """An unexpected exception inside the service is a 500 with a generic message."""
    from beleg.service import Service

    class Broken(Service):
        def status(self):
            raise KeyError("secret internal detail")

    with start_server(index=Broken(server_kb)) as url:
        r = httpx.get(f"{url}/v1/status", headers=bearer(api_keys["public"]), timeout=30)
    _is_error(r, 500, "internal")
    assert "secret internal detail" not in r.text


def test_audit_log_is_off_by_default_and_records_who_and_which_documents(start_server, api_keys, tmp_path):
    from beleg.server import ServerSettings

    path = tmp_path / "audit.jsonl"
    with start_server(ServerSettings(audit_log=path)) as url:
        r = httpx.post(f"{url}/v1/search", json={"query": "E-4012", "k": 2}, headers=bearer(api_keys["acme"]),
                       timeout=30)
    line = json.loads(path.read_text().splitlines()[0])
    assert (line["user"], line["tenant"], line["endpoint"], line["query"]) == ("alice", "acme", "search", "E-4012")
    assert line["documents"] == sorted({h["doc_id"] for h in r.json()["hits"]})
    assert api_keys["acme"] not in path.read_text()


def test_one_owner_cannot_push_out_everyone_elses_conversations():
    from beleg.server.conversations import Conversations, UnknownConversation

    store = Conversations(max_conversations=10, max_per_owner=3)
    theirs, _ = store.context(None, "alice")
    mine = [store.context(None, "mallory")[0] for _ in range(50)]
    assert store.context(theirs, "alice") == (theirs, [])
    assert [store.context(c, "mallory")[0] for c in mine[-3:]] == mine[-3:]
    with pytest.raises(UnknownConversation):
        store.context(mine[0], "mallory")


def test_document_parameters_keep_to_the_schema(server_url, api_keys):
    h = bearer(api_keys["public"])
    r = httpx.get(f"{server_url}/v1/documents/{'x' * 5000}", headers=h, timeout=30)
    _is_error(r, 400, "invalid_request")
    quotes = "&".join(["quote=0:1"] * 51)
    _is_error(httpx.get(f"{server_url}/v1/documents/x?{quotes}", headers=h, timeout=30), 400, "invalid_request")


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_json_endpoint_refuses_other_content_types(server_url, api_keys, content_type):
    """Browsers send these cross-site without a CORS preflight."""
    r = httpx.post(f"{server_url}/v1/search", content=b'{"query": "retry"}', timeout=30,
                   headers={**bearer(api_keys["public"]), "Content-Type": content_type})
    _is_error(r, 415, "unsupported_media_type")
    r = httpx.post(f"{server_url}/v1/search", content=b'{"query": "retry"}', timeout=30,
                   headers={**bearer(api_keys["public"]), "Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 200, r.text


def test_no_page_may_be_framed(server_url, api_keys):
    for r in (httpx.get(f"{server_url}/", timeout=30), httpx.get(f"{server_url}/healthz", timeout=30),
              httpx.get(f"{server_url}/v1/status", headers=bearer(api_keys["public"]), timeout=30)):
        assert r.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_a_refused_cors_preflight_is_a_json_error(start_server):
    from beleg.server import ServerSettings

    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    with start_server(ServerSettings(cors_origins=("https://help.example",))) as url:
        bad = httpx.options(f"{url}/v1/search", headers=preflight, timeout=30)
    _is_error(bad, 400, "cors_rejected")
