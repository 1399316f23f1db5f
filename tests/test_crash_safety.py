"""Crash safety: SIGKILL `beleg ingest` at random points and check the index every time.

A corpus of small Markdown documents is ingested by the real CLI in a subprocess (the
real embedder, so a run lasts seconds) and killed again and again: during start-up and
model load, mid-embedding, right after a commit, and inside a write transaction. Between
runs documents get new revisions and files disappear (and come back), so runs add,
replace and delete documents. After every kill the index must open, search, pass
SQLite's integrity check, and hold only whole documents: each document's chunks are
exactly what chunking its stored text gives, each chunk's text is the stored text at
its offsets, and every chunk has a vector. Every paragraph and heading of a document
carries ``DOC-nnn REV-r``, so any chunk tells which document and revision it came from.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import beleg
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import chunk_document
from beleg.ingest.readers import reader_for
from beleg.types import Document

pytestmark = pytest.mark.slow

N_DOCS = 40
MARKER = re.compile(r"DOC-(\d{3}) REV-(\d+)")
WORDS = [
    "harbor", "lantern", "granite", "orchard", "meadow", "copper", "falcon", "willow", "ember", "quartz",
    "river", "summit", "canyon", "beacon", "thistle", "saffron", "cobalt", "juniper", "marble", "velvet",
    "tundra", "prairie", "glacier", "lagoon", "cedar", "maple", "aspen", "birch", "compass", "anchor",
    "rudder", "sail", "mast", "keel", "hull", "deck", "cargo", "voyage", "signal", "relay", "turbine",
    "piston", "valve", "gasket", "ledger", "invoice", "tariff", "quota", "budget", "audit", "policy",
    "clause", "treaty", "charter", "statute", "permit", "license",
]

# Runs `beleg ingest` through the CLI's own entry point. CRASH_FLUSH sets a smaller batch
# (more commits per run, so more points between commits to die at); CRASH_STALL_AFTER
# makes the process stop inside a write transaction after that many document upserts
# and touch CRASH_STALL_FILE, so the test can kill it mid-transaction for certain.
DRIVER = textwrap.dedent("""
    import os, sys, time
    import beleg.ingest.pipeline as pipeline
    from beleg.index.catalog import Catalog

    if os.environ.get("CRASH_FLUSH"):
        pipeline._FLUSH_CHUNKS = int(os.environ["CRASH_FLUSH"])
    if os.environ.get("CRASH_STALL_AFTER"):
        stall_after, upserts = int(os.environ["CRASH_STALL_AFTER"]), []
        original = Catalog.upsert_document

        def upsert_document(self, *args, **kwargs):
            original(self, *args, **kwargs)
            upserts.append(1)
            if len(upserts) == stall_after:
                assert self.db.in_transaction
                open(os.environ["CRASH_STALL_FILE"], "w").close()
                time.sleep(120)

        Catalog.upsert_document = upsert_document

    from beleg.cli.main import main

    sys.exit(main(sys.argv[1:]))
