"""Self-query with an LLM: proposals kept only when they are values the asker may see.

The model is a fake OpenAI server on localhost (beleg.testing), so the whole client path
runs; its replies are scripted per test, and the prompts it received are checked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import beleg
from beleg.answer.answerer import AnswerOptions
from beleg.backends.llms import load_llm
from beleg.cli.main import main
from beleg.errors import ConfigError
from beleg.ingest.pipeline import TextSource
from beleg.query.self_query import Constraint, Inferred, self_query_mode
from beleg.query.self_query_llm import (
    SYSTEM,
    ProposalError,
    Visible,
    check_proposal,
    merge,
    parse_reply,
    prompt_messages,
)
from beleg.strategies import Budget, run_strategy
from beleg.testing import FakeOpenAIServer, delay, status
from beleg.types import Principal

ACME = Principal(user="ann", tenant="acme", groups=("ops-acme",))
# Nothing in these words is a rule cue: no product name, no decimal, no status or language word.
VAGUE = "How does the release with two zones replicate?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    kb = beleg.open(tmp_path_factory.mktemp("sqllm") / "kb", embedder=embedder)
    kb.ingest_texts([
        TextSource("ferrolink-3.0.md", "# Replication\n\nFerrolink 3.0 replicates every queue to two zones.",
                   {"product": "ferrolink", "version": "3.0", "status": "current", "language": "en",
                    "date": "2026-01-15"}),
        TextSource("ferrolink-2.4.md", "# Replication\n\nFerrolink 2.4 replicates every queue to one zone.",
                   {"product": "ferrolink", "version": "2.4", "status": "historical", "language": "en",
                    "date": "2023-04-17"}),
        TextSource("ferrolink-2.4-de.md", "# Replikation\n\nFerrolink 2.4 repliziert jede Queue in eine Zone.",
                   {"product": "ferrolink", "version": "2.4", "status": "historical", "language": "de",
                    "date": "2023-04-17"}),
        TextSource("geheimdb.md", "# Replication\n\nGeheimdb 7.7 replicates its ledger to the vault cluster.",
                   {"product": "geheimdb", "version": "7.7", "status": "draft", "language": "en",
                    "date": "2025-06-01", "tenant": "acme", "acl": ["ops-acme"]}),
    ], progress=False)
    yield kb
    kb.close()


def fake_llm(server: FakeOpenAIServer) -> Any:
    return load_llm("openai-compatible:fake", base_url=server.base_url, backoff_base_s=0, max_retries=0)


def prompt_of(server: FakeOpenAIServer, n: int = 0) -> str:
    return "\n".join(m.content for m in server.llm.calls[n])


def applied(inferred: Inferred) -> dict[str, tuple[Any, str, str]]:
    return {c.key: (c.value, c.applied_as, c.origin) for c in inferred.applied()}


# ---------------------------------------------------------------------- good proposals
def test_good_proposals_are_applied_and_the_prompt_lists_visible_values(kb: Any) -> None:
    with FakeOpenAIServer(['{"version": "3.0", "language": "EN"}']) as server:
        got = kb.infer_constraints(VAGUE, llm=fake_llm(server))
        prompt = prompt_of(server)
    rules = kb.infer_constraints(VAGUE)
    assert rules.applied() == ()  # the rules read nothing here: the model's reading is all there is
    # "EN" is the visible "en" after case folding; stored spellings are what is applied
    # what only the model read is a boost: it reorders and never removes a document
    assert applied(got) == {"version": ("3.0", "boost", "llm"), "language": ("en", "boost", "llm")}
    assert got.method == "llm" and got.llm.outcome == "used" and got.llm.calls == 1
    # the prompt offers the visible values, most frequent first, and the visible date span
    assert '- version: "2.4", "3.0"' in prompt and '- language: "en", "de"' in prompt
    assert "2023-04-17 to 2026-01-15" in prompt and VAGUE in prompt
    hits = kb.search(VAGUE, k=3, self_query=got)
    assert hits[0].metadata["version"] == "3.0" and len(hits) == 3  # the others stay, lower
    assert {h.source for h in hits if h.scores["boosted"]} == {"ferrolink-3.0.md"}
    trace = got.to_json()
    assert trace["llm"]["proposed"] == {"version": "3.0", "language": "EN"}
    assert any(c["origin"] == "llm" for c in trace["constraints"])
    assert "self-query: version = 3.0 proposed by the LLM (boost, applied)" in got.notes()


def test_a_date_range_is_accepted_as_iso_dates_only(kb: Any) -> None:
    with FakeOpenAIServer(['```json\n{"date": {"from": "2025-01-01"}}\n```']) as server:
        got = kb.infer_constraints(VAGUE, llm=fake_llm(server))
    assert [(c.key, c.op, c.value, c.applied_as) for c in got.applied()] == [("date", ">=", "2025-01-01", "boost")]
    hits = kb.search(VAGUE, k=5, self_query=got)
    assert {h.source for h in hits if h.scores["boosted"]} == {"ferrolink-3.0.md"} and len(hits) == 3


# ---------------------------------------------------------------------- invented values
def test_invented_values_and_unknown_fields_are_rejected_with_a_note(kb: Any) -> None:
    reply = json.dumps({"product": "acmedb", "version": ["9.9", "3.0"], "status": "German",
                        "colour": "blue", "language": "German", "date": {"from": "last year"}})
    with FakeOpenAIServer([reply]) as server:
        got = kb.infer_constraints(VAGUE, llm=fake_llm(server))
    # only the one proposed value that a visible document has survives
    assert applied(got) == {"version": ("3.0", "boost", "llm")}
    rejected = {(r.field, str(r.value)) for r in got.llm.rejected}
    assert rejected == {("product", "acmedb"), ("version", "9.9"), ("status", "German"), ("colour", "blue"),
                        ("language", "German"), ("date", "{'from': 'last year'}")}
    notes = "\n".join(got.notes())
    assert "llm self-query: rejected product 'acmedb': no document you may see has this product" in notes
    assert "llm self-query: rejected colour 'blue': not a field self-query reads" in notes


# ---------------------------------------------------------------------- invalid replies, failures
@pytest.mark.parametrize("reply", ["Sure! The version is 3.0.", '{"version": "3.0"} because it says so',
                                   '["3.0"]', "", '{"version": NaN}'])
def test_invalid_json_uses_the_rules_and_says_so(kb: Any, reply: str) -> None:
    question = "How does Ferrolink 2.4 replicate?"
    with FakeOpenAIServer([reply]) as server:
        got = kb.infer_constraints(question, llm=fake_llm(server))
    assert got.constraints == kb.infer_constraints(question).constraints  # exactly the rules' reading
    assert got.llm.outcome == "rules used" and "llm self-query: invalid JSON, rules used" in got.notes()
    assert got.to_json()["llm"]["usage"]["calls"] == 1


def test_a_failed_or_timed_out_call_uses_the_rules_and_says_so(kb: Any) -> None:
    question = "How does Ferrolink 2.4 replicate?"
    with FakeOpenAIServer(['{"version": "3.0"}'], failures=[status(500)]) as server:
        got = kb.infer_constraints(question, llm=fake_llm(server))
    assert got.constraints == kb.infer_constraints(question).constraints
    assert any(n.startswith("llm self-query: the LLM call failed (") and n.endswith(", rules used")
               for n in got.notes())
    with FakeOpenAIServer(responder=lambda m: '{"version": "3.0"}') as server:
        slow = load_llm("openai-compatible:fake", base_url=server.base_url, timeout_s=0.2, max_retries=0)
        server.fail(delay(2.0))
        got = kb.infer_constraints(question, llm=slow)
    assert got.llm.outcome == "rules used" and "rules used" in got.notes()[-1]


# ---------------------------------------------------------------------- restricted values
def test_a_restricted_value_is_never_offered_nor_accepted(kb: Any) -> None:
    question = "How does the ledger product replicate?"
    with FakeOpenAIServer(['{"product": "geheimdb", "version": "7.7", "status": "draft"}'] * 2) as server:
        public = kb.infer_constraints(question, llm=fake_llm(server))
        tenant = kb.infer_constraints(question, ACME, llm=fake_llm(server))
        public_prompt, tenant_prompt = prompt_of(server, 0), prompt_of(server, 1)
    for hidden in ("geheimdb", "7.7", "draft", "2025-06-01", "acme", "tenant", "acl"):
        assert hidden not in public_prompt.casefold(), hidden
    assert public.applied() == ()
    # the hidden product gets the same reason as one that exists nowhere: nothing to probe
    reasons = {r.field: r.reason for r in public.llm.rejected}
    assert reasons["product"] == "no document you may see has this product"
    assert all(h.metadata.get("tenant") is None for h in kb.search(question, k=10, self_query=public))
    # the tenant sees its own values offered, and gets them
    assert '"geheimdb"' in tenant_prompt and '"7.7"' in tenant_prompt
    assert applied(tenant)["product"] == ("geheimdb", "boost", "llm")


# ---------------------------------------------------------------------- merging
def test_the_rules_win_where_they_decided() -> None:
    rules = Inferred((Constraint("version", "=", "2.4", "Ferrolink 2.4", "boost"),
                      Constraint("language", "=", "", "in English", "filter", "skipped", "a translation")))
    proposed = [Constraint("version", "=", "3.0", "", "boost", origin="llm"),
                Constraint("language", "=", "en", "", "filter", origin="llm"),
                Constraint("status", "=", "current", "", "filter", origin="llm")]
    constraints, agreed, overruled = merge(rules, proposed)
    assert [(c.key, c.value, c.status) for c in constraints] == [
        ("version", "2.4", "applied"), ("language", "", "skipped"),
        # a status the model adds yields to the version, as the rules' does
        ("status", "current", "skipped")]
    assert {r.field: r.reason for r in overruled} == {
        "version": "the rules read version = 2.4 from 'Ferrolink 2.4'; the rules win",
        "language": "the rules left it out on purpose: a translation"}
    same = merge(rules, [Constraint("version", "=", "2.4", "", "boost", origin="llm")])
    assert same[1] == ["version = 2.4"] and same[2] == []
    unknown = merge(Inferred((), unknown_versions=("9.9",)), [Constraint("version", "=", "3.0", "", "boost",
                                                                         origin="llm")])
    assert unknown[0] == () and "which no document you may see has" in unknown[2][0].reason


def test_parsing_is_strict_and_values_match_exactly_after_normalisation() -> None:
    assert parse_reply('  {"version": 2.10}  ') == {"version": "2.10"}  # the number's own text, not 2.1
    for bad in ('{"version": "3.0"}\n{"status": "current"}', "version: 3.0", "null", '```\n{"a": 1}\n``` ok'):
        with pytest.raises(ProposalError):
            parse_reply(bad)
    visible = Visible.of([{"product": "Straße-Dienst", "version": "2.10"}, {"language": "de"}])
    found, rejected = check_proposal({"product": "STRASSE-DIENST", "version": "２.１０", "language": "Deutsch"},
                                     visible)
    # NFKC turns full-width digits into ASCII and case folding ß into ss; "Deutsch" is not "de"
    assert [(c.key, c.value) for c in found] == [("product", "Straße-Dienst"), ("version", "2.10")]
    assert [(r.field, r.value) for r in rejected] == [("language", "Deutsch")]


def test_a_local_model_is_decoded_under_the_self_query_schema() -> None:
    import jsonschema_rs

    from beleg.backends.llms.formats import SELF_QUERY_SCHEMA, format_for

    fmt = format_for(prompt_messages(VAGUE, Visible.of([{"version": "3.0"}])))
    assert fmt is not None and fmt.name == "self-query" and fmt.json_schema == SELF_QUERY_SCHEMA
    validator = jsonschema_rs.Draft202012Validator(SELF_QUERY_SCHEMA)
    assert validator.is_valid({}) and validator.is_valid({"version": ["2.4", "3.0"], "date": {"from": "2025-01-01"}})
    assert not validator.is_valid({"tenant": "acme"}) and not validator.is_valid({"version": {"x": 1}})


# ---------------------------------------------------------------------- modes, budgets, costs
def test_modes() -> None:
    assert self_query_mode(True, has_llm=True) == "rules" and self_query_mode(False, has_llm=True) == "off"
    assert self_query_mode("auto", has_llm=True) == "llm" and self_query_mode("auto", has_llm=False) == "rules"
    with pytest.raises(ConfigError, match="needs an LLM"):
        self_query_mode("llm", has_llm=False)
    with pytest.raises(ConfigError, match="not known"):
        self_query_mode("maybe", has_llm=True)


def test_a_strategy_counts_the_call_in_its_budget(kb: Any) -> None:
    with FakeOpenAIServer(responder=lambda m: '{"version": "3.0"}') as server:
        run = run_strategy(kb, "hybrid", VAGUE, llm=fake_llm(server), self_query="llm")
        spent = run_strategy(kb, "hybrid", VAGUE, llm=fake_llm(server), self_query="auto",
                             budget=Budget(max_llm_calls=0))
        calls = len(server.requests)
    assert run.trace.llm_calls == 1 and run.trace.steps[0].name == "self-query"
    assert run.trace.self_query["method"] == "llm" and run.hits[0].metadata["version"] == "3.0"
    assert calls == 1  # the spent budget stopped the second call before it was sent
    assert "llm self-query: the LLM call failed (LLM budget of 0 calls spent), rules used" in spent.trace.notes
    assert spent.hits  # the search itself ran, with the rules' reading


def test_an_answer_counts_the_self_query_call(kb: Any) -> None:
    def responder(messages: Any) -> str:
        if messages[0].content == SYSTEM:  # the self-query prompt
            return '{"version": "3.0"}'
        return "Ferrolink 3.0 replicates every queue to two zones. [S1]"

    with FakeOpenAIServer(responder=responder) as server:
        llm = fake_llm(server)

        def ask(**options: Any) -> tuple[Any, int]:
            before = len(server.requests)
            # min_confidence 0: every answer is kept, so its trace is the one the costs were added to
            answer = kb.ask(VAGUE, llm=llm, options=AnswerOptions(min_confidence=0.0, **options))
            return answer, len(server.requests) - before

        auto, auto_calls = ask(self_query="auto")
        rules, rules_calls = ask()  # the Python API's default stays the rules
        planned, planned_calls = ask(self_query="llm", strategy="multi-query")
    assert auto.trace["self_query"]["method"] == "llm" and auto.trace["llm"]["self_query_calls"] == 1
    assert auto.trace["llm"]["calls"] == auto_calls  # every request the answer made is counted
    assert rules.trace["self_query"]["method"] == "rules" and rules.trace["llm"]["calls"] == rules_calls
    # through a strategy the call is one of the strategy's, counted once in the answer
    assert planned.trace["strategy"]["steps"][0]["name"] == "self-query"
    assert planned.trace["strategy"]["llm"]["calls"] >= 1 and planned.trace["llm"]["calls"] == planned_calls


def test_a_refusal_for_low_confidence_keeps_the_costs_and_the_strategy_trace(kb: Any) -> None:
    def responder(messages: Any) -> str:
        return '{"version": "3.0"}' if messages[0].content == SYSTEM else "Two zones. [S1]"

    with FakeOpenAIServer(responder=responder) as server:
        strict = AnswerOptions(self_query="llm", min_confidence=1.0)
        plain = kb.ask(VAGUE, llm=fake_llm(server), options=strict)
        planned = kb.ask(VAGUE, llm=fake_llm(server), options=AnswerOptions(self_query="llm", min_confidence=1.0,
                                                                            strategy="multi-query"))
    assert plain.refused and plain.trace["llm"]["self_query_calls"] == 1 and "latency_ms" in plain.trace
    assert planned.refused and planned.trace["strategy"]["steps"][0]["name"] == "self-query"


# ---------------------------------------------------------------------- the command line
def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_self_query_option(kb: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BELEG_LLM", "BELEG_LLM_BASE_URL", "BELEG_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    index = str(kb.root)
    code, out, _ = _run(capsys, "search", VAGUE, "--index", index, "--json", "--self-query", "off")
    assert code == 0 and json.loads(out)["self_query"]["enabled"] is False
    code, out, _ = _run(capsys, "search", VAGUE, "--index", index, "--json")
    assert json.loads(out)["self_query"]["method"] == "rules"  # no LLM configured: the rules
    code, _, err = _run(capsys, "search", VAGUE, "--index", index, "--self-query", "llm")
    assert code != 0 and "needs an LLM" in err
    with pytest.raises(SystemExit):
        main(["search", VAGUE, "--index", index, "--self-query", "llm", "--no-self-query"])
    capsys.readouterr()
    with FakeOpenAIServer(responder=lambda m: '{"version": "3.0"}') as server:
        llm_args = ("--llm", "openai-compatible:fake", "--llm-base-url", server.base_url)
        code, out, _ = _run(capsys, "search", VAGUE, "--index", index, "--json", *llm_args)
        data = json.loads(out)
        assert data["self_query"]["method"] == "llm" and data["trace"]["llm"]["calls"] == 1
        assert data["hits"][0]["metadata"]["version"] == "3.0"
        code, out, _ = _run(capsys, "search", VAGUE, "--index", index, "--json", "--self-query", "rules", *llm_args)
        assert json.loads(out)["self_query"]["method"] == "rules"
        code, out, _ = _run(capsys, "ask", VAGUE, "--index", index, "--json", *llm_args)
        trace = json.loads(out)["trace"]
        assert trace["self_query"]["method"] == "llm" and trace["llm"]["self_query_calls"] == 1
