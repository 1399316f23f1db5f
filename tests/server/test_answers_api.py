"""Answers over HTTP: the same object as ``ask --json``, server-sent events, chat follow-ups,
documents with quoted ranges."""

from __future__ import annotations

import httpx

from beleg.testing.scripted import ScriptedLLM
from tests.server.conftest import bearer
from tests.server.test_tenant_isolation import parse_sse

RETRY = "How long does Ferrolink retry failed webhook deliveries?"


def test_ask_json_matches_the_cli_object(server_url, api_keys, server_kb, capsys):
    from beleg.cli.main import main

    r = httpx.post(f"{server_url}/v1/ask", json={"question": RETRY}, headers=bearer(api_keys["public"]), timeout=60)
    assert main(["ask", RETRY, "--index", str(server_kb.root), "--json"]) == 0
    import json

    cli = json.loads(capsys.readouterr().out)
    api = r.json()
    for key in ("answer", "refused", "citations", "conflicts", "sources"):
        assert api[key] == cli[key], key
    assert set(cli) <= set(api)


def test_streamed_answer_ends_with_the_answer_object(server_url, api_keys):
    h = bearer(api_keys["public"])
    plain = httpx.post(f"{server_url}/v1/ask", json={"question": RETRY}, headers=h, timeout=60).json()
    r = httpx.post(f"{server_url}/v1/ask", json={"question": RETRY, "stream": True}, headers=h, timeout=60)
    events = parse_sse(r.text)
    name, answer = events[-1]
    assert name == "answer"
    assert {n for n, _ in events[:-1]} <= {"token"}
    assert answer["answer"] == plain["answer"] and answer["citations"] == plain["citations"]
    assert "verified" in answer and "supported" in answer


def test_streaming_with_an_llm_sends_its_tokens_first(start_server, server_kb, api_keys):
    """With an LLM the tokens arrive as `token` events, in order, before the verified answer."""
    from beleg.service import Service

    text = "Ferrolink retries failed deliveries for 72 hours. [S1]"
    llm = ScriptedLLM([text] * 4)
    with start_server(index=Service(server_kb, llm=llm)) as url:
        r = httpx.post(f"{url}/v1/ask", json={"question": RETRY, "stream": True},
                       headers=bearer(api_keys["public"]), timeout=60)
    events = parse_sse(r.text)
    tokens = [d["text"] for n, d in events if n == "token"]
    assert len(tokens) > 1 and "".join(tokens) == text
    assert events[-1][0] == "answer" and events[-1][1]["citations"]


def test_chat_resolves_follow_ups_with_earlier_questions(server_url, api_keys):
    h = bearer(api_keys["public"])
    first = httpx.post(f"{server_url}/v1/chat", json={"question": "What does E-4012 mean?"}, headers=h, timeout=60)
    assert first.status_code == 200
    conversation = first.json()["conversation_id"]
    follow = httpx.post(f"{server_url}/v1/chat", json={"question": "And E-5001?", "conversation_id": conversation},
                        headers=h, timeout=60)
    assert follow.json()["conversation_id"] == conversation
    assert follow.json()["trace"]["queries"][0] == "What does E-4012 mean? And E-5001?"
    alone = httpx.post(f"{server_url}/v1/chat", json={"question": "And E-5001?"}, headers=h, timeout=60)
    assert alone.json()["conversation_id"] != conversation
    assert alone.json()["trace"]["queries"][0] == "And E-5001?"
    r = httpx.post(f"{server_url}/v1/chat", json={"question": "x?", "conversation_id": "made-up"}, headers=h,
                   timeout=60)
    assert r.status_code == 404


