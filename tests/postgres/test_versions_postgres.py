"""Blue/green versions as schemas: reindex builds beside the live schema, switch is one
transaction that the next opener sees, delete reaches every version, gc drops the old ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

import beleg
from beleg.cli.main import main
from beleg.index.config import IndexConfig
from beleg.index.postgres import versions as pg_versions
from beleg.index.versions import ErasurePendingError
from beleg.ingest.chunking import ChunkingConfig
from tests.postgres.test_cli_postgres import NORDWIND, PUBLIC

WINDOW = IndexConfig(ChunkingConfig("window", 12, 2))


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {"text": out}


def test_reindex_switch_delete_gc(tmp_path: Path, pg_location: str, postgres_url: str, capsys, monkeypatch) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "errors.md").write_text(PUBLIC, encoding="utf-8")
    (tmp_path / "docs" / "nordwind.md").write_text(NORDWIND, encoding="utf-8")
    monkeypatch.setenv("BELEG_INDEX", pg_location)
    assert run(capsys, "init", "--index", f"{pg_location}&statistics=tenant", "--json")[0] == 0
    assert run(capsys, "ingest", str(tmp_path / "docs"), "--json", "--no-progress")[1]["added"] == 2
    before = run(capsys, "status", "--json")[1]

    code, built = run(capsys, "reindex", "--chunking", "window", "--max-tokens", "12", "--overlap", "2", "--json")
    assert code == 0 and built["documents"] == 2
    new_version = built["version"]
    status = run(capsys, "status", "--json")[1]
    assert status["index_version"] == before["index_version"]  # nothing changed for readers
    assert {v["version"]: v["live"] for v in status["versions"]} == {before["index_version"]: True, new_version: False}

    with beleg.open(pg_location, create=False) as old_kb:  # a process that opened before the switch
        assert main(["switch", new_version]) == 0
        capsys.readouterr()
        assert old_kb.config.index_version == before["index_version"]
    with beleg.open(pg_location, create=False) as kb:  # the next opener reads the new version
        assert kb.config.index_version == new_version
        assert kb.store.per_tenant_statistics  # the new version keeps the statistics scope
        assert kb.status()["chunks"] > before["chunks"]  # 12-word windows: more chunks
        hits = kb.search("E-4012 signature", mode="bm25", self_query=False)
        assert hits and Path(hits[0].source).stem == "errors"

    code, erased = run(capsys, "delete", "--where", "tenant = nordwind", "--json")
    assert code == 0 and len(erased["versions"]) == 2 and all(v["documents"] == 1 for v in erased["versions"])

    code, removed = run(capsys, "gc", "--json")
    assert [v["version"] for v in removed["removed"]] == [before["index_version"]]
    status = run(capsys, "status", "--json")[1]
    assert [v["version"] for v in status["versions"]] == [new_version] and status["documents"] == 1
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the version schema goes with its test
        conn.execute(f"DROP SCHEMA IF EXISTS {status['schema']} CASCADE")


def _two_versions(tmp_path: Path, pg_location: str, embedder, *, interrupted: bool) -> tuple[str, str]:
    """An index of two documents and a window-chunked version beside it (its build stopped at
    the first embedding, as Ctrl-C would, when ``interrupted``); (live version, other version)."""
    from tests.test_versions import _Interrupted

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "errors.md").write_text(PUBLIC, encoding="utf-8")
    (tmp_path / "docs" / "nordwind.md").write_text(NORDWIND, encoding="utf-8")
    with beleg.open(pg_location, embedder=embedder) as kb:
        kb.ingest([str(tmp_path / "docs")], progress=False)
        if interrupted:
            with pytest.raises(KeyboardInterrupt):
                kb.reindex(WINDOW, progress=False, embedder=_Interrupted(embedder))
        else:
            kb.reindex(WINDOW, progress=False)
        return kb.config.index_version, WINDOW.index_version


def test_an_interrupted_build_can_neither_go_live_nor_lose_documents_silently(tmp_path: Path, root, pg_location: str,
                                                                              embedder, capsys) -> None:
    old, new = _two_versions(tmp_path, pg_location, embedder, interrupted=True)
    status = run(capsys, "status", "--index", pg_location, "--json")[1]
    assert {v["version"]: (v["live"], v["documents"], v["complete"]) for v in status["versions"]} == {
        old: (True, 2, True), new: (False, 0, False)}

    assert main(["switch", new, "--index", pg_location]) == 1
    err = capsys.readouterr().err
    assert "never finished" in err and "lacks 2 document(s)" in err and "nordwind.md" in err, err
    assert main(["switch", new, "--index", pg_location, "--allow-document-loss"]) == 0
    assert f"beleg switch {old}" in capsys.readouterr().err
    assert main(["gc", "--index", pg_location, "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["removed"] == [] and json.loads(out)["kept"][0]["version"] == old
    assert "2 document(s) the live version lacks" in err

    assert main(["switch", old, "--index", pg_location]) == 0
    with beleg.open(pg_location, embedder=embedder) as kb:  # the advice: the same reindex again
        assert kb.reindex(WINDOW, progress=False)["documents"] == 2
    assert main(["switch", new, "--index", pg_location]) == 0
    assert not capsys.readouterr().err


#: Erases the documents a filter matches, and dies (as kill -9 would) after the first version.
DIES_BETWEEN_VERSIONS = """
import os, sys
import beleg
from beleg.index.postgres.store import PostgresStore
erase = PostgresStore.erase
def erase_then_die(self, doc_ids):
    erase(self, doc_ids)
    os._exit(9)
PostgresStore.erase = erase_then_die
beleg.open(sys.argv[1], create=False).delete(where=sys.argv[2])
"""


def test_an_interrupted_erasure_is_shown_refuses_switch_and_is_finished(tmp_path: Path, root, pg_location: str,
                                                                       embedder, capsys) -> None:
    old, new = _two_versions(tmp_path, pg_location, embedder, interrupted=False)
    died = subprocess.run([sys.executable, "-c", DIES_BETWEEN_VERSIONS, pg_location, "tenant = nordwind"],
                          capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    status = run(capsys, "status", "--index", pg_location, "--json")[1]
    assert status["documents"] == 1 and len(status["erasure_pending"]["doc_ids"]) == 1  # live first
    assert {v["version"]: v["documents"] for v in status["versions"]} == {old: 1, new: 2}  # not reached
    assert main(["status", "--index", pg_location]) == 0
    assert "UNFINISHED: 1 document(s)" in capsys.readouterr().out
    assert main(["switch", new, "--index", pg_location, "--allow-document-loss"]) == 1
    assert "beleg delete --finish" in capsys.readouterr().err
    with pytest.raises(ErasurePendingError, match="interrupted"):
        pg_versions.switch(root, new, allow_document_loss=True)

    assert main(["delete", "--finish", "--index", pg_location]) == 0
    assert "finished the interrupted erasure of 1 document(s)" in capsys.readouterr().out
    status = run(capsys, "status", "--index", pg_location, "--json")[1]
    assert status["erasure_pending"] is None and {v["documents"] for v in status["versions"]} == {1}
    assert main(["switch", new, "--index", pg_location]) == 0
