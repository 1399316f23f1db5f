"""Deletion and sync leave nothing of a document anywhere in the index directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import beleg
from beleg.cli.main import main

SECRET = "Zorbulax-Geheimnis-4711"
NAME = "Quintessa Marlowe-Brandt"
PUBLIC = "# Relay guide\n\nRestart the relay service after every configuration change.\n"
PRIVATE = (f"---\ntitle: Incident with {NAME}\ntenant: alpha\nacl: [ops-alpha]\n---\n# Incident\n\n"
           f"Escalations go to {NAME}; the vault phrase is {SECRET}.\n\n## Aftermath\n\n"
           "Quarterly review of the relay incident with the platform team.\n")


def _file_bytes(index: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(index.rglob("*")) if p.is_file())


def _traces(kb, doc_id: str) -> list[bytes]:
    """Byte patterns that would betray the document: text, name, source, terms, vectors."""
    doc = kb.catalog.document(doc_id)
    patterns = [SECRET.encode(), SECRET.lower().encode(), NAME.encode(), b"quintessa", b"zorbulax",
                doc.source.encode(), doc.doc_id.encode()]
    for (vector,) in kb.catalog.db.execute(
            "SELECT e.vector FROM chunks c JOIN embeddings e ON e.embed_hash = c.embed_hash WHERE c.doc_id = ?",
            (doc_id,)):
        patterns.append(bytes(vector[:32]))
    for (vector,) in kb.catalog.db.execute("SELECT vector FROM sentence_vectors WHERE doc_id = ?", (doc_id,)):
        patterns.append(bytes(vector[:32]))  # the answerer's stored sentence vectors (beleg.answer.sentence_vectors)
    return patterns


def store_sentence_vectors(kb, doc_id: str) -> None:
    """Answer a question about the document, so its sentence vectors are stored (lazily) for the scan."""
    kb.ask("Who do escalations go to?", principal=beleg.Principal("u", "alpha", ("ops-alpha",)))
    stored = kb.catalog.db.execute("SELECT COUNT(*) FROM sentence_vectors WHERE doc_id = ?", (doc_id,)).fetchone()[0]
    assert stored > 0, "the answer must have stored the document's sentence vectors"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(PUBLIC, encoding="utf-8")
    (root / "incident.md").write_text(PRIVATE, encoding="utf-8")
    return root


def _secret_doc(kb) -> str:
    hits = kb.search(SECRET, mode="bm25", k=5, principal=beleg.Principal("u", "alpha", ("ops-alpha",)))
    assert hits, "the secret document must be indexed first"
    return hits[0].doc_id


def test_delete_by_id_erases_every_trace(corpus: Path, tmp_path: Path, embedder, capsys) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
        store_sentence_vectors(kb, doc_id)
        patterns = _traces(kb, doc_id)
    before = _file_bytes(index)
    assert all(p in before for p in patterns[:3]), "the scan must see the document before deletion"
    assert main(["delete", "--index", str(index), "--doc", doc_id, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["documents"] == 1 and result["chunks"] >= 1 and result["vectors"] >= 1 and result["terms"] >= 3
    assert result["complete"] is True and "checkpoint" not in result
    after = _file_bytes(index)
    for p in patterns:
        assert p not in after, f"{p[:40]!r} survived the deletion"
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.search(SECRET, mode="bm25", k=5, principal=beleg.Principal("u", "alpha", ("ops-alpha",))) == []
        assert kb.search("relay", mode="hybrid", k=5)[0].source.endswith("guide.md")


def test_delete_by_filter_and_unknown_ids(corpus: Path, tmp_path: Path, embedder) -> None:
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        result = kb.delete(["nope"], where="tenant = alpha")
        assert result["documents"] == 1 and result["not_found"] == ["nope"]
        assert kb.status()["documents"] == 1
    with pytest.raises(beleg.ConfigError):
        beleg.open(tmp_path / "kb", embedder=embedder).delete()


def test_sync_removes_vanished_files_and_their_traces(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False, sentence_vectors=True)  # stored at ingest this time
        patterns = _traces(kb, _secret_doc(kb))
        assert len(patterns) > 7 + kb.catalog.db.execute(
            "SELECT COUNT(DISTINCT embed_hash) FROM chunks WHERE doc_id = ?", (_secret_doc(kb),)).fetchone()[0]
        (corpus / "incident.md").unlink()
        plain = kb.ingest([str(corpus)], progress=False)
        assert plain.deleted == 0 and kb.status()["documents"] == 2  # without --sync nothing is removed
        report = kb.ingest([str(corpus)], progress=False, sync=True)
        assert report.deleted == 1 and report.to_json()["deleted"] == 1
        assert [f.status for f in report.files] == ["unchanged", "deleted"]
        assert report.embedded == 0
    after = _file_bytes(index)
    for p in patterns:
        assert p not in after


def test_sync_keeps_documents_outside_the_given_paths(corpus: Path, tmp_path: Path, embedder) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Note\n\nA note about relays and queues.\n", encoding="utf-8")
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(corpus), str(other)], progress=False)
        report = kb.ingest([str(corpus)], progress=False, sync=True)
        assert report.deleted == 0 and kb.status()["documents"] == 3


def test_changed_document_replaces_old_chunks_and_vectors(corpus: Path, tmp_path: Path, embedder) -> None:
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        n_vectors = kb.status()["embeddings"]
        (corpus / "guide.md").write_text(PUBLIC.replace("configuration change", "firmware upgrade"), encoding="utf-8")
        report = kb.ingest([str(corpus)], progress=False)
        assert report.count("updated") == 1 and report.embedded == 1
        assert kb.search("configuration change", mode="bm25", k=5) == []
        assert kb.status()["embeddings"] == n_vectors  # the old text's vector went with it
