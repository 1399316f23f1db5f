"""`beleg ask`, `beleg chat` and `beleg eval --answers` end to end (offline, extractive)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from beleg.cli.main import main

Q = "How long does Ferrolink retry failed webhook deliveries?"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ask_human_output_shows_answer_then_sources(demo_kb, capsys) -> None:
    code, out, err = _run(capsys, "ask", Q, "--index", str(demo_kb.path))
    assert code == 0, err
    answer, _, sources = out.partition("Sources")
    assert "72 hours" in answer and "[S1]" in answer
    assert "service-contract-3.0.md" in sources and "version 3.0" in sources and "current" in sources
    assert "2026-01-15" in sources  # the source's date
    assert "verified" in out


def test_ask_json_refusal(demo_kb, capsys) -> None:
    code, out, _ = _run(capsys, "ask", "Does Ferrolink support MQTT clients?", "--index", str(demo_kb.path), "--json")
    data = json.loads(out)
    assert code == 0 and data["refused"] is True and data["citations"] == []
    assert data["answer"].startswith("The sources do not answer this.") and "MQTT" in data["answer"]


def test_ask_rejects_an_unreachable_llm_with_one_line(demo_kb, capsys) -> None:
    code, _, err = _run(capsys, "ask", Q, "--index", str(demo_kb.path), "--llm", "ollama:x",
                        "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-timeout", "0.5")
    assert code == 1 and err.startswith("beleg: error:") and "127.0.0.1:9" in err and len(err.strip().splitlines()) == 1


def test_chat_resolves_follow_ups(demo_kb, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("What is the retry window in Ferrolink 3.0?\nAnd in 2.4?\n/quit\n"))
    code, out, err = _run(capsys, "chat", "--index", str(demo_kb.path), "--json")
    assert code == 0, err
    first, second = (json.loads(line) for line in out.strip().splitlines())
    assert "72" in first["answer"].split("\n")[0]
    assert second["trace"]["target"]["version"] == "2.4" and "24" in second["answer"].split("\n")[0]
    assert second["trace"]["queries"][0].startswith("What is the retry window")
    assert second["trace"]["conversation"]["follow_up"] is True


def test_chat_asks_a_question_with_its_own_subject_alone(demo_kb, capsys, monkeypatch) -> None:
    # The 2.4 of the first question must not hold the next, unrelated one to 2.4.
    questions = "What is the retry window in Ferrolink 2.4?\nHow do I publish a message to a queue?\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(questions))
    code, out, err = _run(capsys, "chat", "--index", str(demo_kb.path), "--json")
    assert code == 0, err
    _, second = (json.loads(line) for line in out.strip().splitlines())
    assert second["trace"]["target"] == {"version": None, "origin": "none", "unknown": []}
    assert second["trace"]["queries"] == ["How do I publish a message to a queue?"]
    assert second["trace"]["conversation"]["follow_up"] is False


GOLD = """
version: 1
corpus: corpus
questions:
  - {id: a1, question: "How long are failed webhooks retried?", type: conflict, governing: contract.md,
     relevant: [{doc: contract.md, grade: 2}], answer: ["72 hours"]}
  - {id: a2, question: "What does error E-4012 mean?", type: identifier,
     relevant: [{doc: errors.md, grade: 2}], answer: ["signature"]}
  - {id: a3, question: "Does the service support MQTT clients?", type: unanswerable, relevant: []}
