"""A key of another tenant never sees a restricted document: search, ask, documents, chat,
streaming; and no request body can choose or widen the principal."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server.conftest import bearer

ACME_QUESTION = "What is the standby host for failover of the primary broker?"
ACME_MARKERS = ("zanzibar-7", "4711", "acme/runbook.md", "Acme failover")


def parse_sse(text: str) -> list[tuple[str, dict]]:
    """Server-sent events as (event, data) pairs."""
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def _acme_doc_id(server_kb) -> str:
    return next(d for d, source, _ in server_kb.catalog.documents_meta() if source.endswith("acme/runbook.md"))


def _assert_no_acme(payload: str | dict) -> None:
    """Nothing of the Acme document in what a response returns (hits, answer, citations, sources,
    conflicts, streamed tokens); the caller's own question echoed in the trace does not count."""
    if isinstance(payload, str):
        payload = json.loads(payload) if payload.lstrip().startswith("{") else {"events": parse_sse(payload)}
    shown = {k: v for k, v in payload.items() if k in ("hits", "answer", "citations", "sources", "conflicts",
                                                       "error", "events", "text")}
    if "events" in shown:
        shown["events"] = [{k: v for k, v in d.items() if k != "trace"} for _, d in shown["events"]]
    text = json.dumps(shown, ensure_ascii=False)
    for marker in ACME_MARKERS:
        assert marker not in text, marker


def test_the_owner_sees_it(server_url, api_keys, server_kb):
    r = httpx.post(f"{server_url}/v1/search", json={"query": ACME_QUESTION, "k": 5},
                   headers=bearer(api_keys["acme"]), timeout=60)
    assert any(h["source"].endswith("acme/runbook.md") for h in r.json()["hits"])
    r = httpx.post(f"{server_url}/v1/ask", json={"question": ACME_QUESTION}, headers=bearer(api_keys["acme"]),
                   timeout=60)
    assert "zanzibar-7" in r.text
    r = httpx.get(f"{server_url}/v1/documents/{_acme_doc_id(server_kb)}", headers=bearer(api_keys["acme"]), timeout=30)
    assert r.status_code == 200 and "zanzibar-7" in r.json()["text"]


@pytest.mark.parametrize("who", ["globex", "public"])
def test_another_tenant_never_sees_it(server_url, api_keys, server_kb, who):
    h = bearer(api_keys[who])
    for body in ({"query": ACME_QUESTION, "k": 20}, {"query": "zanzibar-7 4711", "mode": "bm25", "k": 20},
                 {"query": ACME_QUESTION, "k": 20, "strategy": "multi-query"},
                 {"query": ACME_QUESTION, "filters": {"tenant": "acme"}}):
        r = httpx.post(f"{server_url}/v1/search", json=body, headers=h, timeout=60)
        assert r.status_code == 200, r.text
        _assert_no_acme(r.text)
    r = httpx.post(f"{server_url}/v1/ask", json={"question": ACME_QUESTION}, headers=h, timeout=60)
    assert r.status_code == 200
    _assert_no_acme(r.text)
    r = httpx.post(f"{server_url}/v1/ask", json={"question": ACME_QUESTION, "stream": True}, headers=h, timeout=60)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    _assert_no_acme(r.text)
    assert parse_sse(r.text)[-1][0] == "answer"
    r = httpx.post(f"{server_url}/v1/chat", json={"question": "Which broker host is the standby?"}, headers=h,
                   timeout=60)
    follow = httpx.post(f"{server_url}/v1/chat", json={"question": "And the escalation line?",
                                                       "conversation_id": r.json()["conversation_id"]},
                        headers=h, timeout=60)
    _assert_no_acme(r.text)
    _assert_no_acme(follow.text)
    doc_id = _acme_doc_id(server_kb)
    r = httpx.get(f"{server_url}/v1/documents/{doc_id}", params={"quote": "0:10"}, headers=h, timeout=30)
    missing = httpx.get(f"{server_url}/v1/documents/no-such-id", headers=h, timeout=30)
    assert r.status_code == missing.status_code == 404  # "not yours" and "not there" look the same
    assert r.json()["error"]["type"] == missing.json()["error"]["type"] == "not_found"
    _assert_no_acme(r.text)


@pytest.mark.parametrize("field, value", [("tenant", "acme"), ("user", "alice"), ("groups", ["acme-ops"]),
                                          ("principal", {"tenant": "acme"}), ("as", "alice")])
@pytest.mark.parametrize("endpoint, key", [("search", "query"), ("ask", "question"), ("chat", "question")])
def test_a_body_cannot_name_the_principal(server_url, api_keys, field, value, endpoint, key):
    r = httpx.post(f"{server_url}/v1/{endpoint}", json={key: ACME_QUESTION, field: value},
                   headers=bearer(api_keys["globex"]), timeout=60)
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "invalid_request"
    assert field in r.json()["error"]["message"]
    _assert_no_acme(r.text)


def test_a_conversation_belongs_to_the_key_that_started_it(server_url, api_keys):
    r = httpx.post(f"{server_url}/v1/chat", json={"question": ACME_QUESTION}, headers=bearer(api_keys["acme"]),
                   timeout=60)
    conversation = r.json()["conversation_id"]
    r = httpx.post(f"{server_url}/v1/chat", json={"question": "And the line?", "conversation_id": conversation},
                   headers=bearer(api_keys["globex"]), timeout=60)
    assert r.status_code == 404
    _assert_no_acme(r.text)
