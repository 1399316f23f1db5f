"""The file `beleg search` and `beleg ask` show for a source opens from the folder they run in:
the stored source is the path as typed at ingest, relative to wherever that ran."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from beleg.cli.main import main

DOC = """---
title: Error reference
language: en
---
# Error reference

## E-4012 Signature mismatch

E-4012 means the X-Ferrolink-Signature header did not match the payload.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths")
    (root / "repo" / "docs").mkdir(parents=True)
    (root / "repo" / "docs" / "errors.md").write_text(DOC, encoding="utf-8")
    (root / "elsewhere").mkdir()
    return root


def _shown_files(out: str) -> list[str]:
    """The paths a hit list or an answer's sources name (the line before `chars` or `·`)."""
    return re.findall(r"^\s+(\S+\.md)\s+(?:chars|·)", out, re.MULTILINE)


@pytest.mark.parametrize("command", [["search", "E-4012", "--mode", "bm25"], ["ask", "What does E-4012 mean?"]])
def test_the_shown_source_opens_from_where_the_command_runs(corpus, command, capsys, monkeypatch) -> None:
    index = str(corpus / "kb")
    monkeypatch.chdir(corpus / "repo")
    assert main(["ingest", "docs", "--index", index, "--no-progress"]) == 0
    capsys.readouterr()
    for here, expected in ((corpus / "repo", "docs/errors.md"), (corpus / "repo" / "docs", "errors.md"),
                           (corpus / "elsewhere", str((corpus / "repo" / "docs" / "errors.md").resolve()))):
        monkeypatch.chdir(here)
        assert main([*command, "--index", index]) == 0
        shown = _shown_files(capsys.readouterr().out)
        assert shown and set(shown) == {expected}, (here, shown)
        assert (here / shown[0]).is_file()
