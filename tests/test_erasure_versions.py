"""Erasure covers every index version; an edited-away name leaves every byte; a reindex build
locks out writes it would miss, and a killed build does not lock the index forever."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_erasure import (  # the same byte scan as plain erasure
    NAME,
    PUBLIC,
    SECRET,
    _file_bytes,
    _traces,
    store_sentence_vectors,
)

import beleg
from beleg.cli.main import main
from beleg.index import persisted_view, versions
from beleg.index.catalog import Catalog
from beleg.index.config import IndexConfig
from beleg.index.versions import IndexBusyError
from beleg.ingest.chunking import ChunkingConfig

PRIVATE = (f"---\ntitle: Incident with {NAME}\ntenant: alpha\nacl: [ops-alpha]\n---\n# Incident\n\n"
           f"Escalations go to {NAME}; the vault phrase is {SECRET}.\n\n## Aftermath\n\n"
           + " ".join(f"Review item {i} of the relay incident with the platform team." for i in range(40)) + "\n")
INSIDER = beleg.Principal("u", "alpha", ("ops-alpha",))
WINDOW = IndexConfig(ChunkingConfig("window", 60, 10))


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(PUBLIC, encoding="utf-8")
    (root / "incident.md").write_text(PRIVATE, encoding="utf-8")
    return root


def _secret_doc(kb: Any) -> str:
    hits = kb.search(SECRET, mode="bm25", k=5, principal=INSIDER)
    assert hits, "the secret document must be indexed first"
    return hits[0].doc_id


def _reindexed(index: Path, corpus: Path, embedder: Any) -> tuple[str, str, str, list[bytes]]:
    """Ingest, build a window-chunked version beside the live one; (doc id, old, new, patterns of both)."""
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
        store_sentence_vectors(kb, doc_id)
        patterns = _traces(kb, doc_id)
        old = kb.config.index_version
        new = kb.reindex(WINDOW, progress=False)["version"]
    with beleg.open(index, embedder=embedder, version=new) as kb:
        assert kb.search(SECRET, mode="bm25", k=5, principal=INSIDER), "the new version must hold the document"
        store_sentence_vectors(kb, doc_id)  # the new version's store fills lazily too
        patterns += _traces(kb, doc_id)[7:]  # its vectors differ: other chunks
    return doc_id, old, new, list(dict.fromkeys(patterns))


def _view_traces(folders: list[Path], doc_id: str) -> list[bytes]:
    """What the persisted search views of ``folders`` hold of the document: its vectors' int8
    codes and its chunk ids (its float32 vectors, source and id are in ``_traces`` already).
    The views must exist, so the byte scan after the deletion covers their files too."""
    out = []
    for folder in folders:
        files = persisted_view.view_files(folder)
        assert files, f"{folder} has no persisted search view to scan"
        catalog = Catalog(folder / "catalog.sqlite")
        try:
            view = persisted_view.open_view(catalog, folder, 384)
        finally:
            catalog.close()
        positions = [i for i, d in enumerate(view.chunk_doc.tolist()) if view.doc_ids[d] == doc_id]
        assert positions, "the view must hold the document before the deletion"
        data = b"".join(p.read_bytes() for p in files)
        for i in positions:
            code = bytes(view.codes[i].tobytes())
            assert code in data and view.chunk_ids[i].encode() in data
            out += [code, view.chunk_ids[i].encode()]
    return out


def test_delete_erases_every_byte_from_every_version(corpus: Path, tmp_path: Path, embedder, capsys) -> None:
    index = tmp_path / "kb"
    doc_id, old, new, patterns = _reindexed(index, corpus, embedder)
    new_folder = versions.version_dir(index, new)
    assert SECRET.encode() in _file_bytes(new_folder) and SECRET.encode() in (index / "catalog.sqlite").read_bytes()
    patterns += _view_traces([index, new_folder], doc_id)
    assert main(["delete", "--index", str(index), "--doc", doc_id, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["documents"] == 1 and result["deleted"] == [doc_id] and result["complete"] is True
    assert {v["version"]: v["documents"] for v in result["versions"]} == {old: 1, new: 1}
    after = _file_bytes(index)
    for p in patterns:
        assert p not in after, f"{p[:40]!r} survived the deletion in some version"
    # Switching to the version that was not live does not bring the document back.
    assert main(["switch", new, "--index", str(index)]) == 0
    capsys.readouterr()
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.config.index_version == new
        assert kb.search(SECRET, mode="bm25", k=5, principal=INSIDER) == []
        assert kb.catalog.document(doc_id) is None


def test_delete_by_filter_matching_in_any_version_erases_from_all(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    doc_id, old, new, _ = _reindexed(index, corpus, embedder)
    # Re-tag the document in the live version only: the filter matches there, not in the other.
    text = (corpus / "incident.md").read_text(encoding="utf-8").replace("tenant: alpha", "tenant: alpha\nproject: zeta")
    (corpus / "incident.md").write_text(text, encoding="utf-8")
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.ingest([str(corpus)], progress=False).count("updated") == 1
        result = kb.delete(where="project = zeta")
    assert result["deleted"] == [doc_id]
    for version in (old, new):
        with beleg.open(index, embedder=embedder, version=version) as kb:
            assert kb.catalog.document(doc_id) is None and kb.status()["documents"] == 1


def test_edited_away_name_leaves_every_byte_before_the_delete(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
        assert "quintessa" in kb.catalog.all_terms()
        assert NAME.encode() in _file_bytes(index)
        (corpus / "incident.md").write_text(PRIVATE.replace(NAME, "the duty officer"), encoding="utf-8")
        assert kb.ingest([str(corpus)], progress=False).count("updated") == 1
        terms = kb.catalog.all_terms()
        assert "quintessa" not in terms and "marlowe" not in terms, "terms only the old text used must go"
        assert "relay" in terms and "vault" in terms
        after_edit = _file_bytes(index)
        for p in (NAME.encode(), b"Quintessa", b"quintessa", b"marlowe", b"Marlowe"):
            assert p not in after_edit, f"{p!r} survived the edit"
        assert kb.search("duty officer", mode="bm25", k=3, principal=INSIDER)[0].doc_id == doc_id
        patterns = _traces(kb, doc_id)
        kb.delete([doc_id])
    after = _file_bytes(index)
    for p in patterns:
        assert p not in after


def test_sync_deletion_reaches_every_version(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    doc_id, old, new, patterns = _reindexed(index, corpus, embedder)
    (corpus / "incident.md").unlink()
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.ingest([str(corpus)], progress=False, sync=True).deleted == 1
    after = _file_bytes(index)
    for p in patterns:
        assert p not in after


class _WritesDuringBuild:
    """An embedder that, while a reindex embeds, tries the writes the build would miss."""

    def __init__(self, inner: Any, index: Path, corpus: Path, doc_id: str) -> None:
        self._inner, self.index, self.corpus, self.doc_id = inner, index, corpus, doc_id
        self.refusals: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        if not self.refusals:
            (self.corpus / "guide.md").write_text(PUBLIC + "\nAlso check the fuse box.\n", encoding="utf-8")
            with beleg.open(self.index, embedder=self._inner) as other:
                for name, call in (("ingest", lambda: other.ingest([str(self.corpus)], progress=False)),
                                   ("delete", lambda: other.delete([self.doc_id])),
                                   ("switch", lambda: versions.switch(self.index, "live")),
                                   ("gc", lambda: versions.gc(self.index))):
                    try:
                        call()
                    except IndexBusyError as exc:
                        self.refusals[name] = str(exc)
                    else:
                        self.refusals[name] = "ALLOWED"
        return self._inner.embed_documents(texts)


def test_writes_are_refused_while_a_reindex_builds(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
        spy = _WritesDuringBuild(embedder, index, corpus, doc_id)
        new = kb.reindex(WINDOW, progress=False, embedder=spy)["version"]
    assert set(spy.refusals) == {"ingest", "delete", "switch", "gc"}
    for name, message in spy.refusals.items():
        assert message != "ALLOWED", f"{name} was allowed during the build"
        assert f"reindex to version {new}" in message and "since" in message, message
    assert not (index / versions.LOCK_FILE).exists(), "the build releases its lock"
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.catalog.document(doc_id) is not None  # the refused delete changed nothing
        assert kb.ingest([str(corpus)], progress=False).count("updated") == 1  # after the build: allowed


def test_a_killed_build_does_not_lock_the_index_forever(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    (index / versions.LOCK_FILE).write_text(json.dumps(
        {"purpose": "reindex", "version": "abc123", "pid": int(gone.stdout), "host": socket.gethostname(),
         "since": "2026-01-01T00:00:00", "token": "dead"}), encoding="utf-8")
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.delete([doc_id])["deleted"] == [doc_id]
    assert not (index / versions.LOCK_FILE).exists()


def test_a_running_build_in_another_process_is_reported(corpus: Path, tmp_path: Path, embedder) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        doc_id = _secret_doc(kb)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        import socket

        (index / versions.LOCK_FILE).write_text(json.dumps(
            {"purpose": "reindex", "version": "abc123", "pid": holder.pid, "host": socket.gethostname(),
             "since": "2026-01-01T00:00:00", "token": "other"}), encoding="utf-8")
        with beleg.open(index, embedder=embedder) as kb:
            with pytest.raises(IndexBusyError, match="reindex to version abc123 is running .* since 2026-01-01"):
                kb.delete([doc_id])
            with pytest.raises(IndexBusyError, match=f"pid {holder.pid}"):
                kb.ingest([str(corpus)], progress=False)
            assert kb.catalog.document(doc_id) is not None
    finally:
        holder.kill()
        holder.wait()


def test_switch_to_a_version_behind_live_warns_and_reindex_catches_up(corpus: Path, tmp_path: Path, embedder,
                                                                     capsys) -> None:
    index = tmp_path / "kb"
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress=False)
        new = kb.reindex(WINDOW, progress=False)["version"]
        (corpus / "guide.md").write_text(PUBLIC + "\nAlso check the fuse box.\n", encoding="utf-8")
        kb.ingest([str(corpus)], progress=False)
        assert versions.drift(kb.path, versions.version_dir(index, new)).counts() == {"missing": 0, "changed": 1, "extra": 0}
        kb.reindex(WINDOW, progress=False)  # resumes: only the changed document is rebuilt
        assert versions.drift(kb.path, versions.version_dir(index, new)).counts() == {"missing": 0, "changed": 0, "extra": 0}
        (corpus / "guide.md").write_text(PUBLIC, encoding="utf-8")
        kb.ingest([str(corpus)], progress=False)
    assert main(["switch", new, "--index", str(index)]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "1 differ" in err and len(err.strip().splitlines()) == 1


#: Erases the documents a filter matches, and dies (as kill -9 would) after the first version.
DIES_BETWEEN_VERSIONS = """
import os, sys
import beleg
from beleg.index.embedded import EmbeddedStore
erase = EmbeddedStore.erase
def erase_then_die(self, doc_ids):
    erase(self, doc_ids)
    os._exit(9)
