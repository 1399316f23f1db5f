"""`beleg eval` on BEIR, SQuAD and gold-set inputs: JSON contract, TREC runs, HTML report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beleg.cli.main import main

CORPUS = [
    ("d1", "Webhook retries", "Failed webhook deliveries are retried for 72 hours with exponential backoff."),
    ("d2", "Message size", "A message may be at most one megabyte including its attributes."),
    ("d3", "Signatures", "The X-Ferrolink-Signature header carries an HMAC of the raw request body."),
    ("d4", "Rate limits", "Error E-4290 means the request budget of the plan is exhausted."),
]
QUERIES = [("q1", "how long are webhooks retried"), ("q2", "maximum message size"),
           ("q3", "which header holds the HMAC signature"), ("q4", "what is error E-4290"),
           ("q5", "does it support MQTT")]
QRELS = [("q1", "d1", 2), ("q2", "d2", 1), ("q3", "d3", 2), ("q3", "d1", 0), ("q4", "d4", 1), ("q5", "d2", 0)]


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("beir")
    (root / "qrels").mkdir()
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": i, "title": t, "text": x}) for i, t, x in CORPUS), encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps({"_id": i, "text": x}) for i, x in QUERIES), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(f"{q}\t{d}\t{s}" for q, d, s in QRELS), encoding="utf-8")
    return root


def test_eval_beir_json_trec_and_report(beir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "--beir", str(beir), "--modes", "dense,bm25,hybrid", "-k", "3", "--json",
                 "--trec-out", str(tmp_path / "runs"), "--report", str(tmp_path / "r.html"),
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert set(data["results"]) == {"dense", "bm25", "hybrid"}
    for metrics in data["results"].values():
        assert {"hit@1", "hit@3", "precision@3", "recall@3", "mrr@3", "ndcg@3", "latency_ms_p50"} <= set(metrics)
    assert data["results"]["bm25"]["hit@1"] == 1.0  # every answerable query shares words with its document
    assert data["answerable"] == 4 and data["queries"] == 5  # q5 has no relevant document
    assert any("no reranker" in n for n in data["notes"])
    for mode in ("dense", "bm25", "hybrid"):
        run = next((tmp_path / "runs").glob(f"*.{mode}.trec")).read_text().splitlines()
        first = run[0].split()
        # Standard TREC run: qid Q0 docid rank score tag, with the dataset's own ids.
        assert len(first) == 6 and first[1] == "Q0" and first[2] in {"d1", "d2", "d3", "d4"} and first[3] == "1"
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<svg" in html and "hybrid" in html and "https://" not in html

    # A second run over the same corpus embeds nothing: the index comes from the cache.
    code = main(["eval", "--beir", str(beir), "--modes", "bm25", "--json", "--cache-dir", str(tmp_path / "cache"),
                 "--no-progress"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["index"]["documents"] == 4


def test_eval_squad_cross_lingual(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def squad(context: str, question: str) -> dict:
        return {"data": [{"title": "T", "paragraphs": [
            {"context": context, "qas": [{"id": "x1", "question": question, "answers": [{"text": "72", "answer_start": 0}]}]},
            {"context": "Completely unrelated text about gardening and roses.",
             "qas": [{"id": "x2", "question": "Which flowers grow here?", "answers": [{"text": "roses", "answer_start": 0}]}]},
        ]}]}

    en = tmp_path / "en.json"
    de = tmp_path / "de.json"
    en.write_text(json.dumps(squad("Failed deliveries are retried for 72 hours.", "How long are deliveries retried?")))
    de.write_text(json.dumps(squad("Fehlgeschlagene Zustellungen werden 72 Stunden wiederholt.", "Wie lange werden Zustellungen wiederholt?")))
    code = main(["eval", "--squad", str(en), "--queries-from", str(de), "--modes", "dense", "-k", "2", "--json",
                 "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["dataset"] == "squad:en<-de"
    assert data["results"]["dense"]["hit@1"] == 1.0


def test_eval_gold_set_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\ntitle: A\nlanguage: en\n---\n# A\n\n## Retries\n\nRetried for 72 hours.\n")
    (corpus / "b.md").write_text("---\ntitle: B\nlanguage: en\n---\n# B\n\nMessages are at most 1 MB.\n")
    gold = tmp_path / "gold.yaml"
    gold.write_text("version: 1\ncorpus: corpus\nquestions:\n"
                    "  - {id: g1, question: how long are retries, type: paraphrase, relevant: [{doc: a.md, section: Retries, grade: 2}]}\n"
                    "  - {id: g2, question: is there an SDK, type: unanswerable, relevant: []}\n")
    code = main(["eval", "--gold", str(gold), "--modes", "bm25,hybrid", "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0 and "bm25" in out and "hybrid" in out and "hit@1" in out


def test_eval_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--beir", str(tmp_path), "--no-progress"]) == 1
    assert "not a BEIR folder" in capsys.readouterr().err
    assert main(["eval", "--beir", str(tmp_path), "--modes", "hybird"]) == 1
    assert "Did you mean 'hybrid'" in capsys.readouterr().err
    assert main(["eval", "--beir", str(tmp_path), "--modes", "rerank"]) == 1
    assert "--reranker" in capsys.readouterr().err
