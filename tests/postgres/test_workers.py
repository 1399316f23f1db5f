"""Several ``beleg ingest`` processes over one corpus into one PostgreSQL index: every file
ingested exactly once, every chunk text embedded once, and a worker killed with SIGKILL
loses nothing and leaves no half document."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
from psycopg import sql

from beleg.index.postgres.config import PostgresLocation
from beleg.testing.embeddings_server import FakeEmbeddingsServer

#: Small commits and small embedding requests, so the workers' batches interleave.
FLUSH_CHUNKS = 3
DRIVER = (f"import sys; from beleg.ingest import pipeline; pipeline._FLUSH_CHUNKS = {FLUSH_CHUNKS}; "
          "from beleg.cli.main import main; sys.exit(main(sys.argv[1:]))")
SECTIONS = 3


#: Files that share a section: file i holds the shared section i % SHARED_GROUPS.
SHARED_GROUPS = 4


def write_corpus(folder: Path, n: int) -> None:
    """``n`` files of SECTIONS sections of their own and one section (same title, heading and
    text) that a quarter of the files share: the same chunk text in several files."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        own = [f"## Part {i}.{j}\n\nPump {i} stage {j} needs {i * 7 + j} litres of oil." for j in range(SECTIONS)]
        k = i % SHARED_GROUPS
        shared = f"## Safety rule {k}\n\nRule {k}: wear gloves and goggles before opening valve {k}."
        text = "---\ntitle: Pump manual\n---\n\n" + "\n\n".join([*own, shared]) + "\n"
        (folder / f"note{i:03d}.md").write_text(text, encoding="utf-8")


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BELEG_INDEX", "BELEG_EMBED_API_KEY", "OPENAI_API_KEY")}
    env["BELEG_EMBED_BATCH"] = "4"
    return env


def start_workers(n: int, corpus: Path, index: str, env: dict[str, str]) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen([sys.executable, "-c", DRIVER, "ingest", str(corpus), "--index", index, "--json",
                              "--progress", "none"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(n)]


def init_index(index: str, spec: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "beleg", "init", "--index", index, "--embedder", spec], check=True, env=env,
                   capture_output=True, timeout=120)


def query(index: str, text: str, params: tuple = ()) -> list[tuple]:
    location = PostgresLocation.parse(index)
    with psycopg.connect(location.conninfo, autocommit=True) as conn:
        return conn.execute(sql.SQL(text).format(s=sql.Identifier(location.schema)), params).fetchall()


def stored_documents(index: str) -> dict[str, tuple[int, list[int]]]:
    """source -> (the document's chunk_count, the ordinals of its stored chunks)."""
    rows = query(index, "SELECT d.source, d.chunk_count, array_agg(c.ordinal ORDER BY c.ordinal) FROM {s}.documents d "
                        "LEFT JOIN {s}.chunks c ON c.doc_id = d.doc_id GROUP BY d.source, d.chunk_count")
    return {Path(source).name: (count, list(ordinals)) for source, count, ordinals in rows}


def test_three_workers_ingest_every_file_once_and_embed_every_text_once(pg_location: str, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    n = 30
    write_corpus(corpus, n)
    env = cli_env()
    with FakeEmbeddingsServer(dim=8, latency_s=0.1) as server:
        init_index(pg_location, f"openai:m@{server.base_url}", env)
        procs = start_workers(3, corpus, pg_location, env)
        outs = [p.communicate(timeout=300) for p in procs]
        texts = [t for t in server.embedded_texts() if t != "dimension probe"]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    reports = [json.loads(out) for out, _ in outs]
    assert sum(r["added"] for r in reports) == n  # each file added by exactly one worker
    assert all(r["added"] + r["unchanged"] == n and r["failed"] == 0 for r in reports)
    twice = [t for t, k in Counter(texts).items() if k > 1]
    assert not twice, f"{len(twice)} chunk texts embedded more than once"
    docs = stored_documents(pg_location)
    assert len(docs) == n and all(count == SECTIONS + 1 for count, _ in docs.values())
    distinct = query(pg_location, "SELECT count(DISTINCT embed_hash) FROM {s}.chunks")[0][0]
    assert distinct == n * SECTIONS + SHARED_GROUPS  # the shared sections are one text each
    assert len(texts) == distinct
    assert query(pg_location, "SELECT count(*) FROM {s}.ingest_claims") == [(0,)]  # all done or released


def test_a_killed_worker_loses_no_file_and_leaves_no_half_document(pg_location: str, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    n = 40
    write_corpus(corpus, n)
    env = cli_env()
    with FakeEmbeddingsServer(dim=8, latency_s=0.15) as server:
        init_index(pg_location, f"openai:m@{server.base_url}", env)
        procs = start_workers(3, corpus, pg_location, env)
        victim = _kill_a_worker_holding_claims(procs, pg_location)
        survivors = [p for p in procs if p is not victim]
        outs = [p.communicate(timeout=300) for p in survivors]
        texts = [t for t in server.embedded_texts() if t != "dimension probe"]
    victim.stdout.close()  # type: ignore[union-attr]
    victim.stderr.close()  # type: ignore[union-attr]
    assert all(p.returncode == 0 for p in survivors), [err[-2000:] for _, err in outs]
    reports = [json.loads(out) for out, _ in outs]
    assert all(r["added"] + r["unchanged"] == n and r["failed"] == 0 for r in reports)
    docs = stored_documents(pg_location)
    assert sorted(docs) == sorted(p.name for p in corpus.iterdir())  # nothing lost
    for name, (count, ordinals) in docs.items():  # no half document
        assert count == SECTIONS + 1 and ordinals == list(range(SECTIONS + 1)), name
    assert query(pg_location, "SELECT count(*) FROM {s}.ingest_claims") == [(0,)]
    # Only what the killed worker embedded but had not committed is embedded again: its batch
    # in flight and the one being read (each at most FLUSH_CHUNKS + a file's chunks).
    again = sum(k - 1 for k in Counter(texts).values())
    assert len(set(texts)) == query(pg_location, "SELECT count(DISTINCT embed_hash) FROM {s}.chunks")[0][0]
    assert again <= 2 * (FLUSH_CHUNKS + SECTIONS), f"{again} chunk texts embedded twice"


def _kill_a_worker_holding_claims(procs: list[subprocess.Popen[str]], index: str) -> subprocess.Popen[str]:
    """SIGKILL a worker once some documents are committed and it holds claims (mid-run)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        committed = query(index, "SELECT count(*) FROM {s}.documents")[0][0] if _has_claims_table(index) else 0
        holders = [int(w.split()[1]) for (w,) in query(index, "SELECT worker FROM {s}.ingest_claims")] \
            if committed >= 3 else []
        for proc in procs:
            if proc.pid in holders and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()  # reaped: its pid is gone, as for a worker whose shell reaped it
                return proc
        time.sleep(0.02)
    raise AssertionError("no worker held a claim after the first commits")


def _has_claims_table(index: str) -> bool:
    location = PostgresLocation.parse(index)
    return query(index, "SELECT to_regclass(%s) IS NOT NULL", (f"{location.schema}.ingest_claims",))[0][0]
