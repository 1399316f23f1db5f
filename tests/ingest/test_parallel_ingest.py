"""Several ingest runs over one corpus and one index: no file embedded twice, none lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import beleg
from beleg.index.config import IndexConfig
from beleg.ingest import pipeline
from beleg.ingest.claims import Claims
from beleg.testing.embeddings_server import FakeEmbeddingsServer


class RecordingEmbedder:
    """Deterministic vectors; records every text it embeds."""

    spec, dim, fingerprint = "recording", 8, "recording:1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_documents(self, texts):
        self.calls.append(list(texts))
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    embed_queries = embed_documents


def write_corpus(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"note{i:02d}.md").write_text(f"# Note {i}\n\nPump {i} needs {i + 3} litres of oil.\n")


class SlowRecorder(RecordingEmbedder):
    def __init__(self, log: list[str], lock: threading.Lock) -> None:
        super().__init__()
        self.log, self.lock = log, lock

    def embed_documents(self, texts):
        time.sleep(0.02)  # long enough for the other run to reach the same files
        with self.lock:
            self.log.extend(texts)
        return super().embed_documents(texts)


def test_two_concurrent_runs_share_the_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "_FLUSH_CHUNKS", 2)
    corpus, index = tmp_path / "docs", tmp_path / "kb"
    write_corpus(corpus, 24)
    beleg.open(index, IndexConfig(embedder="recording")).close()
    embedded: list[str] = []
    lock = threading.Lock()
    reports: list = []

    def run() -> None:
        with beleg.open(index, embedder=SlowRecorder(embedded, lock)) as kb:
            reports.append(kb.ingest([str(corpus)], progress="none"))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(reports) == 2
    twice = [t for t, n in Counter(embedded).items() if n > 1]
    assert not twice, f"{len(twice)} chunks embedded twice"
    assert len(embedded) == 24
    for report in reports:  # every file is in each report: added by one run, unchanged in the other
        assert len(report.files) == 24 and not report.failures
    added = sum(r.count("added") for r in reports)
    assert added == 24 and all(r.count("added") for r in reports)  # both did a share of the work
    with beleg.open(index, create=False, embedder=RecordingEmbedder()) as kb:
        assert kb.status()["documents"] == 24
    assert not list((index / "claims").glob("*.claim"))  # all released


def test_a_claim_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    corpus, index = tmp_path / "docs", tmp_path / "kb"
    write_corpus(corpus, 2)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with beleg.open(index, embedder=RecordingEmbedder()) as kb:
        claims = Claims(kb.path / "claims")
        source = str(corpus / "note00.md")
        claims.folder.mkdir(parents=True, exist_ok=True)
        # What a crashed ingest leaves behind: its claim, with its (now unused) pid.
        claims._path(source).write_text(f"{os.uname().nodename} {dead.pid} deadbeef\n")
        report = kb.ingest([str(corpus)], progress="none")
    assert report.count("added") == 2, report.to_json()


def test_a_claim_whose_pid_another_process_now_has_is_taken_over(tmp_path: Path) -> None:
    """After a restart pids are reused: a claim naming a live pid that is another process (its
    start time differs) stalled an ingest for up to 30 minutes, silently."""
    from beleg.ingest.claims import died_here, owner_id
    from beleg.processes import process_started

    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = process_started(stranger.pid)
        assert started is not None  # Linux /proc: the test means nothing without it
        host = os.uname().nodename
        assert died_here(f"{host} {stranger.pid} {int(started) + 1} deadbeef")  # the pid is someone else's now
        assert not died_here(f"{host} {stranger.pid} {started} deadbeef")  # still its owner
        assert not died_here(f"{host} {stranger.pid} deadbeef")  # written before start times: pid only
        assert not died_here(owner_id("deadbeef"))  # this very process
        claims = Claims(tmp_path / "claims")
        claims.folder.mkdir(parents=True)
        claims._path("a.md").write_text(f"{host} {stranger.pid} {int(started) + 1} deadbeef\n")
        assert claims.try_claim("a.md")  # taken over at once, not after stale_after_s
    finally:
        stranger.kill()
        stranger.wait()


def test_a_file_claimed_by_a_live_run_is_done_last_once_released(tmp_path: Path, caplog: Any) -> None:
    corpus, index = tmp_path / "docs", tmp_path / "kb"
    write_corpus(corpus, 3)
    caplog.set_level("WARNING", logger="beleg.ingest.pipeline")
    with beleg.open(index, embedder=RecordingEmbedder()) as kb:
        other = Claims(kb.path / "claims")
        held = str(corpus / "note00.md")
        assert other.try_claim(held)
        threading.Timer(0.5, other.release, args=(held,)).start()
        start = time.monotonic()
        report = kb.ingest([str(corpus)], progress="none")
    assert time.monotonic() - start >= 0.5
    assert [f.source for f in report.files][-1] == held  # put off to the end, then done
    assert report.count("added") == 3
    # The wait is said, not silent (a tester saw a run stall with no word of why).
    assert "1 file(s) are claimed by another ingest process" in caplog.text


def test_two_cli_processes_over_a_remote_embedder_embed_each_chunk_once(tmp_path: Path) -> None:
    corpus, index = tmp_path / "docs", tmp_path / "kb"
    write_corpus(corpus, 30)
    env = {k: v for k, v in os.environ.items() if k not in ("BELEG_INDEX", "BELEG_EMBED_API_KEY", "OPENAI_API_KEY")}
    env["BELEG_EMBED_BATCH"] = "4"
    with FakeEmbeddingsServer(dim=8, latency_s=0.05) as server:
        spec = f"openai:m@{server.base_url}"
        cli = [sys.executable, "-m", "beleg"]
        subprocess.run([*cli, "init", "--index", str(index), "--embedder", spec], check=True, env=env,
                       capture_output=True, timeout=120)
        # Small batches, so the two runs' commits interleave.
        driver = ("import sys; from beleg.ingest import pipeline; pipeline._FLUSH_CHUNKS = 3; "
                  "from beleg.cli.main import main; sys.exit(main(sys.argv[1:]))")
        procs = [subprocess.Popen([sys.executable, "-c", driver, "ingest", str(corpus), "--index", str(index),
                                   "--json", "--progress", "none"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=300) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
        texts = [t for t in server.embedded_texts() if t != "dimension probe"]
    reports = [json.loads(out) for out, _ in outs]
    assert sum(r["added"] for r in reports) == 30
    assert all(r["added"] + r["unchanged"] == 30 for r in reports)
    assert len(texts) == 30 and len(set(texts)) == 30  # each chunk embedded by exactly one process
    assert np.all([r["failed"] == 0 for r in reports])
