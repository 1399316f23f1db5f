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
    # All four wait for one commit at the end: read, not done, until then.
    assert "ingest: 0/4 docs (0%), 2 read, 2 chunks, ETA unknown" in err, err
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
    assert [line for line in lines if line.startswith("ingest: 0/3 files (0%), 1 read, 1 chunk,")], lines
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


def test_lines_count_items_done_apart_from_items_read_and_waiting_for_a_commit() -> None:
    """An ingest reads ahead of what it has committed: the share and the time remaining count
    what is done, and no rate is shown before anything was embedded."""
    clock, out = FakeClock(), io.StringIO()
    shown = Progress(10, progress="lines", stream=out, clock=clock, interval_s=0)
    shown.committed = 0
    clock.now += 2
    shown.add_chunks(1)
    shown.advance(waiting=1)
    assert out.getvalue().splitlines()[-1] == "ingest: 0/10 files (0%), 1 read, 1 chunk, ETA unknown"
    clock.now += 2
    shown.add_chunks(3)
    shown.advance(3, waiting=3)
    shown.advance()  # unchanged: done at once
    assert out.getvalue().splitlines()[-1] == "ingest: 1/10 files (10%), 5 read, 4 chunks, ETA 36s"
    clock.now += 4  # 8 s in: the batch of 4 is committed
    shown.add_committed(4, settled=4)
    shown.add_embedded(4)
    assert out.getvalue().splitlines()[-1] == "ingest: 5/10 files (50%), 4 chunks, 0.5 embeddings/s, ETA 8s"
    shown.close(interrupted=True)
    assert out.getvalue().splitlines()[-1].startswith("ingest: interrupted after 8s, 5/10 files; 4 committed")


def test_a_failed_run_says_so_and_never_done() -> None:
    clock, out = FakeClock(), io.StringIO()
    with pytest.raises(OSError), Progress(301, progress="lines", stream=out, clock=clock, interval_s=5) as shown:
        shown.committed = 0
        clock.now += 17
        shown.advance(256, waiting=256)  # the second batch of 128 is still being embedded
        shown.add_committed(128, settled=128)
        raise OSError(28, "No space left on device")
    assert "done in" not in out.getvalue()
    assert out.getvalue().splitlines()[-1].startswith(
        "ingest: stopped by an error after 17s, 128/301 files; 128 committed and kept")


def test_stopping_a_tracked_loop_early_is_no_failure() -> None:
    from beleg.progress import track

    out = io.StringIO()
    sys.stderr, saved = out, sys.stderr
    try:
        for _ in track(range(5), 5, desc="eval", unit="query", progress="lines"):
            break
    finally:
        sys.stderr = saved
    assert "error" not in out.getvalue()


def test_a_terminal_of_zero_columns_gets_lines(tmp_path: Path) -> None:
    """``script -qc`` under a pipe gives a terminal nobody sized: 0 columns, where tqdm draws nothing."""
    import fcntl
    import struct
    import termios

    leader, follower = os.openpty()
    try:
        with os.fdopen(os.dup(follower), "w") as tty:
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
            assert resolve_mode("auto", tty) == "lines" and resolve_mode("bar", tty) == "lines"
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
            assert resolve_mode("auto", tty) == "bar"
    finally:
        os.close(leader)
        os.close(follower)


def test_one_is_singular() -> None:
    from beleg.progress import plural

    assert [plural(1, "chunk"), plural(2, "chunk"), plural(0, "file"), plural(3, "query"), plural(2, "key")] == [
        "1 chunk", "2 chunks", "0 files", "3 queries", "2 keys"]
    clock, out = FakeClock(), io.StringIO()
    with Progress(1, unit="file", progress="lines", stream=out, clock=clock, interval_s=0) as shown:
        shown.add_chunks(1)
        shown.advance()
    assert out.getvalue().splitlines()[-1].startswith("ingest: 1/1 file (100%), 1 chunk, done in")


def test_cli_ingest_that_fills_the_disk_ends_with_the_error_not_done(tmp_path: Path) -> None:
    from beleg.testing.embeddings_server import FakeEmbeddingsServer

    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i in range(12):
        (corpus / f"part{i}.md").write_text(f"# Part {i}\n\n" + " ".join(
            f"Clause {i}.{j} covers relay queue retention." for j in range(60)) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "BELEG_INDEX"}
    env["BELEG_PROGRESS_INTERVAL"] = "0"
    limited = ("import resource, signal, sys\n"
               "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
               "resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))\n"
               "from beleg.cli.main import main\n"
               "sys.exit(main(sys.argv[1:]))\n")
    with FakeEmbeddingsServer(dim=8) as server:
        subprocess.run([sys.executable, "-m", "beleg", "init", "--index", str(tmp_path / "kb"), "--embedder",
                        f"openai:m@{server.base_url}"], check=True, env=env, capture_output=True, timeout=120)
        proc = subprocess.run([sys.executable, "-c", limited, "ingest", str(corpus), "--index", str(tmp_path / "kb"),
                               "--progress", "lines"], capture_output=True, text=True, env=env, timeout=300)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1 and lines[-1].startswith("beleg: error: "), lines
    assert lines[-2].startswith("ingest: stopped by an error after ") and "done in" not in proc.stderr, lines



def test_the_bar_shows_what_its_last_redraw_counted() -> None:
    """A commit makes read files done: the bar redrawn for it no longer says they wait ("read=")."""
    import time

    out = TTY()
    shown = Progress(10, progress="bar", stream=out)
    shown.committed = 0
    for _ in range(2):
        time.sleep(0.15)  # past tqdm's minimum redraw interval (0.1 s), so each step is drawn
        shown.add_chunks(1)
        shown.advance(waiting=1)
    time.sleep(0.15)
    shown.add_committed(2, settled=2)
    last = out.getvalue().split("\r")[-1]
    shown.close()
    assert "2/10" in last and "read=" not in last, last