"""
DOCS = {
    "contract.md": "---\ntitle: Contract\nversion: '3.0'\nstatus: current\nauthority: contract\n---\n# Contract\n\n"
                   "## Retry window\n\nFailed webhook deliveries are retried for 72 hours after the first attempt.\n",
    "note.md": "---\ntitle: Support note\nversion: '3.0'\nstatus: current\nauthority: imported-note\n---\n# Note\n\n"
               "## Retries\n\nFailed webhooks are retried for 24 hours after the first attempt.\n",
    "errors.md": "---\ntitle: Errors\nstatus: current\nauthority: reference\n---\n# Errors\n\n## E-4012\n\n"
                 "E-4012 means the message signature did not match the signing secret.\n",
}


def test_eval_answers_on_a_small_gold_set(tmp_path: Path, capsys) -> None:
    (tmp_path / "corpus").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(GOLD, encoding="utf-8")
    code, out, err = _run(capsys, "eval", "--answers", "--gold", str(tmp_path / "gold.yaml"), "--json",
                          "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                          "--report", str(tmp_path / "answers.html"))
    assert code == 0, err
    s = json.loads(out)["summary"]
    assert s["n"] == 3 and s["answer_contains_gold"] == 1.0
    assert s["refusal_precision"] == 1.0 and s["refusal_recall"] == 1.0
    assert s["citation_validity"] == 1.0 and s["conflict_detection"] == 1.0 and s["governing_accuracy"] == 1.0
    assert s["leaks"] == 0
    assert "<html" in (tmp_path / "answers.html").read_text(encoding="utf-8")


def test_eval_answers_honours_index(tmp_path: Path, capsys, monkeypatch) -> None:
    """--answers --index answers from that index: nothing is re-ingested into the eval cache,
    so a corpus file that would fail to ingest there does not matter."""
    (tmp_path / "corpus").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(GOLD, encoding="utf-8")
    index = tmp_path / "idx"
    code, _, err = _run(capsys, "ingest", str(tmp_path / "corpus"), "--index", str(index), "--no-progress")
    assert code == 0, err
    (tmp_path / "corpus" / "broken.pdf").write_bytes(b"not a pdf")
    monkeypatch.setenv("BELEG_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = _run(capsys, "eval", "--answers", "--gold", str(tmp_path / "gold.yaml"), "--index", str(index),
                          "--no-progress")
    assert code == 0, err
    assert not (tmp_path / "cache" / "eval").exists()  # where a re-ingested corpus would go
    assert f"answers from the index {index}" in out
    withheld_row = next(line for line in out.splitlines() if line.startswith("withheld"))
    assert withheld_row.split()[1].isdigit() and "/" in withheld_row  # a count, with its share of refusals
    code, _, err = _run(capsys, "eval", "--answers", "--gold", str(tmp_path / "gold.yaml"), "--index", str(index),
                        "--versions", "v1,v2", "--no-progress")
    assert code == 1 and "one index version at a time" in err


def _quote_s1(messages) -> str:
    """An answering model that quotes the last sentence of the S1 source."""
    import re

    m = re.search(r'<source label="S1"[^>]*>\n(.*?)\n</source>', messages[-1].content, re.DOTALL)
    if m is None:
        return "The sources do not answer this."
    sentence = m.group(1).strip().splitlines()[-1].strip()
    return f'"{sentence}" [S1]'


def test_eval_answers_with_llm_and_judge_over_http(tmp_path: Path, capsys) -> None:
    from beleg.testing import FakeOpenAIServer

    (tmp_path / "corpus").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(GOLD, encoding="utf-8")
    with FakeOpenAIServer(responder=_quote_s1) as answers, \
            FakeOpenAIServer(responder=lambda m: '{"score": 0.75, "reason": "supported"}') as judge:
        code, out, err = _run(capsys, "eval", "--answers", "--gold", str(tmp_path / "gold.yaml"), "--json",
                              "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                              "--llm", "openai-compatible:answerer", "--llm-base-url", answers.base_url,
                              "--judge", "openai-compatible:judge", "--judge-base-url", judge.base_url)
    assert code == 0, err
    s = json.loads(out)["summary"]
    # 2 answerable questions call the model; the unanswerable one is refused before any call
    assert s["llm_calls"] == 2 and s["judge_calls"] > 0 and s["refusal_recall"] == 1.0
    assert s["judge_faithfulness"] == 0.75 and s["citation_validity"] == 1.0
    assert all(r.json["model"] == "answerer" for r in answers.requests)


def test_a_refusal_line_names_the_reason_once() -> None:
    from types import SimpleNamespace

    from beleg.cli.render import Style, verdict_line

    answer = SimpleNamespace(refused=True, withheld=False, trace={"decision": "no retrieved source mentions MQTT"})
    assert verdict_line(answer, Style(False)) == "(refused: no retrieved source mentions MQTT)"
    assert verdict_line(SimpleNamespace(refused=True, withheld=False, trace={}), Style(False)) == "(refused)"
    # A candidate found but not shown to answer is withheld, not "not covered".
    withheld = SimpleNamespace(refused=True, withheld=True, trace={"decision": "confidence 0.41 < 0.68"})
    assert verdict_line(withheld, Style(False)) == "(withheld: confidence 0.41 < 0.68)"


def test_eval_answers_with_a_verifier_over_http(tmp_path: Path, capsys) -> None:
    """--verifier: the extractive answers stay quotes; a verifier that copies an answer from
    the passage passes them, one that finds none withholds every one."""
    import re

    from beleg.answer.support import QUOTE_VERIFIER_SYSTEM
    from beleg.testing import FakeOpenAIServer

    (tmp_path / "corpus").mkdir()
    for name, text in DOCS.items():
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    (tmp_path / "gold.yaml").write_text(GOLD, encoding="utf-8")

    def copies_the_value(messages) -> str:  # the first "72 hours" / "signature" sentence it is shown
        passage = messages[-1].content.split("Passage:", 1)[1]
        m = re.search(r"retried for 72 hours|signature did not match", passage)
        return m.group(0) if m else "NONE"

    summaries = {}
    for name, responder in (("copies", copies_the_value), ("none", lambda m: "NONE")):
        with FakeOpenAIServer(responder=responder) as verifier:
            code, out, err = _run(capsys, "eval", "--answers", "--gold", str(tmp_path / "gold.yaml"), "--json",
                                  "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                                  "--verifier", "openai-compatible:checker", "--verifier-base-url",
                                  verifier.base_url)
        assert code == 0, err
        summaries[name] = json.loads(out)["summary"]
        # one call per candidate answer (the unanswerable question is refused before any)
        assert len(verifier.requests) == 2
        assert all(r.json["messages"][0]["content"] == QUOTE_VERIFIER_SYSTEM for r in verifier.requests)
    assert summaries["copies"]["answer_contains_gold"] == 1.0 and summaries["copies"]["llm_calls"] == 2
    assert summaries["none"]["answer_contains_gold"] == 0.0 and summaries["none"]["refusal_recall"] == 1.0