""")


def doc_text(i: int, rev: int) -> str:
    """Document ``i`` at revision ``rev``: every heading and paragraph carries the marker."""
    rng = random.Random(i * 1000 + rev)
    marker = f"DOC-{i:03d} REV-{rev}"
    parts = [f"---\nid: doc-{i:03d}\ntitle: Document {i}\nrev: {rev}\n---\n# {marker} document {i}\n"]
    for s in range(4 if i % 4 == 0 else 1):  # every fourth document has several chunks
        parts.append(f"## {marker} part {s}\n")
        parts.append(f"{marker} " + " ".join(rng.choice(WORDS) for _ in range(10)) + ".\n")
    return "\n".join(parts)


def cli_supports_sync() -> bool:
    from beleg.cli.main import build_parser

    try:
        _, unknown = build_parser().parse_known_args(["ingest", "x", "--sync"])
    except SystemExit:
        return False
    return not unknown


def check_index(idx: Path, embedder, history: dict[int, set[int]]) -> dict[str, int]:
    """Assert the index is whole and consistent; return ``{doc_id: rev}`` of what it holds."""
    if not (idx / "beleg.json").exists():
        return {}  # killed before the index was created
    # Open it as a user would first (this also completes a schema a kill interrupted).
    kb = beleg.open(idx, create=False, embedder=embedder)
    try:
        return _check_catalog(idx, embedder, history, kb)
    finally:
        kb.close()


def _check_catalog(idx: Path, embedder, history: dict[int, set[int]], kb: beleg.KnowledgeBase) -> dict[str, int]:
    db = sqlite3.connect(idx / "catalog.sqlite")
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("PRAGMA foreign_key_check").fetchall() == []
        docs = {r[0]: (r[1], json.loads(r[2]), r[3])
                for r in db.execute("SELECT doc_id, source, metadata, text FROM documents")}
        chunks: dict[str, list[tuple]] = {}
        for row in db.execute('SELECT c.doc_id, c.ordinal, c.start, c."end", c.text, c.chunk_id, e.vector '
                              "FROM chunks c LEFT JOIN embeddings e ON e.embed_hash = c.embed_hash "
                              "ORDER BY c.doc_id, c.ordinal"):
            chunks.setdefault(row[0], []).append(row[1:])
    finally:
        db.close()
    assert set(chunks) <= set(docs), f"chunks without a document: {set(chunks) - set(docs)}"
    config = IndexConfig.from_json(json.loads((idx / "beleg.json").read_text(encoding="utf-8")))
    held = {}
    for doc_id, (source, meta, text) in docs.items():
        i, rev = int(doc_id.split("-")[1]), int(meta["rev"])
        assert rev in history[i], f"{doc_id} holds revision {rev}, never written"
        assert set(MARKER.findall(text)) == {(f"{i:03d}", str(rev))}, f"{doc_id}: text and metadata disagree"
        mine = chunks.get(doc_id, [])
        assert [c[0] for c in mine] == list(range(len(mine))) and mine, f"{doc_id}: ordinals {[c[0] for c in mine]}"
        for ordinal, start, end, chunk_text, _, vector in mine:
            assert chunk_text == text[start:end], f"{doc_id}#{ordinal} is not its document's text"
            assert set(MARKER.findall(chunk_text)) == {(f"{i:03d}", str(rev))}, f"{doc_id}#{ordinal}: mixed revisions"
            assert vector is not None and len(vector) == 4 * embedder.dim, f"{doc_id}#{ordinal} has no vector"
        # The chunks are exactly those chunking the stored text gives: none missing, none extra.
        parsed = reader_for(Path(source)).read(text.encode(), Path(source))
        title = Document(doc_id, source, text, meta, "").title
        expected = [c.chunk_id for c in chunk_document(doc_id, parsed, title, config.chunking)]
        assert [c[4] for c in mine] == expected, f"{doc_id}: stored chunks differ from its text's chunking"
        held[doc_id] = rev
    for mode in ("bm25", "hybrid"):
        hits = kb.search("harbor lantern revision part", mode=mode, k=20)
        assert len(hits) == min(20, sum(len(c) for c in chunks.values()))
        for hit in hits:
            assert set(MARKER.findall(hit.text)) == {(hit.doc_id[-3:], str(hit.metadata["rev"]))}
    return held


def test_sigkill_during_ingest_never_leaves_a_partial_document(tmp_path: Path, embedder) -> None:
    rng = random.Random(20260214)
    corpus, idx = tmp_path / "corpus", tmp_path / "index"
    corpus.mkdir()
    current: dict[int, int] = {}  # file on disk → revision
    history: dict[int, set[int]] = {i: set() for i in range(N_DOCS)}

    def write(i: int, rev: int) -> None:
        (corpus / f"doc{i:03d}.md").write_text(doc_text(i, rev), encoding="utf-8")
        current[i] = rev
        history[i].add(rev)

    for i in range(N_DOCS):
        write(i, 1)
    sync = ["--sync"] if cli_supports_sync() else []
    base_cmd = ["ingest", str(corpus), "--index", str(idx), "--json", "--no-progress", *sync]
    kills, kinds, lost, iteration = 0, [], [], 0
    # Kill kinds, in a seeded order: a random delay (start-up, model load, first batch),
    # just after the next commit (mid-embedding of the next batch or inside the next
    # commit), and certainly inside a write transaction.
    plan = ["timed", "timed", "after-commit", "in-txn", "timed", "after-commit", "in-txn", "timed",
            "after-commit", "timed", "in-txn", "after-commit"]
    started = time.monotonic()
    while kills < len(plan) and iteration < 2 * len(plan):
        kind = plan[kills]
        if iteration > 0:  # new revisions, deletions and re-additions between runs
            for i in rng.sample(sorted(current), 6):
                write(i, current[i] + 1)
            for i in rng.sample(sorted(current), 1):
                (corpus / f"doc{i:03d}.md").unlink()
                del current[i]
            gone = [i for i in range(N_DOCS) if i not in current]
            if gone and rng.random() < 0.5:
                i = rng.choice(gone)
                write(i, max(history[i]) + 1)
        iteration += 1
        env = dict(os.environ, CRASH_FLUSH=str(rng.choice([4, 8, 16])))
        stall = tmp_path / f"stall{iteration}"
        if kind == "in-txn":
            env.update(CRASH_STALL_AFTER=str(rng.randint(1, 3)), CRASH_STALL_FILE=str(stall))
        proc = subprocess.Popen([sys.executable, "-c", DRIVER, *base_cmd], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            if kind == "timed":
                time.sleep(rng.uniform(0.05, 2.0))
            elif kind == "in-txn":
                deadline = time.monotonic() + 60
                while not stall.exists() and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.005)
            else:
                deadline = time.monotonic() + 60
                gen0 = None
                while proc.poll() is None and time.monotonic() < deadline:
                    gen = _generation(idx)
                    if gen0 is None:
                        gen0 = gen
                    elif gen != gen0:
                        break
                    time.sleep(0.005)
                time.sleep(rng.uniform(0.0, 0.15))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
                kinds.append(kind)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 0, err.decode()
        held = check_index(idx, embedder, history)
        if proc.returncode == -signal.SIGKILL:  # how much of the run the kill threw away
            lost.append(sum(held.get(f"doc-{i:03d}") != rev for i, rev in current.items()))

    assert kills >= 8, f"only {kills} kills landed ({kinds})"
    assert sum(n > 0 for n in lost) >= 6, f"kills rarely interrupted work: {lost}"
    # A full run without a kill finishes the job: no failures, exactly the current files.
    final = subprocess.run([sys.executable, "-m", "beleg.cli.main", *base_cmd], capture_output=True, timeout=120,
                           check=False)
    assert final.returncode == 0, final.stderr.decode()
    report = json.loads(final.stdout)
    assert report["failed"] == 0 and report["failures"] == []
    assert report["added"] + report["updated"] + report["unchanged"] == len(current)
    if not sync:  # the CLI cannot prune yet: the library can
        with beleg.open(idx, create=False, embedder=embedder) as kb:
            assert kb.ingest([str(corpus)], sync=True, progress=False).failures == []
    held = check_index(idx, embedder, history)
    assert held == {f"doc-{i:03d}": rev for i, rev in current.items()}
    print(f"{kills} kills ({', '.join(kinds)}) in {iteration} runs, documents behind after each: {lost}, "
          f"{time.monotonic() - started:.1f}s")


def _generation(idx: Path) -> int | None:
    """The catalog's generation as another process sees it (None before it exists)."""
    path = idx / "catalog.sqlite"
    if not path.exists():
        return None
    db = sqlite3.connect(path, timeout=30)
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    except sqlite3.OperationalError:  # schema not created yet
        return None
    finally:
        db.close()
    return int(row[0]) if row else 0


def test_a_chunk_moving_between_documents_in_one_batch_keeps_its_vector(tmp_path: Path, embedder) -> None:
    from beleg.ingest.pipeline import TextSource

    shared = "Contact support at support@example.com for a replacement part."
    with beleg.open(tmp_path / "index", embedder=embedder) as kb:
        kb.ingest_texts([TextSource("a", shared, title="FAQ", doc_id="a"),
                         TextSource("b", "Opening hours are nine to five.", title="FAQ", doc_id="b")], progress=False)
        # The shared paragraph moves from a to b; both replacements commit in one batch.
        kb.ingest_texts([TextSource("a", "Returns are accepted within thirty days.", title="FAQ", doc_id="a"),
                         TextSource("b", shared, title="FAQ", doc_id="b")], progress=False)
        missing = kb.catalog.db.execute("SELECT c.doc_id FROM chunks c LEFT JOIN embeddings e "
                                        "ON e.embed_hash = c.embed_hash WHERE e.vector IS NULL").fetchall()
        assert missing == []
        assert kb.search("replacement part support contact", mode="dense", k=1)[0].doc_id == "b"
