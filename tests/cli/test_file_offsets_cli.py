"""`search --json` and `ask --json` on a small Hugo-style corpus: what offsets count, file
offsets and lines that point at the same text in the file, clean answers and snippets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import beleg
from beleg.cli.main import main

INSTALL = """---
title: Installation
version: "7.0"
status: current
authority: guide
language: en
_body_offset: 3
---

# Installation

## Install the adapter

{{% notice info %}}The adapter needs Node.js 18 or newer, see [requirements]({{% relref "req.md" %}}).{{% /notice %}}

To install the MQTT adapter on a host, run the following command:

```bash
iobroker add mqtt --host 127.0.0.1
```

Afterwards the instance appears in the **admin** page.
"""

PAGE = "<html><head><title>Ports</title></head><body><h1>Ports</h1><p>The admin web port is 8081.</p></body></html>"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, Path]:
    corpus = tmp_path_factory.mktemp("offsets-corpus")
    (corpus / "install.md").write_text(INSTALL, encoding="utf-8")
    (corpus / "ports.html").write_text(PAGE, encoding="utf-8")
    kb = beleg.open(tmp_path_factory.mktemp("offsets") / "kb", embedder=embedder)
    report = kb.ingest([str(corpus)], progress=False)
    assert report.count("failed") == 0, report.failures
    path = kb.path
    kb.close()
    return path, corpus


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _in_file(file_text: str, item: dict[str, Any], quote: str) -> None:
    assert item["offsets"] == "document-text"
    assert file_text[item["file_start"]:item["file_end"]] == quote
    lines = file_text.split("\n")
    assert lines[item["line_start"] - 1].strip() and quote.startswith(lines[item["line_start"] - 1].strip()[:20])
    assert file_text.count("\n", 0, item["file_end"] - 1) + 1 == item["line_end"]


def test_search_json_gives_file_offsets_and_lines(index: tuple[Path, Path], capsys: Any) -> None:
    path, corpus = index
    data = _json(capsys, "search", "iobroker add mqtt", "--index", str(path), "--json", "--mode", "bm25")
    hit = next(h for h in data["hits"] if h["source"].endswith("install.md"))
    _in_file((corpus / "install.md").read_text(encoding="utf-8"), hit, hit["text"])
    assert "_body_offset" not in hit["metadata"]  # reserved, and the front matter's own value was ignored


def test_html_hits_say_file_offsets_are_unknown(index: tuple[Path, Path], capsys: Any) -> None:
    path, _ = index
    data = _json(capsys, "search", "admin web port", "--index", str(path), "--json", "--mode", "bm25")
    hit = next(h for h in data["hits"] if h["source"].endswith("ports.html"))
    assert hit["file_start"] is None and hit["line_start"] is None and "unknown" in hit["file_offsets"]


def test_ask_json_quotes_the_command_with_exact_and_file_offsets(index: tuple[Path, Path], capsys: Any) -> None:
    path, corpus = index
    data = _json(capsys, "ask", "How do I install the MQTT adapter?", "--index", str(path), "--json")
    assert not data["refused"], data["trace"].get("decision")
    c = data["citations"][0]
    assert "iobroker add mqtt --host 127.0.0.1" in c["quote"] and c["quote"].rstrip().endswith("```")
    assert "iobroker add mqtt --host 127.0.0.1" in data["answer"] and "```" not in data["answer"]
    assert c["display"] in data["answer"]
    _in_file((corpus / "install.md").read_text(encoding="utf-8"), c, c["quote"])
    for s in data["sources"]:
        assert s["offsets"] == "document-text" and "file_start" in s


def test_the_python_api_gives_the_same_json_as_ask(index: tuple[Path, Path], capsys: Any, embedder: Any) -> None:
    path, corpus = index
    question = "How do I install the MQTT adapter?"
    cli = _json(capsys, "ask", question, "--index", str(path), "--json")
    with beleg.open(path, embedder=embedder) as kb:
        api = kb.answer_json(kb.ask(question))
    assert [c["file_start"] for c in api["citations"]] == [c["file_start"] for c in cli["citations"]]
    assert [c["line_start"] for c in api["citations"]] == [c["line_start"] for c in cli["citations"]]
    _in_file((corpus / "install.md").read_text(encoding="utf-8"), api["citations"][0], api["citations"][0]["quote"])


def test_human_output_shows_no_markup(index: tuple[Path, Path], capsys: Any) -> None:
    path, _ = index
    assert main(["search", "Node.js requirements", "--index", str(path), "--mode", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "{{%" not in out and "](" not in out
    assert main(["ask", "Which Node.js version does the adapter need?", "--index", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Node.js 18" in out and "{{%" not in out and "relref" not in out
