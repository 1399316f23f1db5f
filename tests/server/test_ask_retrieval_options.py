"""Answers search with the caller's retrieval options: fusion, weights, MMR and a reranker reach
every search an answer makes (plain, or each of a strategy's), through the CLI, HTTP and the
service layer, as they reach ``beleg search``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from tests.server.conftest import bearer

QUESTION = "How long does Ferrolink retry a failed webhook delivery?"
WANTED = {"fusion": "weighted", "weights": (0.5, 2.0), "mmr_lambda": 0.4}


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every ``KnowledgeBase.search`` call while the test runs."""
    from beleg.kb import KnowledgeBase

    calls: list[dict[str, Any]] = []
    original = KnowledgeBase.search

    def recording(self: Any, query: str, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return original(self, query, **kwargs)

    monkeypatch.setattr(KnowledgeBase, "search", recording)
    return calls


def _all_used(calls: list[dict[str, Any]], **wanted: Any) -> None:
    assert calls, "no search was made"
    for call in calls:
        got = {key: (tuple(call[key]) if key == "weights" else call.get(key)) for key in wanted}
        assert got == wanted, f"a search ran with {got}, not {wanted}"


@pytest.mark.parametrize("strategy", ["hybrid", "multi-query"])
def test_ask_on_the_command_line_passes_fusion_weights_and_mmr_to_every_search(server_kb, searches, capsys,
                                                                              strategy) -> None:
    from beleg.cli.main import main

    code = main(["ask", QUESTION, "--index", str(server_kb.root), "--strategy", strategy, "--fusion", "weighted",
                 "--weights", "0.5,2", "--mmr", "0.4", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    _all_used(searches, **WANTED)
    if strategy != "hybrid":
        assert len(searches) > 1  # the strategy searched more than once, each time with the options
    assert out["trace"]["retrieval"]["fusion"] == "weighted" and out["trace"]["retrieval"]["mmr"] == 0.4


def test_ask_over_http_passes_fusion_weights_and_mmr_to_every_search(start_server, searches, api_keys,
                                                                    tmp_path) -> None:
    from beleg.server import ServerSettings

    body = {"question": QUESTION, "strategy": "multi-query", "fusion": "weighted", "weights": [0.5, 2], "mmr": 0.4}
    with start_server(ServerSettings(rate_per_second=1000, burst=1000, upload_dir=tmp_path)) as url:
        r = httpx.post(f"{url}/v1/ask", json=body, headers=bearer(api_keys["acme"]), timeout=120)
        assert r.status_code == 200, r.text
        _all_used(searches, **WANTED)
        assert r.json()["trace"]["retrieval"]["weights"] == [0.5, 2.0]
        chat = httpx.post(f"{url}/v1/chat", json={**body, "mmr": 0.9}, headers=bearer(api_keys["acme"]), timeout=120)
        assert chat.status_code == 200, chat.text
        assert searches[-1]["mmr_lambda"] == 0.9
        bad = httpx.post(f"{url}/v1/ask", json={**body, "mmr": 1.5}, headers=bearer(api_keys["acme"]), timeout=60)
        assert bad.status_code == 400 and "mmr" in bad.text


class _CountingReranker:
    """A reranker that prefers shorter passages and counts its calls (real scores, no model)."""

    spec = "counting"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.queries.append(query)
        return [-float(len(p)) for p in passages]


def test_the_services_reranker_reranks_every_search_of_an_answer(server_kb, searches) -> None:
    from beleg.answer.answerer import AnswerOptions
    from beleg.service import Service

    reranker = _CountingReranker()
    answer = Service(server_kb, reranker=reranker).ask(QUESTION, options=AnswerOptions(strategy="multi-query"))
    assert len(reranker.queries) == len(searches) > 1
    assert all(call["reranker"] is reranker for call in searches)
    assert answer.trace["retrieval"]["reranker"] == "counting"


def test_answer_options_refuse_bad_retrieval_options() -> None:
    from beleg.answer.answerer import AnswerOptions
    from beleg.errors import ConfigError

    for bad in ({"mmr": -0.1}, {"mmr": 1.01}, {"weights": (1.0,)}, {"fusion": "sum"}):
        with pytest.raises(ConfigError):
            AnswerOptions(**bad)  # type: ignore[arg-type]
