"""The CLI contract other tools rely on: commands, JSON shapes, errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from beleg.cli.main import main

DOC = """---
title: Error reference
product: ferrolink
version: "3.0"
status: current
authority: reference
language: en
---
# Error reference

## E-4012 Signature mismatch

E-4012 means the X-Ferrolink-Signature header did not match the payload.
"""
OLD = DOC.replace('"3.0"', '"2.4"').replace("current", "historical").replace("E-4012 means", "In 2.4, E-4012 meant")


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    (root / "docs").mkdir()
    (root / "docs" / "errors.md").write_text(DOC, encoding="utf-8")
    (root / "docs" / "errors-24.md").write_text(OLD, encoding="utf-8")
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_ingest_search_status(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(index / "kb")
    code, out, _ = _run(capsys, "init", "--index", idx, "--json")
    assert code == 0 and json.loads(out)["documents"] == 0
    code, out, _ = _run(capsys, "ingest", str(index / "docs"), "--index", idx, "--json", "--no-progress")
    counts = json.loads(out)
    assert code == 0
    assert {k: counts[k] for k in ("added", "updated", "unchanged", "deleted", "failed")} == {
        "added": 2, "updated": 0, "unchanged": 0, "deleted": 0, "failed": 0}
    assert counts["embedded"] >= 2 and counts["failures"] == []

    code, out, _ = _run(capsys, "search", "E-4012", "--index", idx, "--json", "-k", "5", "--filter", "version=3.0")
    hits = json.loads(out)["hits"]
    assert code == 0 and hits
    assert {h["metadata"]["version"] for h in hits} == {"3.0"}
    hit = hits[0]
    assert set(hit) >= {"chunk_id", "doc_id", "source", "title", "heading_path", "start", "end", "score", "text", "metadata"}
    assert hit["source"] == str(index / "docs" / "errors.md")
    assert hit["heading_path"] == "Error reference > E-4012 Signature mismatch"
    assert hit["metadata"]["version"] == "3.0"

    code, out, _ = _run(capsys, "search", "E-4012", "--index", idx, "--mode", "bm25", "--where", "version < 3")
    assert code == 0
    assert "1. " in out and "v2.4" in out and "historical" in out and "«E-4012»" in out

    code, out, _ = _run(capsys, "status", "--index", idx, "--json")
    assert json.loads(out)["documents"] == 2

    code, out, _ = _run(capsys, "ingest", str(index / "docs"), "--index", idx, "--json", "--no-progress")
    assert json.loads(out)["embedded"] == 0 and json.loads(out)["unchanged"] == 2


def test_index_defaults_to_env_variable(index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BELEG_INDEX", str(index / "env-kb"))
    code, _, _ = _run(capsys, "ingest", str(index / "docs" / "errors.md"), "--no-progress")
    assert code == 0 and (index / "env-kb" / "beleg.json").exists()
    monkeypatch.delenv("BELEG_INDEX")
    monkeypatch.chdir(index)
    code, _, _ = _run(capsys, "ingest", "docs/errors.md", "--no-progress")
    assert code == 0 and (index / ".beleg" / "beleg.json").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["search", "x", "--where", "version >="], "ends too early"),
        (["search", "x", "--filter", "novalue"], "key=value"),
        (["status", "--index", "/nonexistent/kb"], "no Beleg index"),
        (["search", "x", "--weights", "a,b"], "--weights"),
    ],
)
def test_errors_are_one_line_with_nonzero_exit(index: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    if "--index" not in argv:
        argv = [*argv, "--index", str(index / "kb")]
    code, out, err = _run(capsys, *argv)
    assert code != 0
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("beleg: error:") and message in err


def test_failed_file_gives_nonzero_exit_and_reason(index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = index / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 garbage")
    code, out, _ = _run(capsys, "ingest", str(bad), "--index", str(index / "kb"), "--json", "--no-progress")
    report = json.loads(out)
    assert code == 1 and report["failed"] == 1 and report["failures"][0]["source"] == str(bad)


def test_console_script_entry_point(index: Path) -> None:
    exe = Path(sys.executable).with_name("beleg")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "beleg"]
    proc = subprocess.run([*cmd, "search", "q", "--where", "(", "--index", str(index / "kb")],
                          capture_output=True, text=True, env={**os.environ}, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("beleg: error:") and "Traceback" not in proc.stderr
