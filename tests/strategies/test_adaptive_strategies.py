"""Adaptive strategies: multi-hop (bridge facts, version check), iterative (gap search, stop
rules), auto (routing), the permissions they keep, and ``eval --strategies``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beleg.backends.llms.formats import ROUTE_SCHEMA
from beleg.cli.main import main
from beleg.evaluate.datasets import load_gold
from beleg.evaluate.report_text import render_table
from beleg.evaluate.strategies import run_strategy_eval
from beleg.strategies import (
    STRATEGIES,
    Budget,
    StrategyContext,
    StrategyResult,
    run_strategy,
)
from beleg.strategies.auto import ROUTER_SYSTEM, ROUTES, is_small_talk, looks_multi_part
from beleg.strategies.iterative import split_parts
from beleg.strategies.multi_hop import find_unresolved
from beleg.testing.scripted import ScriptedLLM
from beleg.types import Principal

ROOT = Path(__file__).resolve().parents[2]
EOL_QUESTION = "What was the maximum message size of the Ferrolink version that reached end of life on 30 June 2024?"
NORDWIND = Principal(None, "nordwind", ("ops-nordwind",))
TENANT_HOST = "mq-nordwind-01.internal"


def _docs(hits) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.source.replace("\\", "/").split("/corpus/")[-1] for h in hits]


def _notes(result: StrategyResult) -> str:
    return "\n".join(result.trace.notes)


# ---------------------------------------------------------------------- rules without an index
def test_unresolved_part_and_the_kind_of_fact_it_wants() -> None:
    part = find_unresolved(EOL_QUESTION)
    assert part is not None and part.kind == "version"
    assert EOL_QUESTION[part.start:part.end] == "the Ferrolink version that reached end of life on 30 June 2024"
    part = find_unresolved("How long is a delivery retried that fails with the error code logged for an expired "
                           "certificate?")
    assert part is not None and part.kind == "code" and part.head == "error code"
    part = find_unresolved("Wie groß durfte eine Nachricht in der Version, die am 30. Juni 2024 endete, sein?")
    assert part is not None and part.kind == "version"
    assert find_unresolved("What does error E-4012 mean?") is None


def test_router_rules() -> None:
    for text in ("hi", "Hallo!", "danke", "thank you", "What can you do?",
                 "was kannst du?"):
        assert is_small_talk(text), text
    assert not is_small_talk("hi, what does E-4012 mean?")
    assert looks_multi_part("What do E-5040 and E-5042 mean, and are such deliveries retried?")
    assert looks_multi_part("What is the retry window? And the message size?")
    assert not looks_multi_part("What does error E-4012 mean?")
    assert split_parts("When does Ferrolink send its invoices, and when are they due?") == [
        "When does Ferrolink send its invoices", "when are they due"]


# ---------------------------------------------------------------------- multi-hop
def test_multi_hop_resolves_the_version_then_finds_its_limit(demo_kb) -> None:
    result = run_strategy(demo_kb, "multi-hop", EOL_QUESTION)
    docs = _docs(result.hits)
    assert set(docs[:3]) <= {"release-notes/1.8.md", "contracts/service-contract-1.8.md"}, docs[:3]
    assert {"release-notes/1.8.md", "contracts/service-contract-1.8.md"} <= set(docs[:3])
    assert "release-notes/3.0.md" in docs[:5]  # the chunk that states the bridge is kept
    notes = _notes(result)
    assert "bridge: 1.8 (version, offline)" in notes and "end of life on 30 June 2024" in notes
    assert [s.name for s in result.trace.steps] == ["hop 1", "hop 2"]
    assert result.trace.queries[1] == "What was the maximum message size of Ferrolink 1.8?"
    assert result.trace.llm_calls == 0


def test_multi_hop_rejects_a_bridge_version_no_hop_1_source_has(demo_kb) -> None:
    llm = ScriptedLLM(['{"bridge": "9.9", "query": "maximum message size Ferrolink 9.9"}'])
    result = run_strategy(demo_kb, "multi-hop", EOL_QUESTION, llm=llm)
    notes = _notes(result)
    assert "bridge '9.9' from the LLM rejected" in notes and "not a version" in notes
    assert not any("9.9" in q for q in result.trace.queries)
    assert "bridge: 1.8 (version, offline)" in notes  # fell back to the offline bridge
    assert result.trace.llm_calls == 1


def test_multi_hop_bridge_must_agree_with_a_pinned_version(demo_kb) -> None:
    result = run_strategy(demo_kb, "multi-hop", EOL_QUESTION, filters={"version": "3.0"})
    assert "no bridge fact found" in _notes(result)
    assert all(str(h.metadata.get("version")) == "3.0" for h in result.hits)
    assert result.trace.rounds >= 1 and not any("1.8" in q for q in result.trace.queries)


# ---------------------------------------------------------------------- iterative
def test_iterative_stops_when_the_question_is_covered(demo_kb) -> None:
    result = run_strategy(demo_kb, "iterative", "What does error E-4012 mean?")
    assert result.trace.rounds == 1
    assert "round 1: coverage 1.00" in _notes(result) and "reached the threshold" in _notes(result)


def test_iterative_searches_the_gap_and_stops_without_progress(demo_kb) -> None:
    # Anonymous: the Nordwind terms are in the index but only in tenant documents, so the
    # gap query finds nothing new and the no-progress rule ends the run.
    result = run_strategy(demo_kb, "iterative", "What is the hostname of the primary Nordwind broker?")
    notes = _notes(result)
    assert result.trace.rounds == 2, notes
    assert "nordwind" in result.trace.queries[1].lower()
    assert "no progress" in notes
    assert not any(h.metadata.get("tenant") for h in result.hits)


def test_iterative_stops_at_the_retrieval_budget(demo_kb) -> None:
    result = run_strategy(demo_kb, "iterative", "How long does a worker have to finish something it grabbed before "
                          "another worker can grab it too?", budget=Budget(max_rounds=1))
    assert result.trace.rounds == 1
    assert "retrieval budget of 1 rounds spent" in _notes(result)
    assert result.hits


def test_iterative_with_an_llm_asks_what_is_missing(demo_kb) -> None:
    llm = ScriptedLLM(['{"missing": null}'])
    result = run_strategy(demo_kb, "iterative", "How long does a worker have to finish something it grabbed?",
                          llm=llm)
    assert result.trace.llm_calls == 1 and result.trace.rounds == 1
    assert "nothing is missing" in _notes(result)


# ---------------------------------------------------------------------- auto
def test_auto_routes_small_talk_to_no_retrieval(demo_kb) -> None:
    for text in ("hi", "Danke!", "what can you do"):
        result = run_strategy(demo_kb, "auto", text)
        assert result.hits == [] and result.trace.rounds == 0
        assert "route: no retrieval" in _notes(result)


def test_auto_routes_multi_part_and_simple_questions(demo_kb) -> None:
    result = run_strategy(demo_kb, "auto", "What do E-5040 and E-5042 mean, and are such deliveries retried?")
    assert "route: decomposed" in _notes(result)
    docs = _docs(result.hits)
    assert "reference/errors.md" in docs[:5]
    result = run_strategy(demo_kb, "auto", "What does error E-4012 mean?")
    assert "route: single" in _notes(result) and result.trace.rounds == 1
    assert "reference/errors.md" in _docs(result.hits)[:3]


def test_auto_routes_poorly_covered_questions_to_iterative(demo_kb) -> None:
    result = run_strategy(demo_kb, "auto", "How long does a worker have to finish something it grabbed before "
                          "another worker can grab it too?")
    assert "route: iterative" in _notes(result) and result.trace.rounds >= 2


def test_auto_llm_takes_the_route_the_model_names_and_falls_back_to_the_rules(demo_kb) -> None:
    def routed(reply: str, question: str) -> StrategyResult:
        llm = ScriptedLLM(responder=lambda messages: reply if messages[0].content == ROUTER_SYSTEM else "E-4012")
        result = run_strategy(demo_kb, "auto-llm", question, llm=llm)
        assert llm.calls[0][0].content == ROUTER_SYSTEM  # the route is asked first, once
        return result

    none = routed('{"route": "none", "reason": "a greeting"}', "What does error E-4012 mean?")
    assert none.hits == [] and none.trace.rounds == 0 and "route: none (LLM router: a greeting)" in _notes(none)
    single = routed('{"route": "single", "reason": "one fact"}', "hi there, what does E-4012 mean?")
    assert single.trace.rounds == 1 and "reference/errors.md" in _docs(single.hits)[:3]
    several = routed('{"route": "decompose", "reason": "two errors"}', "What do E-5040 and E-5042 mean?")
    assert "route: decompose (LLM router" in _notes(several)
    # A reply that names no route: the rules of auto decide, and the trace says so.
    fallback = routed('{"route": "elsewhere"}', "What does error E-4012 mean?")
    assert "names no route" in _notes(fallback) and "route: single" in _notes(fallback)
    assert ROUTE_SCHEMA["properties"]["route"]["enum"] == list(ROUTES)


# ---------------------------------------------------------------------- permissions
@pytest.mark.parametrize("name", ["multi-hop", "iterative", "auto"])
def test_tenant_documents_stay_hidden_in_every_step(demo_kb, name: str) -> None:
    question = f"Which broker is the standby of {TENANT_HOST}, the primary broker of the Nordwind cell?"
    # An LLM that pushes the tenant host name into every query and bridge.
    llm = ScriptedLLM(responder=lambda _msgs: json.dumps(
        {"bridge": TENANT_HOST, "query": TENANT_HOST, "missing": "host", "decision": TENANT_HOST}))
    for with_llm in (None, llm):
        ctx_hits = run_strategy(demo_kb, name, question, llm=with_llm)
        assert not any(h.metadata.get("tenant") for h in ctx_hits.hits), (name, _docs(ctx_hits.hits))
        assert not any(TENANT_HOST in h.text for h in ctx_hits.hits)
    if name == "multi-hop":
        assert "rejected" in _notes(ctx_hits)  # the LLM's bridge occurs in no hop-1 source
    own = run_strategy(demo_kb, name, question, principal=NORDWIND)
    assert any(h.metadata.get("tenant") == "nordwind" for h in own.hits)


def test_extra_filters_only_narrow(demo_kb) -> None:
    ctx = StrategyContext(demo_kb, filters={"version": "2.4"})
    hits = ctx.search("maximum message size", extra={"version": "1.8"})
    assert hits == []


# ---------------------------------------------------------------------- evaluation
class _LLMOnly:
    name = "llm-only"
    offline = False

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        raise AssertionError("must not run without an LLM")


def test_strategy_eval_compares_with_cost_columns(demo_kb, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STRATEGIES, "llm-only", (__name__, "_LLMOnly", "test: needs an LLM"))
    dataset = load_gold(ROOT / "demo" / "gold.yaml")
    dataset.queries = [q for q in dataset.queries if q.qid in {"q001", "q100", "q120", "q146"}]
    report = run_strategy_eval(demo_kb, dataset, "hybrid,iterative,multi-hop,llm-only", k=10, progress=False)
    assert list(report.results) == ["hybrid", "iterative", "multi-hop"]
    assert any("'llm-only' skipped: needs an LLM" in n for n in report.notes)
    data = report.to_json(per_query=True)
    for row in data["results"].values():
        assert {"hit@1", "ndcg@10", "recall@10", "latency_ms_p50", "llm_calls_mean", "rounds_mean"} <= set(row)
    assert data["results"]["hybrid"]["rounds_mean"] == 1.0
    assert data["results"]["multi-hop"]["rounds_mean"] > 1.0
    mh = report.results["multi-hop"].queries["q120"].metrics
    assert mh["hit@1"] == 1.0 and mh["ndcg@10"] > report.results["hybrid"].queries["q120"].metrics["ndcg@10"]
    assert "multi-hop" in data["by_type"] and "multi-hop" in data["by_type"]["multi-hop"]
    assert "bridge: 1.8" in " ".join(data["per_query"]["multi-hop"]["q120"]["trace"]["notes"])
    table = render_table(report, color=False)
    assert "LLM calls" in table and "rounds" in table and "multi-hop" in table


def test_cli_eval_strategies_on_a_small_gold_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "retries.md").write_text("---\ntitle: Retries\nversion: \"3.0\"\n---\n# Retries\n\n"
                                       "Failed webhook deliveries are retried for 72 hours.\n", encoding="utf-8")
    (corpus / "size.md").write_text("---\ntitle: Limits\nversion: \"3.0\"\n---\n# Message size\n\n"
                                    "A message may be at most 1 MB.\n", encoding="utf-8")
    (corpus / "eol.md").write_text("---\ntitle: End of life\nversion: \"3.0\"\n---\n# End of life\n\n"
                                   "Version 1.8 reached its end of life on 30 June 2024.\n", encoding="utf-8")
    gold = tmp_path / "gold.yaml"
    gold.write_text(
        "version: 1\ncorpus: corpus\nquestions:\n"
        "  - {id: a, question: \"How long are webhook deliveries retried?\", type: simple,"
        " relevant: [{doc: retries.md, grade: 2}]}\n"
        "  - {id: b, question: \"What is the maximum message size?\", type: simple,"
        " relevant: [{doc: size.md, grade: 2}]}\n"
        "  - {id: c, question: \"hi\", type: small-talk, relevant: []}\n", encoding="utf-8")
    code = main(["eval", "--gold", str(gold), "--strategies", "hybrid,iterative,multi-hop,auto", "--limit", "20",
                 "--json", "--cache-dir", str(tmp_path / "cache"), "--no-progress", "-k", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert set(data["results"]) == {"hybrid", "iterative", "multi-hop", "auto"}
    assert data["results"]["hybrid"]["hit@1"] == 1.0 and data["answerable"] == 2
    assert all("llm_calls_mean" in r and r["llm_calls_mean"] == 0.0 for r in data["results"].values())
    assert main(["eval", "--gold", str(gold), "--strategies", "hybrid,multi-hopp", "--cache-dir",
                 str(tmp_path / "cache"), "--no-progress"]) != 0
    assert "multi-hop" in capsys.readouterr().err  # the suggestion for the typo
