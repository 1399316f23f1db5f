"""Wording of CLI output: no hits says what is true, a highlight marks the word only, one chunk is singular."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from beleg.cli.main import main
from beleg.cli.render import Style, snippet
from beleg.testing.embeddings_server import FakeEmbeddingsServer


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("search-output")
    (root / "docs").mkdir()
    (root / "docs" / "gex.md").write_text("---\ntitle: Gateway errors\nstatus: current\n---\n# Gateway errors\n\n"
                                          "A timeout at the gateway is reported as GEX-00007.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    with FakeEmbeddingsServer(dim=8) as server:
        for argv in (["init", "--index", str(root / "empty"), "--embedder", f"openai:m@{server.base_url}"],
                     ["init", "--index", str(root / "kb"), "--embedder", f"openai:m@{server.base_url}"],
                     ["ingest", str(root / "docs"), "--index", str(root / "kb"), "--no-progress"]):
            subprocess.run([sys.executable, "-m", "beleg", *argv], check=True, env=env, capture_output=True,
                           timeout=120)
    return root


def _search(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["search", *argv, "--mode", "bm25"]) == 0
    return capsys.readouterr().out.strip()


def test_no_hits_says_no_more_than_is_true(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kb = str(index / "kb")
    assert _search(capsys, "zeppelin", "--index", kb) == "No hits."
    assert _search(capsys, "timeout", "--index", kb, "--filter", "status=historical") == (
        "No hits. (Nothing matched among the documents your filters allow.)")
    assert _search(capsys, "timeout", "--index", kb, "--where", "status = 'draft'").startswith(
        "No hits. (Nothing matched among the documents your filters allow.)")
    assert _search(capsys, "timeout", "--index", str(index / "empty")) == (
        "No hits: the index is empty (add documents with 'beleg ingest PATH').")


def test_the_highlight_marks_the_word_not_the_full_stop_after_it(index: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = _search(capsys, "GEX-00007", "--index", str(index / "kb"))
    assert "reported as «GEX-00007»." in out, out
    assert snippet("See (E-4012), then retry.", "E-4012 retry", "en", Style(False)) == "See («E-4012»), then «retry»."


def test_ingest_report_says_one_chunk() -> None:
    from beleg.cli.render import render_ingest
    from beleg.ingest.pipeline import FileResult, IngestReport

    report = IngestReport()
    report.files.append(FileResult("notes/a.md", "added", "a", chunks=1))
    report.embedded = 1
    text = render_ingest(report, Style(False))
    assert "notes/a.md (1 chunk)" in text and "1 chunk embedded" in text, text
