"""A budget spent before any search (one slow LLM call can spend the whole time budget) still
returns the plain search of the question, and the trace says so."""

from __future__ import annotations

import time
from typing import Any

import pytest

from beleg.strategies import Budget, run_strategy
from beleg.testing import ScriptedLLM
from tests.strategies.test_query_strategies import StubKB


def _slow(*_: Any, **__: Any) -> str:
    time.sleep(0.3)
    return "restart the relay service"


@pytest.mark.parametrize("name", ["rewrite", "decompose"])
def test_budget_spent_by_the_first_llm_call_falls_back_to_the_plain_search(name: str) -> None:
    kb = StubKB()
    result = run_strategy(kb, name, "How do I restart the relay?", llm=ScriptedLLM(responder=_slow),
                          budget=Budget(max_seconds=0.1))
    assert result.hits, result.trace.notes
    assert kb.queries == ["How do I restart the relay?"]
    assert any("fell back to a plain" in n for n in result.trace.notes), result.trace.notes
    assert result.trace.steps[-1].name == "fallback"


@pytest.mark.parametrize("name", ["hyde", "multi-query"])
def test_a_run_that_searched_before_the_budget_ran_out_keeps_its_own_hits(name: str) -> None:
    kb = StubKB()
    result = run_strategy(kb, name, "How do I restart the relay?", llm=ScriptedLLM(responder=_slow),
                          budget=Budget(max_seconds=0.1))
    assert result.hits and kb.searches
    assert not any("fell back" in n for n in result.trace.notes), result.trace.notes
