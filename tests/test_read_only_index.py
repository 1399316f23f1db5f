"""An index this process cannot write (a read-only folder or mount) can be searched, asked and shown.

The folder is made read-only with ``chmod`` and the CLI runs in a subprocess that the kernel
holds to it: the tests run as root, whose CAP_DAC_OVERRIDE ignores file modes, so the child
drops that capability (and CAP_DAC_READ_SEARCH) from its bounding set and execs the CLI, as
``setpriv --bounding-set=-dac_override,-dac_read_search`` does. A real refusal beats opening
through a read-only URI and checking that nothing writes: it catches every file the command
would create (journal, -wal/-shm, view, claims), not only the SQLite writes. Each test first
checks that the child really cannot write there, so it fails instead of passing vacuously on a
machine where the drop does not take. Embeddings come from the fake server over HTTP, so no
model loads.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from beleg.testing.embeddings_server import FakeEmbeddingsServer

DOCS = {
    "retry.md": "---\ntitle: Retry contract\nstatus: current\n---\n# Retry contract\n\n"
                "Failed webhook deliveries are retried for 72 hours. The retry window starts at the first attempt.\n",
    "queues.md": "---\ntitle: Queue guide\nstatus: current\n---\n# Queues\n\n"
                 "Dead-letter queues keep failed messages for seven days.\n",
}

# Runs a command with the capabilities that let root ignore file modes dropped from its bounding
# set (prctl PR_CAPBSET_DROP = 24; CAP_DAC_OVERRIDE = 1, CAP_DAC_READ_SEARCH = 2), then execs it:
# the exec'd program has neither, so chmod binds it. Not root: file modes bind it already.
_UNPRIVILEGED = (
    "import ctypes, os, sys\n"
    "if os.geteuid() == 0:\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    for cap in (1, 2):\n"
    "        if libc.prctl(24, cap, 0, 0, 0) != 0:\n"
    "            raise OSError(ctypes.get_errno(), 'prctl(PR_CAPBSET_DROP) failed')\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("BELEG_INDEX", "BELEG_EMBED_API_KEY")}


def _unprivileged(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _UNPRIVILEGED, *argv], capture_output=True, text=True,
                          env=_env(), timeout=120)


def _beleg(*argv: str) -> subprocess.CompletedProcess[str]:
    return _unprivileged(sys.executable, "-m", "beleg", *argv)


def _make_read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    probe = _unprivileged(sys.executable, "-c", f"open({str(folder / 'probe')!r}, 'w')")
    assert probe.returncode != 0 and "PermissionError" in probe.stderr, (
        "the test could not make the folder read-only to its subprocess: " + probe.stderr)


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with a hash of its bytes: a read must leave them all as they were."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeEmbeddingsServer]:
    with FakeEmbeddingsServer(dim=8) as fake:
        yield fake


@pytest.fixture()
def index(tmp_path: Path, server: FakeEmbeddingsServer) -> Iterator[Path]:
    docs, idx = tmp_path / "docs", tmp_path / "kb"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    cli = [sys.executable, "-m", "beleg"]
    subprocess.run([*cli, "init", "--index", str(idx), "--embedder", f"openai:m@{server.base_url}"], check=True,
                   env=_env(), capture_output=True, timeout=120)
    subprocess.run([*cli, "ingest", str(docs), "--index", str(idx), "--no-progress"], check=True, env=_env(),
                   capture_output=True, timeout=120)
    yield idx
    for path in [idx, *idx.rglob("*")]:  # so that pytest can remove it
        path.chmod(path.stat().st_mode | 0o200)


def test_search_ask_and_status_read_a_read_only_folder_and_write_nothing(index: Path) -> None:
    assert not (index / "catalog.sqlite-wal").exists()  # closed cleanly: every commit is in the file
    _make_read_only(index)
    before = _files(index)
    search = _beleg("search", "retry window", "--index", str(index))
    assert search.returncode == 0 and search.stderr == "", search.stderr
    assert "Retry contract" in search.stdout
    status = _beleg("status", "--index", str(index), "--json")
    assert status.returncode == 0 and '"documents": 2' in status.stdout, status.stderr
    ask = _beleg("ask", "How long are failed webhook deliveries retried?", "--index", str(index),
                 "--min-confidence", "0")
    assert ask.returncode == 0, ask.stderr
    assert "72 hours" in ask.stdout
    # Sentence vectors cannot be stored: one line says so, and nothing claims a failed write.
    assert ask.stderr.count("beleg: note: ") == 1 and "kept in memory only" in ask.stderr, ask.stderr
    assert "read-only to this process" in ask.stderr and "failed" not in ask.stderr, ask.stderr
    assert _files(index) == before


def test_a_read_only_index_whose_log_holds_commits_is_read_with_them(index: Path, tmp_path: Path,
                                                                     server: FakeEmbeddingsServer) -> None:
    """A writer with more rights holds the index open with a commit only in catalog.sqlite-wal: the
    reader must see it (opening the file as immutable would read the main file alone)."""
    import beleg
    from beleg.backends.embedders.remote import RemoteEmbedder
    from beleg.ingest.pipeline import TextSource

    writer = beleg.open(index, embedder=RemoteEmbedder(f"m@{server.base_url}"))
    try:
        writer.ingest_texts([TextSource("notes/pager.md", "# Pager\n\nThe pager rota changes on Mondays.\n",
                                              {"status": "current"}, "Pager rota")], progress="none")
        assert (index / "catalog.sqlite-wal").stat().st_size > 0
        _make_read_only(index)
        found = _beleg("search", "pager rota", "--index", str(index), "--mode", "bm25")
        assert found.returncode == 0 and found.stderr == "", found.stderr
        assert "Pager rota" in found.stdout
    finally:
        writer.close()


def test_a_write_to_a_read_only_index_names_what_needs_write_access(index: Path) -> None:
    _make_read_only(index)
    before = _files(index)
    driver = ("import sys, beleg\n"
              "kb = beleg.open(sys.argv[1], create=False)\n"
              "with kb.catalog.transaction():\n"
              "    kb.catalog.set_meta('x', 'y')\n")
    proc = _unprivileged(sys.executable, "-c", driver, str(index))
    assert proc.returncode != 0 and "ReadOnlyIndexError" in proc.stderr, proc.stderr
    assert f"cannot write to the index in {index}: it is read-only to this process" in proc.stderr
    assert "needs write access" in proc.stderr
    assert _files(index) == before


def test_what_an_open_would_write_is_skipped_with_a_note(index: Path) -> None:
    """The first open after a detector upgrade re-reads chunks, and the first use of the embedder
    records its fingerprint: both write, so on a read-only index both are skipped and said."""
    db = sqlite3.connect(index / "catalog.sqlite")
    db.execute("UPDATE meta SET value = 'v0' WHERE key = 'injection_detector'")
    db.execute("DELETE FROM meta WHERE key = 'embedder_fingerprint'")
    db.commit()
    db.close()
    _make_read_only(index)
    before = _files(index)
    search = _beleg("search", "retry window", "--index", str(index))
    assert search.returncode == 0 and "Retry contract" in search.stdout, search.stderr
    notes = search.stderr.splitlines()
    assert len(notes) == 2 and all(n.startswith("beleg: note: ") for n in notes), notes
    assert "injection flags were not re-read" in notes[0] and "fingerprint" in notes[1], notes
    assert _files(index) == before


def test_a_read_only_index_from_an_older_beleg_says_it_needs_one_writable_open(index: Path) -> None:
    db = sqlite3.connect(index / "catalog.sqlite")
    db.execute("ALTER TABLE chunks DROP COLUMN flags")
    db.commit()
    db.close()
    _make_read_only(index)
    proc = _beleg("status", "--index", str(index))
    assert proc.returncode == 1, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("beleg: error: ") and "column chunks.flags" in line, line
    assert "open it once with write access" in line and "failed write" not in line, line


def test_a_read_only_catalog_in_a_writable_folder_sees_later_commits(index: Path,
                                                                     server: FakeEmbeddingsServer) -> None:
    """Only catalog.sqlite is read-only: SQLite can create -wal and -shm beside it, so the reader
    keeps SQLite's locks and change detection and sees what a writer with more rights commits
    while it is open (an immutable open would keep reading the file as it was)."""
    import beleg
    from beleg.backends.embedders.remote import RemoteEmbedder
    from beleg.ingest.pipeline import TextSource

    catalog = index / "catalog.sqlite"
    catalog.chmod(0o444)
    reader = ("import sys, beleg\n"
              "kb = beleg.open(sys.argv[1], create=False)\n"
              "for _ in range(2):\n"
              "    print(kb.catalog.read_only, kb.status()['documents'], flush=True)\n"
              "    sys.stdin.readline()\n")
    proc = subprocess.Popen([sys.executable, "-c", _UNPRIVILEGED, sys.executable, "-c", reader, str(index)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        assert proc.stdout.readline().split() == ["True", "2"]
        with beleg.open(index, embedder=RemoteEmbedder(f"m@{server.base_url}")) as writer:
            writer.ingest_texts([TextSource("notes/pager.md", "# Pager\n\nThe pager rota changes on Mondays.\n")],
                                progress="none")
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().split() == ["True", "3"]  # the commit made after the open
    finally:
        proc.kill()
        proc.wait()