def test_chat_asks_a_question_with_its_own_subject_alone(server_url, api_keys):
    h = bearer(api_keys["public"])
    first = httpx.post(f"{server_url}/v1/chat", json={"question": "What is the retry window in Ferrolink 3.0?"},
                       headers=h, timeout=60).json()
    alone = httpx.post(f"{server_url}/v1/chat", json={"question": "What does E-4012 mean?",
                                                      "conversation_id": first["conversation_id"]},
                       headers=h, timeout=60).json()
    # Not held to the earlier question's version, not searched with it.
    assert alone["trace"]["target"]["origin"] == "none" and alone["trace"]["queries"][0] == "What does E-4012 mean?"
    assert alone["trace"]["conversation"]["follow_up"] is False and "E-4012" in alone["trace"]["conversation"]["reason"]
    follow = httpx.post(f"{server_url}/v1/chat", json={"question": "And E-5001?",
                                                       "conversation_id": first["conversation_id"]},
                        headers=h, timeout=60).json()
    assert follow["trace"]["conversation"]["follow_up"] is True
    assert follow["trace"]["queries"][0] == "What does E-4012 mean? And E-5001?"


def test_document_with_the_quoted_ranges_of_a_citation(server_url, api_keys):
    h = bearer(api_keys["public"])
    answer = httpx.post(f"{server_url}/v1/ask", json={"question": RETRY}, headers=h, timeout=60).json()
    citation = answer["citations"][0]
    r = httpx.get(f"{server_url}/v1/documents/{citation['doc_id']}",
                  params={"quote": f"{citation['start']}:{citation['end']}"}, headers=h, timeout=30)
    assert r.status_code == 200
    doc = r.json()
    assert doc["quotes"] == [{"start": citation["start"], "end": citation["end"], "text": citation["quote"]}]
    assert doc["text"][citation["start"]:citation["end"]] == citation["quote"]
    # Beleg's own bookkeeping (_body_offset, _body_line of a Markdown file) is not the document's metadata
    assert doc["metadata"]["title"] and not [k for k in doc["metadata"] if k.startswith("_")]
    assert not [k for s in answer["sources"] for k in s.get("metadata", {}) if k.startswith("_")]
    for bad in ("5", "9:2", "0:99999999", "a:b"):
        r = httpx.get(f"{server_url}/v1/documents/{citation['doc_id']}", params={"quote": bad}, headers=h, timeout=30)
        assert r.status_code == 400, bad
        assert r.json()["error"]["type"] == "invalid_request"


def test_a_failing_llm_is_502_and_a_stream_error_event(start_server, server_kb, api_keys):
    from beleg.errors import LLMUnavailableError
    from beleg.service import Service

    def down(messages):
        raise LLMUnavailableError("cannot reach http://llm.internal:11434: connection refused")

    with start_server(index=Service(server_kb, llm=ScriptedLLM(responder=down))) as url:
        r = httpx.post(f"{url}/v1/ask", json={"question": RETRY}, headers=bearer(api_keys["public"]), timeout=60)
        streamed = httpx.post(f"{url}/v1/ask", json={"question": RETRY, "stream": True},
                              headers=bearer(api_keys["public"]), timeout=60)
    assert r.status_code == 502 and r.json()["error"]["type"] == "llm_error"
    assert "connection refused" in r.json()["error"]["message"]
    assert parse_sse(streamed.text) == [("error", r.json())]


def test_document_with_the_span_of_a_cited_chunk(server_url, api_keys, server_kb):
    h = bearer(api_keys["public"])
    answer = httpx.post(f"{server_url}/v1/ask", json={"question": RETRY}, headers=h, timeout=60).json()
    citation = answer["citations"][0]
    r = httpx.get(f"{server_url}/v1/documents/{citation['doc_id']}", params={"chunk": citation["chunk_id"]},
                  headers=h, timeout=30)
    assert r.status_code == 200, r.text
    (quote,) = r.json()["quotes"]
    assert quote["start"] <= citation["start"] and citation["end"] <= quote["end"]  # the quote lies in its chunk
    assert citation["quote"] in quote["text"]
    from beleg.types import Principal

    acme = server_kb.search("failover standby host", k=5, principal=Principal("alice", "acme", ("acme-ops",)))
    acme_chunk = next(hit.chunk_id for hit in acme if hit.source.endswith("acme/runbook.md"))
    for chunk in ("no-such-chunk", acme_chunk):  # another document's chunk gives no span of it
        r = httpx.get(f"{server_url}/v1/documents/{citation['doc_id']}", params={"chunk": chunk}, headers=h,
                      timeout=30)
        assert r.status_code == 400 and "zanzibar" not in r.text
