"""Progress on stderr: a bar on a terminal, plain lines in a log (``--progress``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from beleg.errors import ConfigError
from beleg.progress import Progress, duration, resolve_mode


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_is_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    assert resolve_mode("auto", TTY()) == "bar"
    assert resolve_mode("auto", io.StringIO()) == "lines"
    assert resolve_mode(None, io.StringIO()) == "lines"
    assert resolve_mode(False, TTY()) == "none"
    with pytest.raises(ConfigError, match="'loud'"):
        resolve_mode("loud")


def test_lines_come_every_interval_with_counts_rate_and_eta() -> None:
    clock, out = FakeClock(), io.StringIO()
    shown = Progress(10, desc="ingest", unit="file", progress="lines", stream=out, clock=clock, interval_s=5)
    clock.now += 1
    shown.add_chunks(7)
    shown.advance()
    shown.add_embedded(40)
    assert out.getvalue() == ""  # too early for a line
    clock.now += 4  # 5 s in: 2 of 10 files done, 40 embeddings
    shown.add_chunks(3)
    shown.advance()
    lines = out.getvalue().splitlines()
    assert lines == ["ingest: 2/10 files (20%), 10 chunks, 8.0 embeddings/s, ETA 20s"]
    clock.now += 1
    shown.advance()
    assert len(out.getvalue().splitlines()) == 1  # not again within the interval
    clock.now += 5
    shown.advance(7)
    shown.close()
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("ingest: 10/10 files (100%)") and "done in 11s" in last


def test_a_quick_run_writes_no_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    with Progress(3, progress="lines", stream=out, clock=clock, interval_s=5) as shown:
        shown.advance(3)
    assert out.getvalue() == ""


def test_an_interrupted_run_says_what_it_kept_not_done() -> None:
    clock, out = FakeClock(), io.StringIO()
    with pytest.raises(KeyboardInterrupt), Progress(10, progress="lines", stream=out, clock=clock,
                                                     interval_s=5) as shown:
        shown.committed = 0
        clock.now += 15
        shown.advance(4)
        shown.add_committed(3)
        raise KeyboardInterrupt
    last = out.getvalue().splitlines()[-1]
    assert "done in" not in out.getvalue()
    assert last.startswith("ingest: interrupted after 15s, 4/10 files; 3 committed and kept")
    assert "run the same command again to resume" in last


def test_none_and_durations() -> None:
    out = io.StringIO()
    with Progress(3, progress="none", stream=out, interval_s=0) as shown:
        shown.advance(3)
    assert out.getvalue() == ""
    assert [duration(s) for s in (0, 59.4, 187, 7500)] == ["0s", "59s", "3m07s", "2h05m"]


class HashEmbedder:
    spec, dim, fingerprint = "hash-test", 8, "hash-test:1"

    def embed_documents(self, texts):
        rows = [np.frombuffer(__import__("hashlib").sha256(t.encode()).digest()[:32], dtype=np.uint8)[:8]
                for t in texts]
        out = np.asarray(rows, dtype=np.float32) + 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    embed_queries = embed_documents


def test_ingest_writes_lines_when_stderr_is_not_a_terminal(tmp_path: Path, capsys, monkeypatch) -> None:
    import beleg
    from beleg.ingest.pipeline import TextSource

    monkeypatch.setenv("BELEG_PROGRESS_INTERVAL", "0")
    docs = [TextSource(f"doc{i}", f"# Title {i}\n\nParagraph number {i} about relays.") for i in range(4)]
    with beleg.open(tmp_path / "kb", embedder=HashEmbedder()) as kb:
        kb.ingest_texts(docs)  # progress=None: auto
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("ingest: 2/4 docs (50%)") and "ETA" in line for line in err), err
    assert err[-1].startswith("ingest: 4/4 docs (100%), 4 chunks") and "done in" in err[-1], err


def test_cli_ingest_progress_lines_into_a_log_file(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"f{i}.md").write_text(f"# Note {i}\n\nThe relay {i} trips at {i + 10} amperes.\n")
    log = tmp_path / "stderr.log"
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    env["BELEG_PROGRESS_INTERVAL"] = "0"
    with log.open("w") as err:
        proc = subprocess.run([sys.executable, "-m", "beleg", "ingest", str(corpus), "--index", str(tmp_path / "kb"),
                               "--json"], stdout=subprocess.PIPE, stderr=err, env=env, timeout=300)
    assert proc.returncode == 0
    lines = log.read_text().splitlines()
    assert [line for line in lines if line.startswith("ingest: 1/3 files")], lines
    assert lines[-1].startswith("ingest: 3/3 files (100%), 3 chunks,") and "embeddings/s" in lines[-1], lines
    assert "\r" not in log.read_text()  # no bar redraws in a log


def test_cli_no_progress_keeps_the_log_empty(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nText.\n")
    env = dict(os.environ, BELEG_PROGRESS_INTERVAL="0")
    env.pop("BELEG_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "beleg", "ingest", str(corpus), "--index", str(tmp_path / "kb"),
                           "--progress", "none", "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and "ingest:" not in proc.stderr, proc.stderr


def test_reindex_writes_lines_labelled_reindex(tmp_path: Path, capsys, monkeypatch) -> None:
    from dataclasses import replace

    import beleg
    from beleg.index.config import IndexConfig
    from beleg.ingest.chunking import ChunkingConfig
    from beleg.ingest.pipeline import TextSource

    docs = [TextSource(f"doc{i}", f"# Title {i}\n\n" + " ".join(f"word{j}" for j in range(60))) for i in range(3)]
    config = IndexConfig(embedder="hash-test")
    with beleg.open(tmp_path / "kb", config, embedder=HashEmbedder()) as kb:
        kb.ingest_texts(docs, progress="none")
        capsys.readouterr()
        monkeypatch.setenv("BELEG_PROGRESS_INTERVAL", "0")
        kb.reindex(replace(config, chunking=ChunkingConfig("window", 20, 5)), progress="lines",
                   embedder=HashEmbedder())
    err = capsys.readouterr().err.splitlines()
    assert err and err[-1].startswith("reindex: 3/3 docs (100%)") and "done in" in err[-1], err
