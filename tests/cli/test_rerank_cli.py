"""`search`/`ask --rerank`: a missing model is one clear error, never a silent no-op."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import beleg
from beleg.cli.main import main
from beleg.ingest.pipeline import TextSource


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder) -> Path:
    path = tmp_path_factory.mktemp("rerank") / "kb"
    with beleg.open(path, embedder=embedder) as kb:
        kb.ingest_texts([TextSource(f"d{i}.md", f"# Part {i}\n\nWebhook deliveries are retried for {i} hours.",
                                    {"title": f"D{i}"}) for i in range(3)], progress=False)
    return path


@pytest.mark.parametrize("command", ["search", "ask"])
@pytest.mark.parametrize("spec, says", [("/no/such/model-dir", "does not exist"),
                                        ("cross-encoder:/no/such/dir", "does not exist"),
                                        ("llm", "needs an LLM")])
def test_missing_reranker_is_one_clear_error(index: Path, capsys, command: str, spec: str, says: str) -> None:
    code = main([command, "webhook retries", "--index", str(index), "--rerank", spec])
    _, err = capsys.readouterr()
    assert code != 0 and says in err and len(err.strip().splitlines()) == 1


def test_candidates_without_rerank_is_an_error(index: Path, capsys) -> None:
    code = main(["search", "webhook retries", "--index", str(index), "--candidates", "10"])
    assert code != 0 and "--rerank" in capsys.readouterr().err


def test_bi_encoder_rerank_scores_every_candidate(index: Path, capsys, monkeypatch, embedder) -> None:
    monkeypatch.setattr("beleg.kb.KnowledgeBase.embedder", property(lambda self: embedder))
    code = main(["search", "webhook retries", "--index", str(index), "--rerank", "bi-encoder", "--candidates", "3",
                 "--json", "--no-self-query"])
    out, err = capsys.readouterr()
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits and all("rerank" in h["scores"] for h in hits)
