"""The leak suite matches restricted markers against output VALUES, never against JSON keys.

A restricted document titled "Status Score Report" must not be counted as leaked because an
answer's trace or a hit's metadata has the keys ``status`` and ``score``; the same words in a
value are a leak.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from beleg.evaluate.leak_probes import LeakProbe, _Doc, _restricted, json_values
from beleg.evaluate.leaks import _Runner
from beleg.types import ANONYMOUS, Hit

PUBLIC = _Doc("pub1", "docs/relay.md", {"title": "Relay guide"}, "Relay guide",
              "Restart the relay service after a configuration change.", (("c-pub1", "Relay guide", "Restart."),))
SECRET = _Doc("sec1", "docs/alpha/report.md", {"title": "Status Score Report", "tenant": "alpha"},
              "Status Score Report", "Quarterly figures for tenant alpha only.",
              (("c-sec1", "Status Score Report", "Quarterly figures."),))


class _FakeKB:
    """Just enough of a knowledge base for one ``ask`` probe: its answer is given by the test."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    # The runner asks the store which terms exist (to tell a leaked term from an echoed one); none do here.
    store = SimpleNamespace(stored_terms=lambda terms: set())

    def ask(self, *args: Any, **kwargs: Any) -> Any:
        return self.answer


def _public_hit(metadata: dict[str, Any]) -> Hit:
    return Hit("c-pub1", "pub1", "docs/relay.md", "Relay guide", ("Relay guide",), 0, 10, 0.5, "Restart.", metadata)


def _answer(trace: dict[str, Any], metadata: dict[str, Any], text: str = "Restart the relay service.") -> Any:
    source = SimpleNamespace(hit=_public_hit(metadata))
    return SimpleNamespace(answer=text, sources=[source], citations=[], conflicts=[], trace=trace)


def _probe_leaks(answer: Any) -> list[str]:
    docs = [PUBLIC, SECRET]
    restricted = _restricted(docs, 2)
    assert {"status", "score"} <= set(restricted[0].markers), restricted[0].markers
    runner = _Runner(_FakeKB(answer), docs, restricted, llm=None)
    probe = LeakProbe("ask/extractive: anonymous -> report.md", "ask", "extractive", ANONYMOUS, "anonymous",
                      "sec1", "How do I restart the relay?")
    _, leaks = runner.run(probe)
    return leaks


def test_keys_that_spell_restricted_words_are_not_leaks() -> None:
    trace = {"status": "answered", "score": 0.83, "steps": [{"source": "docs/relay.md", "text": "Restart."}],
             "decision": {"status": {"score": 1}}}
    assert _probe_leaks(_answer(trace, {"status": "current", "score": 3, "title": "Relay guide"})) == []


@pytest.mark.parametrize("where", ["trace", "metadata", "answer"])
def test_restricted_words_in_values_are_leaks(where: str) -> None:
    trace: dict[str, Any] = {"status": "answered"}
    metadata: dict[str, Any] = {"title": "Relay guide"}
    text = "Restart the relay service."
    if where == "trace":
        trace["notes"] = ["see the Status Score Report"]
    elif where == "metadata":
        metadata["related"] = {"title": "Status Score Report"}
    else:
        text = "The score is in the quarterly report."
    leaks = _probe_leaks(_answer(trace, metadata, text))
    assert leaks and any("'score'" in w for w in leaks), leaks


def test_json_values_keeps_values_and_content_keys() -> None:
    text = json_values({"status": "ok", "bm25_weight": 0.5, "groups": {"What is INC-7?": ["c1"]}, "flag": True,
                        "missing": None, "items": [{"text": "Nordwind"}]})
    assert text.splitlines() == ["ok", "0.5", "What is INC-7?", "c1", "Nordwind"]
