"""Every file is isolated: any exception while discovering, reading, parsing, chunking or
analysing one file is that file's ``failed`` entry; the rest of the run is committed and
nothing already indexed changes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from beleg.errors import ConfigError, FilterError
from beleg.ingest import discover as discover_module
from beleg.ingest import pipeline
from beleg.ingest.metadata import parse_assignments
from beleg.ingest.pipeline import TextSource
from beleg.ingest.readers.markdown import MarkdownReader


def doc(title: str, body: str) -> str:
    return f"---\ntitle: {title}\nlanguage: en\n---\n# {title}\n\n{body}\n"


@pytest.fixture()
def src(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "first.md").write_text(doc("First", "The relay restarts after error E-7001."), encoding="utf-8")
    return folder


def by_name(report) -> dict[str, pipeline.FileResult]:
    return {Path(f.source).name: f for f in report.files}


def test_an_unexpected_reader_exception_fails_only_that_file(kb, src: Path, monkeypatch) -> None:
    assert kb.ingest([str(src)], progress=False).count("added") == 1
    (src / "alias.md").write_text(doc("Alias", "POISON front matter alias."), encoding="utf-8")
    (src / "second.md").write_text(doc("Second", "The broker drains queue Q-7002."), encoding="utf-8")
    real_read = MarkdownReader.read

    def read(self, data, path, encoding=None):  # a reader bug it does not anticipate
        if b"POISON" in data:
            raise RecursionError("maximum recursion depth exceeded while constructing a Python object")
        return real_read(self, data, path, encoding)

    monkeypatch.setattr(MarkdownReader, "read", read)
    report = kb.ingest([str(src)], progress=False)
    files = by_name(report)
    assert files["alias.md"].status == "failed"
    assert files["alias.md"].reason.startswith("internal error in read: RecursionError: maximum recursion")
    assert "\n" not in files["alias.md"].reason
    assert files["second.md"].status == "added" and files["first.md"].status == "unchanged"
    assert {Path(h.source).name for h in kb.search("E-7001 Q-7002", mode="bm25", k=5)} == {"first.md", "second.md"}


def test_a_lone_surrogate_in_metadata_fails_its_file_not_the_batch(kb, src: Path) -> None:
    """"\\ud800" in YAML is a str Python holds but UTF-8 cannot store: it used to pass every
    per-file check and break the batch's commit (a traceback, every file of the run lost)."""
    (src / "bad.md").write_text('---\nnote: "\\ud800"\n---\nSome body.\n', encoding="utf-8")
    (src / "nested.md").write_text('---\ntags: {"x\\udc80": [1]}\n---\nOther body.\n', encoding="utf-8")
    (src / "key.md").write_text('---\n"x\\udc00": 1\n---\nKey body.\n', encoding="utf-8")
    (src / "second.md").write_text(doc("Second", "The broker drains queue Q-7002."), encoding="utf-8")
    report = kb.ingest([str(src)], progress=False)
    files = by_name(report)
    assert files["bad.md"].status == "failed" and "\\ud800" in files["bad.md"].reason
    assert files["key.md"].status == "failed"
    json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")  # every reason can be printed
    assert files["nested.md"].status == "failed" and "'tags'" in files["nested.md"].reason
    assert files["second.md"].status == "added" and files["first.md"].status == "added"
    assert [Path(h.source).name for h in kb.search("Q-7002", mode="bm25", k=5)] == ["second.md"]
    with pytest.raises(ConfigError, match="--meta: 'owner'"):
        parse_assignments(["owner=J\udcf6rg"])  # an undecodable byte in the command line


def test_an_analysis_error_fails_one_document_not_its_batch(kb, src: Path, monkeypatch) -> None:
    (src / "bad.md").write_text(doc("Bad", "POISON for the analyzer."), encoding="utf-8")
    (src / "third.md").write_text(doc("Third", "Webhook W-7003 retries."), encoding="utf-8")
    real_analyze = pipeline.analyze

    def analyze(text: str, language: str):
        if "POISON" in text:
            raise ValueError("unsupported character class")
        return real_analyze(text, language)

    monkeypatch.setattr(pipeline, "analyze", analyze)
    report = kb.ingest([str(src)], progress=False)  # all three fall into one commit batch
    files = by_name(report)
    assert files["bad.md"].status == "failed"
    assert files["bad.md"].reason == "internal error in analysis: ValueError: unsupported character class"
    assert files["first.md"].status == files["third.md"].status == "added"
    assert kb.status()["documents"] == 2


