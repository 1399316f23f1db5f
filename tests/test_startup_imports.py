"""What a ``beleg search --mode bm25`` process imports: nothing for answering, strategies,
ingest-time detection, progress bars or models.

Each of these costs start-up time (together about half of the 0.45 s a bm25 search
took at 100k chunks), and a bm25 search uses none of them. The check runs the real CLI
entry point in a fresh interpreter and reads ``sys.modules`` when the command is done.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_threads import HashEmbedder

import beleg
from beleg.ingest.pipeline import TextSource

#: Modules (and packages: any submodule counts) a bm25 search must not import.
NOT_NEEDED = ("beleg.answer", "beleg.ingest.injection_patterns", "beleg.ingest.injection", "beleg.ingest.pipeline",
              "beleg.ingest.readers", "beleg.strategies", "beleg.server", "tqdm", "onnxruntime", "torch", "yaml")

CHILD = r"""
import json, sys
from beleg.cli.main import main

code = main(sys.argv[2:])
prefixes = json.loads(sys.argv[1])
loaded = sorted(m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in prefixes))
print("@@" + json.dumps({"code": code, "loaded": loaded}))
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("startup") / "kb"
    with beleg.open(path, embedder=HashEmbedder()) as kb:
        kb.ingest_texts([TextSource("notes/relay.md", "# Relay\n\nRelay redrive notes for product acme.\n",
                                    {"product": "acme", "status": "current"}, "Relay")], progress=False)
    return path


@pytest.mark.parametrize("extra", [[], ["--no-self-query"], ["--json"], ["--where", "status = current"]],
                         ids=["self-query", "no-self-query", "json", "where"])
def test_a_bm25_search_process_imports_no_answering_strategies_detector_or_models(index: Path,
                                                                                    extra: list[str]) -> None:
    argv = ["search", "relay redrive acme", "--index", str(index), "--mode", "bm25", "-k", "3", *extra]
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(NOT_NEEDED), *argv], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    body, _, marker = out.stdout.rpartition("@@")
    result = json.loads(marker)
    assert result["code"] == 0, out.stderr[-2000:]
    assert "redrive" in body.lower()  # the hit was printed
    assert result["loaded"] == [], f"a bm25 search imported {result['loaded']}"


def test_the_cli_spells_out_the_servers_key_scopes_the_same() -> None:
    # The CLI keeps its own copy so that building the parser imports no server code.
    from beleg.cli.keys import SCOPES as CLI_SCOPES
    from beleg.server.auth import SCOPES

    assert CLI_SCOPES == SCOPES


def test_strategy_help_lists_the_registered_strategies_when_shown(capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main
    from beleg.strategy_registry import STRATEGIES

    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "retrieval strategy: " + ", ".join(STRATEGIES) + " (default hybrid" in text
