"""Reads during a write: searches while another process ingests new revisions.

Every heading and paragraph of a document carries ``DOC-nnn REV-r`` and its front matter
``rev: r``, so each hit tells which revision its text (read from the catalog at query
time) and its metadata (from the in-memory snapshot) belong to. While a subprocess
replaces every document's REV-1 by REV-2 and adds new documents, one document per
commit, the test process searches without pause and requires every result set to be a
consistent view: a hit's text and metadata of one revision, all hits of a document from
the same revision, and each document either whole or absent. Afterwards a new search
sees REV-2 everywhere.
"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import pytest

import beleg

pytestmark = pytest.mark.slow

MARKER = re.compile(r"DOC-(\d{3}) REV-(\d+)")
SECTIONS = 4
WORDS = [
    "harbor", "lantern", "granite", "orchard", "meadow", "copper", "falcon", "willow", "ember", "quartz",
    "river", "summit", "canyon", "beacon", "thistle", "saffron", "cobalt", "juniper", "marble", "velvet",
    "tundra", "prairie", "glacier", "lagoon", "cedar", "maple", "aspen", "birch",
]

# `beleg ingest` through the CLI's entry point, committing one document per transaction
# (a batch of SECTIONS chunks), so a reader meets many generations during one run. Each
# commit is followed by a pause so that the reader meets many generations however fast
# this machine embeds (a fast one finished all commits between three snapshot loads).
DRIVER = textwrap.dedent("""
    import os, sys, time
    import beleg.ingest.pipeline as pipeline

    pipeline._FLUSH_CHUNKS = int(os.environ["CONCURRENCY_FLUSH"])
    commit = pipeline.Ingestor._commit

    def commit_then_pause(self, *args, **kwargs):
        commit(self, *args, **kwargs)
        time.sleep(float(os.environ["CONCURRENCY_PAUSE"]))

    pipeline.Ingestor._commit = commit_then_pause
    from beleg.cli.main import main

    sys.exit(main(sys.argv[1:]))
