"""Sentence vectors kept in the index (beleg.answer.sentence_vectors): written at ingest with
``sentence_vectors=True`` or lazily by the first answer, reused by every later answer and
process, never bumping the generation, erased with their document."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import beleg
from beleg.answer.sentence_vectors import chunk_passages, passage_key, sentence_passage
from beleg.errors import ConfigError

CONTRACT = ("---\ntitle: Service contract\n---\n# Service contract\n\n## Retries\n\n"
            "Failed webhook deliveries are retried for 72 hours. After that window the message is dropped.\n\n"
            "## Support\n\nSupport answers tickets within one business day. Urgent tickets are answered in 4 hours.\n")
RUNBOOK = ("# Relay runbook\n\nRestart the relay service after every configuration change. "
           "The relay listens on port 7443 by default.\n")
QUESTIONS = ("How long are failed webhook deliveries retried?", "Which port does the relay listen on?",
             "How fast does support answer urgent tickets?")


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "contract.md").write_text(CONTRACT, encoding="utf-8")
    (root / "runbook.md").write_text(RUNBOOK, encoding="utf-8")
    return root


def _rows(kb, doc_id: str | None = None) -> int:
    if doc_id is None:
        return int(kb.catalog.db.execute("SELECT COUNT(*) FROM sentence_vectors").fetchone()[0])
    return int(kb.catalog.db.execute("SELECT COUNT(*) FROM sentence_vectors WHERE doc_id = ?", (doc_id,)).fetchone()[0])


def _answers(kb) -> list[tuple[str, tuple[tuple[int, int], ...]]]:
    out = []
    for q in QUESTIONS:
        a = kb.ask(q)
        out.append((a.answer, tuple((c.start, c.end) for c in a.citations)))
    return out


def test_ingest_with_sentence_vectors_lets_answers_embed_no_sentence(corpus: Path, tmp_path: Path, embedder) -> None:
    with beleg.open(tmp_path / "lazy", embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        assert _rows(kb) == 0  # off by default: nothing at ingest
        lazy = _answers(kb)
        assert kb.sentence_vectors.stats["embedded"] > 0
    with beleg.open(tmp_path / "eager", embedder=embedder) as kb:
        report = kb.ingest([str(corpus)], progress=False, sentence_vectors=True)
        assert report.sentence_vectors == _rows(kb) > 0 and report.to_json()["sentence_vectors"] == report.sentence_vectors
        assert report.embedded == kb.status()["chunks"]  # `embedded` still counts chunk vectors only
        eager = _answers(kb)
        stats = kb.sentence_vectors.stats
        # Every sentence an answer scored was stored at ingest under the key the answerer computes.
        assert stats["embedded"] == 0 and stats["stored_hits"] > 0, stats
    assert eager == lazy


def test_lazy_vectors_are_stored_once_and_reused_by_another_process(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        generation = kb.catalog.generation
        first = _answers(kb)
        stored = kb.sentence_vectors.stats["stored"]
        assert stored > 0 and _rows(kb) == stored
        assert kb.catalog.generation == generation  # storing changes no search result: no new generation
    with beleg.open(index, embedder=embedder) as kb:  # a new process: empty memory, the store is on disk
        assert _answers(kb) == first
        assert kb.sentence_vectors.stats["embedded"] == 0
        assert kb.sentence_vectors.stats["stored_hits"] == stored


def test_a_busy_write_lock_keeps_vectors_in_memory_and_stores_them_later(corpus: Path, tmp_path: Path,
                                                                         embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        other = sqlite3.connect(kb.catalog.path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # an ingest committing in another process
        try:
            a = kb.ask(QUESTIONS[0])
            assert not a.refused
            assert kb.sentence_vectors.stats["store_skipped"] == 1 and _rows(kb) == 0
        finally:
            other.execute("ROLLBACK")
            other.close()
        kb.ask(QUESTIONS[1])  # the next answer stores its own vectors and the ones kept back
        assert kb.sentence_vectors.stats["stored"] == kb.sentence_vectors.stats["embedded"] == _rows(kb)


def test_a_lazy_write_never_brings_back_vectors_of_a_deleted_document(corpus: Path, tmp_path: Path,
                                                                      embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        hit = kb.search("relay port", mode="bm25", k=1)[0]
        with beleg.open(index, embedder=embedder) as writer:  # erased while an answer was computing
            writer.delete([hit.doc_id])
        vector = embedder.embed_documents(["Relay runbook: The relay listens on port 7443 by default."])[0]
        key = passage_key(embedder.fingerprint, "Relay runbook: The relay listens on port 7443 by default.")
        assert kb.catalog.add_sentence_vectors_lazily([(hit.doc_id, hit.chunk_id, key, vector)]) == 0
        assert _rows(kb, hit.doc_id) == 0


def test_replacing_or_deleting_a_document_drops_its_sentence_vectors(corpus: Path, tmp_path: Path,
                                                                     embedder) -> None:
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False, sentence_vectors=True)
        runbook = kb.search("relay", mode="bm25", k=1)[0].doc_id
        before = kb.catalog.db.execute("SELECT key FROM sentence_vectors WHERE doc_id = ?", (runbook,)).fetchall()
        assert len(before) == 2
        (corpus / "runbook.md").write_text(RUNBOOK.replace("7443", "9443"), encoding="utf-8")
        report = kb.ingest([str(corpus)], progress=False, sentence_vectors=True)
        after = kb.catalog.db.execute("SELECT key FROM sentence_vectors WHERE doc_id = ?", (runbook,)).fetchall()
        # The unchanged sentence keeps its vector (reused, not embedded again); the edited one is new.
        assert report.sentence_vectors == 1 and len(after) == 2 and len(set(before) & set(after)) == 1
        kb.delete([runbook])
        assert _rows(kb, runbook) == 0 and _rows(kb) > 0


def test_passages_and_keys() -> None:
    assert sentence_passage(("Guide", "Retries"), "Doc", "It retries.") == "Retries: It retries."
    assert sentence_passage((), "Doc", "It retries.") == "Doc: It retries."
    text = "Short one.\n\nFailed deliveries are retried for 72 hours.\n\n```\ncode block here\n```\n"
    assert chunk_passages(text, ("Retries",), "Doc") == ["Retries: Failed deliveries are retried for 72 hours."]
    # The same passage under another embedder is another key: a vector is never reused across models.
    assert passage_key("model-a", "x: y z w") != passage_key("model-b", "x: y z w")


def test_sentence_vectors_at_ingest_over_postgresql_is_a_clear_error(monkeypatch, tmp_path: Path, embedder) -> None:
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb, monkeypatch.context() as patch:
        patch.setattr(kb, "catalog", object())  # what the PostgreSQL backend has: no SQLite catalog
        with pytest.raises(ConfigError, match="PostgreSQL"):
            kb.ingest([str(tmp_path)], progress=False, sentence_vectors=True)
        assert kb.sentence_vectors.catalog is None  # memory only there


def test_cli_ingest_sentence_vectors(corpus: Path, tmp_path: Path, capsys) -> None:
    import json

    from beleg.cli.main import main

    assert main(["ingest", str(corpus), "--index", str(tmp_path / "kb"), "--sentence-vectors", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["sentence_vectors"] > 0
    with beleg.open(tmp_path / "kb") as kb:
        assert _rows(kb) == report["sentence_vectors"]
