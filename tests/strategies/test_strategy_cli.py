"""`--strategy` on search and ask, through the command line, offline."""

from __future__ import annotations

import json

import pytest

from beleg.cli.main import main
from beleg.strategies import STRATEGIES, run_strategy


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", [n for n in STRATEGIES if n not in ("hyde", "agent", "auto-llm")])
def test_search_json_has_the_trace_of_every_offline_strategy(demo_kb, capsys, name: str) -> None:
    code, out, err = _run(capsys, "search", "What do E-5040 and E-5042 mean?", "--index", str(demo_kb.path),
                          "--strategy", name, "--json", "-k", "5")
    assert code == 0, err
    data = json.loads(out)
    assert data["trace"]["strategy"] == name and data["trace"]["queries"], data["trace"]
    assert data["hits"] and len(data["hits"]) <= 5


@pytest.mark.parametrize("name", ["hyde", "agent", "auto-llm"])
def test_strategies_without_an_offline_method_say_so(demo_kb, capsys, name: str) -> None:
    code, _, err = _run(capsys, "search", "What is E-4012?", "--index", str(demo_kb.path), "--strategy", name)
    assert code == 1 and "needs an LLM" in err and len(err.strip().splitlines()) == 1


def test_unknown_strategy_suggests_a_name(demo_kb, capsys) -> None:
    code, _, err = _run(capsys, "search", "x", "--index", str(demo_kb.path), "--strategy", "multiquery")
    assert code == 1 and "Did you mean 'multi-query'" in err


def test_ask_with_decompose_answers_each_part(demo_kb, capsys) -> None:
    code, out, err = _run(capsys, "ask", "What do E-5040 and E-5042 mean, and are such deliveries retried?",
                          "--index", str(demo_kb.path), "--strategy", "decompose", "--json", "--min-confidence", "0")
    assert code == 0, err
    data = json.loads(out)
    assert not data["refused"] and data["verified"]
    assert len(data["trace"]["strategy"]["queries"]) >= 2
    assert "E-5040" in data["answer"] and "E-5042" in data["answer"]
    assert len({c["label"] for c in data["citations"]}) >= 2


def test_auto_routes_a_bridge_question_to_multi_hop(demo_kb) -> None:
    q = "What was the maximum message size of the Ferrolink version that reached end of life on 30 June 2024?"
    result = run_strategy(demo_kb, "auto", q)
    assert any(n.startswith("route: multi-hop") for n in result.trace.notes), result.trace.notes
    assert result.hits[0].metadata.get("version") == "1.8"
