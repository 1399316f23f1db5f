"""Self-query applied: search, strategies, answers and the CLI on the demo corpus, and permissions."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import beleg
from beleg.cli.main import main
from beleg.ingest.pipeline import TextSource
from beleg.strategies import run_strategy
from beleg.types import Principal

QUESTION = "How long does Ferrolink 3.0 retry failed webhook deliveries?"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, out


def _versions(hits: list[Any]) -> list[str]:
    return [h.metadata.get("version") for h in hits]


# ---------------------------------------------------------------------- search
def test_a_named_version_ranks_its_documents_first(demo_kb: Any) -> None:
    words_only = demo_kb.search(QUESTION, k=10, self_query=False)
    assert _versions(words_only)[0] != "3.0"  # the 1.8/2.4 contracts lead on the words alone
    hits = demo_kb.search(QUESTION, k=10)
    assert _versions(hits)[0] == "3.0"
    assert hits[0].source.endswith(("service-contract-3.0.md", "release-notes/3.0.md"))
    # other versions are demoted, not dropped: the old contracts are still in the list
    assert {"1.8", "2.4"} <= set(_versions(hits))
    # the boost only reorders what the words-only search may return
    assert {h.metadata.get("tenant") for h in hits} == {None}


def test_cli_search_json_shows_what_was_inferred_and_no_self_query_restores_the_order(
        demo_kb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(demo_kb.root)
    code, out = _run(capsys, "search", QUESTION, "--index", idx, "--json", "-k", "5")
    assert code == 0
    data = json.loads(out)
    assert data["hits"][0]["metadata"]["version"] == "3.0"
    sq = data["self_query"]
    assert sq == data["trace"]["self_query"] and sq["enabled"] is True
    version = next(c for c in sq["constraints"] if c["key"] == "version")
    assert (version["value"], version["applied_as"], version["status"], version["words"]) == (
        "3.0", "boost", "applied", "Ferrolink 3.0")
    code, out = _run(capsys, "search", QUESTION, "--index", idx, "--json", "-k", "5", "--no-self-query")
    off = json.loads(out)
    assert off["self_query"]["enabled"] is False
    assert [h["chunk_id"] for h in off["hits"]] == [h.chunk_id for h in demo_kb.search(QUESTION, k=5,
                                                                                        self_query=False)]
    assert off["hits"][0]["metadata"]["version"] != "3.0"


def test_an_explicit_filter_wins_over_the_inferred_constraint(demo_kb: Any,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "search", QUESTION, "--index", str(demo_kb.root), "--json", "-k", "5",
                     "--filter", "version=2.4")
    data = json.loads(out)
    assert {h["metadata"]["version"] for h in data["hits"]} == {"2.4"}
    version = next(c for c in data["self_query"]["constraints"] if c["key"] == "version")
    assert version["status"] == "overridden"


def test_status_words_filter_and_say_so(demo_kb: Any) -> None:
    question = "What did the old versions say about the retry window?"
    hits = demo_kb.search(question, k=10)
    assert hits and {h.metadata["status"] for h in hits} == {"historical"}
    assert "current" in {h.metadata["status"] for h in demo_kb.search(question, k=10, self_query=False)}


# ---------------------------------------------------------------------- strategies and answers
@pytest.mark.parametrize("strategy", ["hybrid", "rewrite", "iterative", "auto"])
def test_every_strategy_gets_the_same_constraints(demo_kb: Any, strategy: str) -> None:
    result = run_strategy(demo_kb, strategy, QUESTION, k=10)
    trace = result.trace.to_json()
    assert any(c["key"] == "version" and c["value"] == "3.0" and c["status"] == "applied"
               for c in trace["self_query"]["constraints"])
    assert _versions(result.hits)[0] == "3.0"
    off = run_strategy(demo_kb, strategy, QUESTION, k=10, self_query=False)
    assert off.trace.to_json()["self_query"]["enabled"] is False


def test_answers_carry_the_self_query_trace(demo_kb: Any) -> None:
    from beleg.answer.answerer import AnswerOptions

    answer = demo_kb.ask(QUESTION)
    assert answer.trace["self_query"]["boost"] is not None
    assert answer.sources[0].version == "3.0" and not answer.refused
    off = demo_kb.ask(QUESTION, options=AnswerOptions(self_query=False))
    assert off.trace["self_query"]["enabled"] is False


def test_arithmetic_is_answered_without_retrieval(demo_kb: Any, capsys: pytest.CaptureFixture[str]) -> None:
    answer = demo_kb.ask("What is 12 multiplied by 8?")
    assert "96" in answer.answer and not answer.refused
    assert answer.citations == () and answer.sources == ()
    assert answer.trace["route"] == "no-retrieval"
    code, out = _run(capsys, "ask", "What is 12 multiplied by 8?", "--index", str(demo_kb.root), "--json")
    data = json.loads(out)
    assert code == 0 and data["answer"].endswith("= 96") and data["citations"] == [] and data["refused"] is False
    small = demo_kb.ask("wer bist du")
    assert small.sources == () and not small.refused and "Ich beantworte Fragen" in small.answer


def test_off_topic_questions_go_to_retrieval(demo_kb: Any) -> None:
    answer = demo_kb.ask("Who won the 2014 World Cup?")
    assert answer.trace.get("route") != "no-retrieval" and answer.refused


def test_chat_accepts_no_self_query(demo_kb: Any, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(QUESTION + "\n"))
    code, out = _run(capsys, "chat", "--index", str(demo_kb.root), "--json", "--no-self-query")
    assert code == 0 and json.loads(out.splitlines()[0])["trace"]["self_query"]["enabled"] is False


# ---------------------------------------------------------------------- permissions
ACME = Principal(user="ann", tenant="acme", groups=("ops-acme",))


@pytest.fixture(scope="module")
def tenant_kb(tmp_path_factory: pytest.TempPathFactory, embedder: Any):
    kb = beleg.open(tmp_path_factory.mktemp("sq") / "kb", embedder=embedder)
    kb.ingest_texts([
        TextSource("ferrolink-3.0.md", "# Replication\n\nFerrolink 3.0 replicates every queue to two zones.",
                   {"product": "ferrolink", "version": "3.0", "status": "current", "language": "en"}),
        TextSource("ferrolink-2.4.md", "# Replication\n\nFerrolink 2.4 replicates every queue to one zone.",
                   {"product": "ferrolink", "version": "2.4", "status": "historical", "language": "en"}),
        TextSource("geheimdb.md", "# Replication\n\nGeheimdb 7.7 replicates its ledger to the vault cluster.",
                   {"product": "geheimdb", "version": "7.7", "status": "draft", "language": "en",
                    "tenant": "acme", "acl": ["ops-acme"]}),
    ], progress=False)
    yield kb
    kb.close()


def test_a_hidden_product_or_version_named_in_a_question_is_never_inferred(tenant_kb: Any,
                                                                            capsys: pytest.CaptureFixture[str]
                                                                            ) -> None:
    hidden = tenant_kb.infer_constraints("How does Geheimdb version 7.7 replicate?")
    absent = tenant_kb.infer_constraints("How does Nichtda version 8.8 replicate?")
    # the hidden product and version are treated exactly like ones that exist nowhere
    assert hidden.applied() == () and absent.applied() == ()
    assert hidden.unknown_versions == ("7.7",) and absent.unknown_versions == ("8.8",)
    drafts = tenant_kb.infer_constraints("What do the drafts say about replication?")
    assert drafts.applied() == ()  # the only draft is the tenant's
    hits = tenant_kb.search("How does Geheimdb version 7.7 replicate in draft?", k=10)
    assert hits and all(h.metadata.get("tenant") is None for h in hits)
    code, out = _run(capsys, "search", "How does Geheimdb 7.7 replicate?", "--index", str(tenant_kb.root),
                     "--json")
    data = json.loads(out)
    assert "geheimdb" not in json.dumps(data["self_query"]).casefold()
    assert all(h["metadata"].get("tenant") is None for h in data["hits"])
    # the tenant itself gets its product and version
    inside = tenant_kb.infer_constraints("How does Geheimdb 7.7 replicate?", ACME)
    assert {c.key: c.value for c in inside.applied()} == {"product": "geheimdb", "version": "7.7"}
    assert tenant_kb.search("How does Geheimdb 7.7 replicate?", k=3, principal=ACME)[0].source == "geheimdb.md"


def test_a_principals_answer_never_uses_a_hidden_version(tenant_kb: Any) -> None:
    answer = tenant_kb.ask("How does Ferrolink version 7.7 replicate?")
    assert answer.refused and answer.trace["self_query"]["unknown"]["version"] == ["7.7"]
    assert all(s.hit.metadata.get("tenant") is None for s in answer.sources)


def test_cli_help_lists_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("search", "ask", "chat"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "--no-self-query" in capsys.readouterr().out


def test_xquad_like_index_without_metadata_infers_nothing(tmp_path: Path, embedder: Any) -> None:
    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    kb.ingest_texts([TextSource("p1", "The hymn was written in 1529 and translated into English in 1853.", {})],
                    progress=False)
    got = kb.infer_constraints("In which year was the hymn translated, since 1850, into English in version 2.0?")
    assert got.applied() == ()
    kb.close()