""")


def doc_text(i: int, rev: int) -> str:
    rng = random.Random(i * 1000 + rev)
    marker = f"DOC-{i:03d} REV-{rev}"
    parts = [f"---\nid: doc-{i:03d}\ntitle: Document {i}\nrev: {rev}\n---\n# {marker} document {i}\n"]
    for s in range(SECTIONS):
        parts.append(f"## {marker} part {s}\n")
        parts.append(f"{marker} " + " ".join(rng.choice(WORDS) for _ in range(10)) + ".\n")
    return "\n".join(parts)


def check_hits(hits, where_rev: int | None = None) -> dict[str, int]:
    """Assert one result set is a consistent view; return ``{doc_id: rev}`` of its documents."""
    revs: dict[str, set[int]] = defaultdict(set)
    counts: dict[str, int] = defaultdict(int)
    for hit in hits:
        found = set(MARKER.findall(hit.text))
        assert len(found) == 1, f"{hit.chunk_id}: text of several revisions {found}"
        (num, rev), = found
        assert hit.doc_id == f"doc-{num}", f"{hit.chunk_id}: text of DOC-{num} under {hit.doc_id}"
        # Snapshot metadata and the text read at query time must be the same revision.
        assert int(hit.metadata["rev"]) == int(rev), (
            f"{hit.doc_id}: text is REV-{rev}, metadata says rev {hit.metadata['rev']}")
        if where_rev is not None:
            assert int(rev) == where_rev
        revs[hit.doc_id].add(int(rev))
        counts[hit.doc_id] += 1
    for doc_id, seen in revs.items():
        assert len(seen) == 1, f"{doc_id}: hits of revisions {sorted(seen)} in one result"
    return {doc_id: seen.pop() for doc_id, seen in revs.items()}


def test_searches_during_ingest_see_whole_revisions(tmp_path: Path, embedder) -> None:
    corpus, idx = tmp_path / "corpus", tmp_path / "index"
    corpus.mkdir()
    old = list(range(12))
    for i in old:
        (corpus / f"doc{i:03d}a.md").write_text(doc_text(i, 1), encoding="utf-8")
    with beleg.open(idx, embedder=embedder) as kb:
        assert kb.ingest([str(corpus)], progress=False).failures == []

    # REV-2 of every document, and new documents whose files sort between the old ones.
    new = [100 + i for i in range(0, 12, 3)]
    for i in old:
        (corpus / f"doc{i:03d}a.md").write_text(doc_text(i, 2), encoding="utf-8")
    for j, i in enumerate(new):
        (corpus / f"doc{3 * j:03d}b.md").write_text(doc_text(i, 2), encoding="utf-8")
    every = {f"doc-{i:03d}" for i in old + new}

    kb = beleg.open(idx, create=False, embedder=embedder)
    # Provoke the race: after the snapshot has read the documents, wait for the writer's
    # next commit before it reads the chunks and terms. A snapshot must still be one
    # generation, not documents of one and chunks of the next.
    probe = sqlite3.connect(idx / "catalog.sqlite")
    documents_meta, races = kb.catalog.documents_meta, []

    def generation() -> int:
        return int(probe.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def documents_meta_then_a_commit():  # type: ignore[no-untyped-def]
        rows = documents_meta()
        if sum(races) >= 4:  # enough races provoked: let later loads see commits as they come
            return rows
        before, deadline = generation(), time.monotonic() + 0.5
        while generation() == before and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.002)
        races.append(generation() != before)
        return rows

    kb.catalog.documents_meta = documents_meta_then_a_commit  # type: ignore[method-assign]
    everything = "DOC REV part"  # matches every chunk
    schedule = [(everything, "bm25", None), ("harbor lantern granite", "bm25", 1), (everything, "hybrid", None),
                ("document part meadow", "bm25", 2), (everything, "bm25", None),
                ("copper falcon willow ember", "hybrid", None), (everything, "bm25", None), (everything, "bm25", 2)]
    env = dict(os.environ, CONCURRENCY_FLUSH=str(SECTIONS), CONCURRENCY_PAUSE="0.15")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, "ingest", str(corpus), "--index", str(idx), "--json",
                             "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    searches, generations, views = 0, set(), set()
    try:
        while proc.poll() is None:
            query, mode, where_rev = schedule[searches % len(schedule)]
            hits = kb.search(query, mode=mode, k=200, where=f"rev = {where_rev}" if where_rev else None)
            seen = check_hits(hits, where_rev)
            if query == everything and where_rev is None:
                # Every document is whole or absent (absent: replaced between this
                # search's snapshot and its hydration).
                counts: dict[str, int] = defaultdict(int)
                for hit in hits:
                    counts[hit.doc_id] += 1
                assert set(counts.values()) <= {SECTIONS}, dict(counts)
            if where_rev is None:
                views.add(tuple(sorted(set(seen.values()))))
            generations.add(kb.search_index().generation)
            searches += 1
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    report = json.loads(out)
    assert report["failed"] == 0 and report["updated"] == len(old) and report["added"] == len(new)

    # The reader really met the ingest half way: several generations, mixed views.
    assert len(generations) >= 4, f"{searches} searches saw generations {sorted(generations)}"
    assert sum(races) >= 3, f"a commit fell between a snapshot's reads only {sum(races)} times"
    assert (1, 2) in views, f"no search saw old and new documents side by side: {views}"

    # Read after write: the same KnowledgeBase, and a fresh one, see REV-2 everywhere.
    fresh = beleg.open(idx, create=False, embedder=embedder)
    try:
        for reader in (kb, fresh):
            for mode in ("bm25", "hybrid", "dense"):
                hits = reader.search("DOC REV part", mode=mode, k=200)
                assert check_hits(hits) == {doc_id: 2 for doc_id in every}, mode
                assert len(hits) == SECTIONS * len(every)
            assert reader.search("DOC REV part", mode="bm25", k=200, where="rev = 1") == []
    finally:
        fresh.close()
        kb.close()
        probe.close()
    print(f"{searches} searches during the ingest over {len(generations)} generations, "
          f"{sum(races)} commits inside a snapshot load")


def test_a_search_that_meets_replaced_chunks_searches_the_new_state(tmp_path: Path, embedder) -> None:
    """A commit between building the snapshot and loading the hits must not shorten the result."""
    docs = tmp_path / "docs"
    docs.mkdir()
    body = "\n\n".join(f"## Part {i}\n\nRelay note {i} REV-1." for i in range(3))
    (docs / "relay.md").write_text(f"# Relay\n\n{body}\n", encoding="utf-8")
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(docs)], progress=False)
        stale = kb.search_index()
        (docs / "relay.md").write_text(f"# Relay\n\n{body.replace('REV-1', 'REV-2')}\n", encoding="utf-8")
        with beleg.open(tmp_path / "kb", embedder=embedder) as writer:
            assert writer.ingest([str(docs)], progress=False).count("updated") == 1
        served = []
        fresh = kb.search_index

        def search_index():  # the first call hands out the view from before the commit
            served.append(1)
            return stale if len(served) == 1 else fresh()

        kb.search_index = search_index  # type: ignore[method-assign]
        hits = kb.search("relay note", mode="bm25", k=10)
        assert len(served) >= 2  # the stale view, then a fresh one (later stages may take it again)
        assert len(hits) == kb.status()["chunks"] and sum("REV-2" in h.text for h in hits) == 3
        assert not any("REV-1" in h.text for h in hits)