EmbeddedStore.erase = erase_then_die
beleg.open(sys.argv[1], create=False).delete(where=sys.argv[2])
"""


def _erasure_killed_between_versions(index: Path, corpus: Path, embedder: Any) -> tuple[str, str, list[bytes]]:
    doc_id, _, new, patterns = _reindexed(index, corpus, embedder)
    died = subprocess.run([sys.executable, "-c", DIES_BETWEEN_VERSIONS, str(index), "tenant = alpha"],
                          capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.catalog.document(doc_id) is None  # the live version is erased first
        assert kb.status()["erasure_pending"]["doc_ids"] == [doc_id]
    assert SECRET.encode() in _file_bytes(index / "versions" / new)  # not reached
    return doc_id, new, patterns


def test_an_interrupted_erasure_is_shown_refuses_switch_and_is_finished(corpus: Path, tmp_path: Path, embedder,
                                                                       capsys) -> None:
    index = tmp_path / "kb"
    doc_id, new, patterns = _erasure_killed_between_versions(index, corpus, embedder)
    assert main(["status", "--index", str(index)]) == 0
    assert "UNFINISHED: 1 document(s)" in capsys.readouterr().out
    assert main(["switch", new, "--index", str(index), "--allow-document-loss"]) == 1
    assert "beleg delete --finish" in capsys.readouterr().err
    with pytest.raises(versions.ErasurePendingError, match="interrupted"):
        versions.switch(index, new, allow_document_loss=True)

    assert main(["delete", "--finish", "--index", str(index)]) == 0
    assert "finished the interrupted erasure of 1 document(s)" in capsys.readouterr().out
    data = _file_bytes(index)
    assert [p for p in patterns if p in data] == []  # the journal, with the id, is gone too
    assert main(["switch", new, "--index", str(index)]) == 0
    with beleg.open(index, embedder=embedder) as kb:
        assert kb.catalog.document(doc_id) is None and kb.status()["erasure_pending"] is None


def test_the_next_ingest_finishes_an_interrupted_erasure_and_gc_keeps_nothing_for_it(corpus: Path, tmp_path: Path,
                                                                                    embedder, capsys) -> None:
    index = tmp_path / "kb"
    doc_id, new, patterns = _erasure_killed_between_versions(index, corpus, embedder)
    more = tmp_path / "more"
    more.mkdir()
    (more / "note.md").write_text("# Note\n\nThe relay restarts at night.\n", encoding="utf-8")
    with beleg.open(index, embedder=embedder) as kb:
        kb.ingest([str(more)], progress=False)
        assert kb.status()["erasure_pending"] is None
    data = _file_bytes(index)
    assert [p for p in patterns if p in data] == []

    # gc does not keep a version for a document an unfinished erasure removes.
    _erasure_killed_between_versions(tmp_path / "kb2", corpus, embedder)
    assert main(["gc", "--index", str(tmp_path / "kb2")]) == 0
    assert "removed 1 version(s)" in capsys.readouterr().out
