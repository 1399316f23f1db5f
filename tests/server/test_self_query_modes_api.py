"""POST /v1/search and /v1/ask take self_query auto|rules|llm|off; auto uses the server's LLM."""

from __future__ import annotations

from typing import Any

import httpx

from beleg.query.self_query_llm import SYSTEM
from beleg.testing import ScriptedLLM
from tests.server.conftest import bearer

QUESTION = "How long are failed webhook deliveries retried?"


def _responder(messages: Any) -> str:
    if messages[0].content == SYSTEM:
        return '{"version": "3.0", "tenant": "acme"}'
    return "The sources do not answer this."


def test_a_server_with_an_llm_asks_it_by_default_and_a_body_chooses(start_server: Any, server_kb: Any,
                                                                     api_keys: dict[str, str]) -> None:
    from beleg.service import Service

    llm = ScriptedLLM(responder=_responder)
    h = bearer(api_keys["public"])
    with start_server(index=Service(server_kb, llm=llm)) as url:
        def search(**body: Any) -> httpx.Response:
            return httpx.post(f"{url}/v1/search", json={"query": QUESTION, **body}, headers=h, timeout=60)

        default = search().json()
        rules = search(self_query="rules").json()
        off = search(self_query=False).json()
        bad = search(self_query="maybe")
        asked = httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, headers=h, timeout=60).json()
    sq = default["self_query"]
    assert sq["method"] == "llm" and default["trace"]["llm"]["calls"] == 1
    assert [(c["key"], c["value"], c["origin"]) for c in sq["constraints"]] == [("version", "3.0", "llm")]
    # the model's "tenant" is no field self-query reads: dropped, never a filter
    assert [r["field"] for r in sq["llm"]["rejected"]] == ["tenant"]
    assert rules["self_query"]["method"] == "rules" and off["self_query"]["enabled"] is False
    assert bad.status_code == 400
    assert asked["trace"]["self_query"]["method"] == "llm" and asked["trace"]["llm"]["self_query_calls"] == 1
    assert len([c for c in llm.calls if c[0].content == SYSTEM]) == 2  # one per default request, none for rules


def test_llm_mode_without_an_llm_is_a_clear_400(server_url: str, api_keys: dict[str, str]) -> None:
    r = httpx.post(f"{server_url}/v1/search", json={"query": QUESTION, "self_query": "llm"},
                   headers=bearer(api_keys["public"]), timeout=60)
    assert r.status_code == 400 and "needs an LLM" in r.json()["error"]["message"]
    auto = httpx.post(f"{server_url}/v1/search", json={"query": QUESTION},
                      headers=bearer(api_keys["public"]), timeout=60).json()
    assert auto["self_query"]["method"] == "rules"  # no LLM: auto is the rules
