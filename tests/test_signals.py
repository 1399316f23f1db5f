"""Ctrl-C and SIGTERM during `beleg ingest` and `beleg reindex`, sent to a real CLI process.

The first signal stops taking new files, commits the batch being embedded (not thrown away)
and ends with the "interrupted ..., N committed" line; SIGTERM does the same. A second signal
ends the process at once, without waiting for the batch in flight, and the index still holds
whole batches and takes the rest on the next run. Embeddings come from the fake server over
HTTP with a latency, so a batch is in flight for a known while; batches are 8 files.
"""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from beleg.testing.embeddings_server import FakeEmbeddingsServer
from beleg.testing.servers import delay

N_FILES = 40
BATCH = 8
DRIVER = ("import sys\n"
          "from beleg.ingest import pipeline\n"
          f"pipeline._FLUSH_CHUNKS = {BATCH}\n"
          "from beleg.cli.main import main\n"
          "sys.exit(main(sys.argv[1:]))\n")
PROGRESS = re.compile(r"^(?:ingest|reindex): (\d+)/\d+ (?:files|docs) \(\d+%\), (\d+) read")


@pytest.fixture()
def server() -> Iterator[FakeEmbeddingsServer]:
    with FakeEmbeddingsServer(dim=8) as fake:
        yield fake


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BELEG_INDEX", "BELEG_EMBED_API_KEY")}
    env["BELEG_PROGRESS_INTERVAL"] = "0"  # a line on every step: the test waits for the first commit
    return env


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for i in range(N_FILES):
        (folder / f"note{i:02d}.md").write_text(
            f"# Pump {i}\n\nPump {i} in hall {i % 5} needs {i + 3} litres of oil every spring and autumn.\n",
            encoding="utf-8")
    return folder


def _init(index: Path, server: FakeEmbeddingsServer) -> None:
    subprocess.run([sys.executable, "-m", "beleg", "init", "--index", str(index), "--embedder",
                    f"openai:m@{server.base_url}"], check=True, env=_env(), capture_output=True, timeout=120)


