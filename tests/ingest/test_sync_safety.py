"""Ingest and ``--sync`` never silently replace, erase or keep the wrong documents.

A moved file keeps its document only when it is plausibly the same file (same content, same
path below the same root folder name), whichever root it was first ingested through; another
file of the same name is refused. A sync that would delete every document of a path (an
unmounted share) deletes nothing without ``allow_delete_all``. A file emptied keeps its old
document on a plain ingest, and the report says so; ``--sync`` deletes it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _by_name(report) -> dict:  # type: ignore[no-untyped-def]
    return {Path(f.source).name: f for f in report.files}


def test_a_file_of_the_same_folder_name_does_not_replace_a_moved_document(kb, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "teamA" / "docs" / "README.md", "# Team A\n\nTeam A deploys with the grommetwagon.\n")
    _write(tmp_path / "teamB" / "docs" / "README.md", "# Team B\n\nTeam B deploys with the snorkelbus.\n")
    (doc_id,) = [f.doc_id for f in kb.ingest(["teamA/docs"], progress=False).files]
    assert kb.ingest(["teamB/docs"], progress=False).files[0].status == "failed"
    (tmp_path / "teamA").rename(tmp_path / "teamA-archive")
    refused = kb.ingest(["teamB/docs"], progress=False).files[0]
    assert refused.status == "failed", refused
    assert "content differs" in refused.reason and f"beleg delete --doc {doc_id}" in refused.reason
    assert "grommetwagon" in kb.catalog.document(doc_id).text
    # The file itself, moved, keeps its document.
    moved = kb.ingest(["teamA-archive/docs"], progress=False)
    assert [(f.status, f.doc_id) for f in moved.files] == [("updated", doc_id)] and moved.embedded == 0
    assert kb.catalog.location(doc_id) == os.path.realpath(tmp_path / "teamA-archive" / "docs" / "README.md")
    assert kb.status()["documents"] == 1


def test_a_moved_file_edited_on_the_way_is_refused_with_how_to_resolve(kb, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    note = _write(tmp_path / "old" / "corpus" / "n.md", "# N\n\nThe first text.\n")
    (doc_id,) = [f.doc_id for f in kb.ingest(["old/corpus"], progress=False).files]
    shutil.move(tmp_path / "old", tmp_path / "new")
    _write(tmp_path / "new" / "corpus" / "n.md", "# N\n\nThe edited text.\n")
    refused = kb.ingest(["new/corpus"], progress=False).files[0]
    assert refused.status == "failed" and f"{os.path.realpath(note)}, which is gone" in refused.reason
    kb.delete([doc_id])
    assert kb.ingest(["new/corpus"], progress=False).files[0].status == "added"


@pytest.mark.parametrize("first", ["base/en", "base/en/a.md"])
def test_one_file_is_one_document_whichever_root_it_was_first_ingested_through(kb, tmp_path: Path, monkeypatch,
                                                                              first: str) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "base" / "en" / "a.md", "# A\n\nThe alpha note about quokkas.\n")
    _write(tmp_path / "base" / "de" / "b.md", "# B\n\nDie Beta-Notiz über Wombats.\n")
    (a_id,) = [f.doc_id for f in kb.ingest([first], progress=False).files]
    assert {f.doc_id for f in kb.ingest(["base"], progress=False).files} >= {a_id}
    (tmp_path / "moved").mkdir()
    shutil.move(tmp_path / "base", tmp_path / "moved" / "base")
    report = kb.ingest(["moved/base"], progress=False, sync=True)
    assert _by_name(report)["a.md"].doc_id == a_id and report.count("added") == 0 and report.embedded == 0
    assert sorted(kb.catalog.locations().values()) == sorted(
        os.path.realpath(tmp_path / "moved" / "base" / p) for p in ("de/b.md", "en/a.md"))
    kb.delete([a_id])
    assert kb.search("quokkas", mode="bm25", self_query=False) == []
    # Moved back and ingested through the subfolder again: still the one document.
    shutil.move(tmp_path / "moved" / "base", tmp_path / "base")
    kb.ingest(["base"], progress=False)
    (b_id,) = [d for d, loc in kb.catalog.locations().items() if loc.endswith("b.md")]
    shutil.move(tmp_path / "base", tmp_path / "moved" / "base")
    assert [(f.status, f.doc_id) for f in kb.ingest(["moved/base/de"], progress=False).files] == [("updated", b_id)]
    assert kb.status()["documents"] == 2


def test_sync_of_a_path_whose_files_are_all_gone_deletes_nothing_unless_allowed(kb, tmp_path: Path,
                                                                                monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a", "b", "c"):
        _write(tmp_path / "c2" / f"{name}.md", f"# {name}\n\nNote {name} about herons.\n")
    kb.ingest(["c2"], progress=False)
    (tmp_path / "c2").rename(tmp_path / "c2.hidden")  # an unmounted share: an empty mount point
    (tmp_path / "c2").mkdir()
    report = kb.ingest(["c2"], progress=False, sync=True)
    assert report.deleted == 0 and kb.status()["documents"] == 3
    (held,) = report.failures
    assert held.source == "c2" and "all 3 documents" in held.reason and "--allow-delete-all" in held.reason
    # New files alone do not make it look mounted: the documents that were there would still all go.
    _write(tmp_path / "c2" / "d.md", "# d\n\nA new note.\n")
    report = kb.ingest(["c2"], progress=False, sync=True)
    assert report.deleted == 0 and report.count("added") == 1 and len(report.failures) == 1
    # Normal deletions go on: the share is back, with one file fewer (and without the new one).
    shutil.rmtree(tmp_path / "c2")
    (tmp_path / "c2.hidden").rename(tmp_path / "c2")
    (tmp_path / "c2" / "a.md").unlink()
    report = kb.ingest(["c2"], progress=False, sync=True)
    assert [Path(f.source).name for f in report.files if f.status == "deleted"] == ["a.md", "d.md"]
    assert not report.failures
    # Removed on purpose: deleted when asked.
    shutil.rmtree(tmp_path / "c2")
    (tmp_path / "c2").mkdir()
    report = kb.ingest(["c2"], progress=False, sync=True, allow_delete_all=True)
    assert report.deleted == 2 and not report.failures and kb.status()["documents"] == 0


@pytest.mark.parametrize("blank", ["", "---\ntitle: Emptied\n---\n"])
def test_an_emptied_file_keeps_its_document_and_says_so_and_sync_deletes_it(kb, tmp_path: Path, blank: str) -> None:
    em = tmp_path / "em"
    emptied = _write(em / "e.md", "# E\n\nThe secret codename is bluebottle.\n")
    _write(em / "f.md", "# F\n\nAn unrelated note.\n")
    doc_id = _by_name(kb.ingest([str(em)], progress=False))["e.md"].doc_id
    emptied.write_text(blank, encoding="utf-8")
    skipped = _by_name(kb.ingest([str(em)], progress=False))["e.md"]
    assert skipped.status == "skipped" and skipped.kept == [doc_id]
    assert "the previously indexed version is kept" in skipped.reason
    assert f"beleg delete --doc {doc_id}" in skipped.reason
    assert kb.search("bluebottle", mode="bm25", self_query=False)
    report = kb.ingest([str(em)], progress=False, sync=True)
    entry = _by_name(report)["e.md"]
    assert (entry.status, entry.doc_id, report.deleted) == ("deleted", doc_id, 1)
    assert "--sync deleted the previously indexed version" in entry.reason
    assert kb.search("bluebottle", mode="bm25", self_query=False) == []
    assert kb.status()["documents"] == 1


def test_a_folder_whose_files_were_all_emptied_is_held_like_a_vanished_one(kb, tmp_path: Path) -> None:
    em = tmp_path / "em"
    for name in ("a", "b"):
        _write(em / f"{name}.md", f"# {name}\n\nNote {name}.\n")
    kb.ingest([str(em)], progress=False)
    for name in ("a", "b"):
        (em / f"{name}.md").write_bytes(b"")  # a copy job that truncated everything
    report = kb.ingest([str(em)], progress=False, sync=True)
    assert report.deleted == 0 and kb.status()["documents"] == 2 and len(report.failures) == 1


def test_a_failing_file_says_its_stored_version_is_kept(kb, tmp_path: Path) -> None:
    latin = tmp_path / "corpus" / "de" / "latin1.txt"
    latin.parent.mkdir(parents=True)
    latin.write_bytes("Die Größe der Übergabe ist geprüft.\n".encode("latin-1"))
    (doc_id,) = [f.doc_id for f in kb.ingest([str(latin)], encoding="latin-1", progress=False).files]
    latin.write_bytes(b"\x00\x01 binary now")  # the encoding is remembered; this cannot be read at all
    failed = kb.ingest([str(tmp_path / "corpus")], progress=False).files[0]
    assert failed.status == "failed" and failed.kept == [doc_id]
    assert failed.reason.endswith(f"the previously indexed version is kept (document {doc_id})")


def test_the_cli_exits_nonzero_when_sync_holds_a_path_and_takes_the_option_only_with_sync(
        tmp_path: Path, monkeypatch, capsys) -> None:
    from beleg.cli.main import main

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "share" / "a.md", "# A\n\nA note about pelicans.\n")
    index = str(tmp_path / "idx")
    assert main(["ingest", "share", "--index", index, "--no-progress"]) == 0
    assert main(["ingest", "share", "--index", index, "--allow-delete-all", "--no-progress"]) == 1
    assert "--allow-delete-all only lets --sync" in capsys.readouterr().err
    shutil.rmtree(tmp_path / "share")
    (tmp_path / "share").mkdir()
    assert main(["ingest", "share", "--index", index, "--sync", "--no-progress"]) == 1
    assert "--allow-delete-all" in capsys.readouterr().out
    assert main(["ingest", "share", "--index", index, "--sync", "--allow-delete-all", "--json", "--no-progress"]) == 0
    assert '"deleted": 1' in capsys.readouterr().out


def test_a_moved_file_is_reported_with_where_it_was(kb, tmp_path: Path, monkeypatch) -> None:
    from beleg.cli.render import Style, render_ingest

    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "kb1" / "docs" / "m.md", "# M\n\nA note that moves.\n")
    kb.ingest(["kb1/docs"], progress=False)
    (tmp_path / "moved").mkdir()
    shutil.move(tmp_path / "kb1", tmp_path / "moved" / "kb1")
    report = kb.ingest(["moved/kb1/docs"], progress=False)
    was = os.path.realpath(tmp_path / "kb1" / "docs" / "m.md")
    assert [(f.status, f.moved_from) for f in report.files] == [("updated", was)]
    assert report.to_json()["files"][0]["moved_from"] == was
    assert f"moved from {was}" in render_ingest(report, Style(False))
    assert kb.ingest(["moved/kb1/docs"], progress=False).files[0].moved_from is None