def test_undecodable_file_name_is_stored_printable(kb, src: Path) -> None:
    name = os.fsdecode(b"caf\xe9-notes.md")  # latin-1 bytes: not UTF-8
    (src / name).write_text(doc("Cafe", "Espresso machine E-7004 descaling."), encoding="utf-8")
    report = kb.ingest([str(src)], progress=False)
    assert report.count("failed") == 0, report.failures
    hit = kb.search("E-7004", mode="bm25", k=1)[0]
    assert hit.source.endswith("caf\\xe9-notes.md") and hit.source.isprintable()
    # --sync knows the file is still there, though its stored name is an escaped form.
    again = kb.ingest([str(src)], progress=False, sync=True)
    assert again.deleted == 0 and again.count("unchanged") == 2


def test_file_symlink_loop_fails_alone(kb, src: Path) -> None:
    os.symlink(src / "loop.md", src / "loop.md")
    report = kb.ingest([str(src)], progress=False)
    files = by_name(report)
    assert files["loop.md"].status == "failed" and files["first.md"].status == "added"
    # Named directly, the loop is reported too, and the run goes on.
    report = kb.ingest([str(src / "loop.md"), str(src / "first.md")], progress=False)
    assert [f.status for f in report.files] == ["failed", "unchanged"]


def test_sync_keeps_documents_under_a_folder_it_cannot_list(kb, src: Path, monkeypatch) -> None:
    (src / "locked").mkdir()
    (src / "locked" / "inner.md").write_text(doc("Inner", "Inner runbook R-7005."), encoding="utf-8")
    assert kb.ingest([str(src)], progress=False).count("added") == 2
    real_walk = os.walk

    def walk(top, topdown=True, onerror=None, followlinks=False):  # as for a folder without read permission
        for root, dirs, files in real_walk(top, topdown, onerror, followlinks):
            if "locked" in dirs:
                dirs.remove("locked")
                if onerror is not None:
                    onerror(PermissionError(13, "Permission denied", os.path.join(root, "locked")))
            yield root, dirs, files

    monkeypatch.setattr(discover_module.os, "walk", walk)
    report = kb.ingest([str(src)], progress=False, sync=True)
    assert report.deleted == 0
    failed = report.failures
    assert len(failed) == 1 and failed[0].source.endswith("locked") and "Permission denied" in failed[0].reason
    assert kb.search("R-7005", mode="bm25", k=1)[0].source.endswith("inner.md")


@pytest.mark.parametrize("nesting", ["(" * 300 + "status = current" + ")" * 300, "not " * 300 + "status = current"])
def test_deeply_nested_filter_is_a_clear_error(kb, src: Path, nesting: str) -> None:
    kb.ingest([str(src)], progress=False)
    for call in (lambda: kb.search("relay", mode="bm25", where=nesting),
                 lambda: kb.delete(where=nesting),
                 lambda: kb.ask("What restarts the relay?", where=nesting)):
        with pytest.raises(FilterError, match="nests deeper than"):
            call()
    assert kb.status()["documents"] == 1


def test_filter_on_a_non_scalar_value_never_raises(kb) -> None:
    kb.ingest_texts([TextSource("mapped", "Owner map for relay R-7006.", {"language": "en", "owner": {"team": "a"}},
                                "Mapped", "mapped"),
                     TextSource("listed", "Owner list for relay R-7006.", {"language": "en", "owner": ["a", "b"]},
                                "Listed", "listed")], progress=False)
    ids = lambda where: {h.doc_id for h in kb.search("R-7006", mode="bm25", k=5, where=where)}  # noqa: E731
    assert ids("owner = a") == {"listed"}  # list membership; a mapping equals nothing
    assert ids("owner != a") == {"mapped"}
    assert ids("owner > b") == set()