def _start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", DRIVER, *argv, "--progress", "lines"], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(proc: subprocess.Popen[str], ready: Callable[[int, int], bool], what: str) -> int:
    """Read stderr until a progress line's (files done, files read) are ``ready``; returns files done."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line.rstrip("\n"))
        match = PROGRESS.match(line)
        if match and ready(int(match.group(1)), int(match.group(2))):
            return int(match.group(1))
    raise AssertionError(f"the command ended before {what}: {seen}")


def _while_a_batch_is_embedded(proc: subprocess.Popen[str]) -> int:
    """Wait until a batch is committed and the next one is being embedded (more files read than
    fit in the batches committed and one more); returns the files committed then."""
    return _wait_for(proc, lambda done, read: done >= BATCH and read > done + BATCH,
                     "a batch was committed and the next embedded")


def _signal(proc: subprocess.Popen[str], signum: int) -> tuple[int, list[str]]:
    finished = _while_a_batch_is_embedded(proc)
    proc.send_signal(signum)
    _, rest = proc.communicate(timeout=120)
    return finished, rest.splitlines()


def _documents(catalog: Path) -> int:
    db = sqlite3.connect(f"file:{catalog}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return int(db.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
    finally:
        db.close()


def _interrupted_line(lines: list[str], what: str) -> int:
    """The committed count of the one "interrupted" summary line."""
    summary = [line for line in lines if line.startswith(f"{what}: interrupted after ")]
    assert len(summary) == 1, lines
    match = re.search(r", (\d+)/(\d+) (?:files|docs); (\d+) committed and kept", summary[0])
    assert match, summary
    return int(match.group(3))


@pytest.mark.parametrize(("signum", "status", "named"), [(signal.SIGINT, 130, "Ctrl-C"),
                                                         (signal.SIGTERM, 143, "SIGTERM")], ids=["SIGINT", "SIGTERM"])
def test_the_first_signal_commits_the_batch_being_embedded_and_stops(tmp_path: Path, server: FakeEmbeddingsServer,
                                                                    signum: int, status: int, named: str) -> None:
    corpus, index = _corpus(tmp_path / "docs"), tmp_path / "kb"
    _init(index, server)
    server.latency_s = 1.0  # each batch is in flight for a second
    proc = _start("ingest", str(corpus), "--index", str(index))
    finished, after = _signal(proc, signum)
    assert proc.returncode == status, after
    stopping = [line for line in after if line.startswith(f"beleg: {named}: stopping;")]
    assert stopping and "committed first" in stopping[0], after
    committed = _interrupted_line(after, "ingest")
    # The batch in flight when the signal came was committed, not thrown away; no new one was started.
    assert finished < committed < N_FILES and committed % BATCH == 0, after
    assert after[-1] == "beleg: interrupted", after
    assert _documents(index / "catalog.sqlite") == committed
    assert not list((index / "claims").iterdir())  # what was read and not stored is free for the next run
    rerun = subprocess.run([sys.executable, "-m", "beleg", "ingest", str(corpus), "--index", str(index), "--json",
                            "--no-progress"], env=_env(), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0 and f'"unchanged": {committed}' in rerun.stdout, rerun.stderr


def test_a_second_signal_stops_at_once_and_leaves_whole_batches(tmp_path: Path, server: FakeEmbeddingsServer) -> None:
    corpus, index = _corpus(tmp_path / "docs"), tmp_path / "kb"
    _init(index, server)
    # The first batch is embedded on the main thread, inside one model call (an HTTP request
    # here) that a graceful stop would wait for: for 30 s, longer than the test waits. The
    # embedder's dimension probe, the run's first request, is answered at once.
    server.fail(delay(0), delay(30))
    proc = _start("ingest", str(corpus), "--index", str(index))
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 60
        while sum("Pump" in text for text in server.embedded_texts()) < BATCH:  # the request has arrived
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # The second only once the first was seen: two sent together may arrive as one (the
        # kernel keeps one SIGINT pending), as a person pressing twice never sees.
        assert any(line.startswith("beleg: Ctrl-C: stopping;") for line in proc.stderr)
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=20)
    finally:
        proc.kill()
    after = rest.splitlines()
    assert proc.returncode == 130, after
    assert any(line.startswith("beleg: Ctrl-C again: stopped at once") for line in after), after
    assert not any("interrupted after" in line for line in after), after
    assert _documents(index / "catalog.sqlite") == 0  # the batch in the model was not waited for
    rerun = subprocess.run([sys.executable, "-m", "beleg", "ingest", str(corpus), "--index", str(index), "--json",
                            "--no-progress"], env=_env(), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert _documents(index / "catalog.sqlite") == N_FILES  # the claims the stopped run left are taken over


def test_ctrl_c_during_a_reindex_keeps_the_batch_and_frees_the_index(tmp_path: Path,
                                                                     server: FakeEmbeddingsServer) -> None:
    corpus, index = _corpus(tmp_path / "docs"), tmp_path / "kb"
    _init(index, server)
    subprocess.run([sys.executable, "-m", "beleg", "ingest", str(corpus), "--index", str(index), "--no-progress"],
                   check=True, env=_env(), capture_output=True, timeout=120)
    server.latency_s = 1.0
    # A window holds a whole note, heading line included: other texts than the structure
    # chunks', so every one is embedded, one chunk per document as before.
    proc = _start("reindex", "--index", str(index), "--chunking", "window")
    finished, after = _signal(proc, signal.SIGINT)
    assert proc.returncode == 130, after
    committed = _interrupted_line(after, "reindex")
    assert finished < committed < N_FILES, after
    built = next((index / "versions").iterdir())
    assert _documents(built / "catalog.sqlite") == committed
    assert not (index / "LOCK").exists()  # writes to the index are not refused after the stop


def test_the_exit_status_of_a_signal_is_reported_once() -> None:
    """A later command in the same process (main() called again) exits with its own status."""
    from beleg.cli import interrupt

    interrupt.received = signal.SIGTERM
    assert interrupt.exit_status() == 143
    assert interrupt.exit_status() == 130  # a plain Ctrl-C's KeyboardInterrupt
