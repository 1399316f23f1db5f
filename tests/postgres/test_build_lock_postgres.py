"""While ``beleg reindex`` builds a new version of a PostgreSQL index, document writes,
deletions, ``switch`` and ``gc`` are refused (IndexBusyError), as for an index folder
(tests/test_erasure_versions.py): the build reads the live documents once, so an ingest
during it would be lost from the new version and a deletion brought back by the switch. The
marker is a session advisory lock (beleg.index.postgres.versions.BuildLock): a killed
reindex leaves nothing behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

import beleg
from beleg.cli.main import main
from beleg.errors import IndexStateError
from beleg.index.config import IndexConfig
from beleg.index.postgres import versions as pg_versions
from beleg.index.postgres.config import PostgresLocation
from beleg.index.versions import IndexBusyError
from beleg.ingest.chunking import ChunkingConfig
from beleg.ingest.pipeline import TextSource

REPO = Path(__file__).resolve().parents[2]
# Long enough that the new version's 60-token windows are new chunk texts, which it embeds.
FILLER = " ".join(f"Step {i} of the procedure checks valve {i} and records its pressure." for i in range(30))
BEFORE = TextSource("before.md", f"# Before\n\nWritten before the build, frobnitz-1. {FILLER}\n")
SECRET = TextSource("secret.md", f"# Secret\n\nAn employee's address, to be erased: Quux-Allee 7. {FILLER}\n")
DURING = TextSource("during.md", "# During\n\nWritten while the build runs, frobnitz-2.\n")
WINDOW = IndexConfig(ChunkingConfig("window", 60, 10))


@pytest.fixture(autouse=True)
def _lock_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    # A lock wait that would never end fails the test instead of hanging it.
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=30000")


def sources_by_version(root: PostgresLocation) -> dict[str, list[str]]:
    """Every version's stored document sources, read from the database (version → sources)."""
    with psycopg.connect(root.conninfo, autocommit=True) as conn:
        return {v.version: [r[0] for r in conn.execute(sql.SQL("SELECT source FROM {}.documents ORDER BY source")
                                                       .format(sql.Identifier(v.schema)))]
                for v in pg_versions.list_versions(conn, root.schema)}


def build_record(root: PostgresLocation) -> str | None:
    with psycopg.connect(root.conninfo, autocommit=True) as conn:
        row = conn.execute(sql.SQL("SELECT value FROM {}.meta WHERE key = %s").format(sql.Identifier(root.schema)),
                           (pg_versions.BUILD_KEY,)).fetchone()
        return row[0] if row else None


class WritesDuringBuild:
    """An embedder that, while a reindex embeds, tries (once) the writes the build would miss,
    through another process's view of the index (a second KnowledgeBase)."""

    def __init__(self, inner: Any, root: PostgresLocation, doc_id: str, live_version: str,
                 only: tuple[str, ...] = ("ingest", "delete", "switch", "gc")) -> None:
        self._inner, self.root, self.doc_id, self.live_version = inner, root, doc_id, live_version
        self.only = only
        self.refusals: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        if not self.refusals:
            with beleg.open(self.root.url, embedder=self._inner) as other:
                for name, call in (("ingest", lambda: other.ingest_texts([DURING], progress=False)),
                                   ("delete", lambda: other.delete([self.doc_id])),
                                   ("switch", lambda: pg_versions.switch(self.root, self.live_version)),
                                   ("gc", lambda: pg_versions.collect(self.root))):
                    if name not in self.only:
                        continue
                    try:
                        call()
                    except IndexBusyError as exc:
                        self.refusals[name] = str(exc)
                    else:
                        self.refusals[name] = "ALLOWED"
        return self._inner.embed_documents(texts)


def test_writes_and_deletions_are_refused_while_a_reindex_builds(root: PostgresLocation, embedder: Any) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE, SECRET], progress=False)
        live = kb.config.index_version
        secret = next(r.doc_id for r in kb.store.document_records() if r.source == "secret.md")
        spy = WritesDuringBuild(embedder, root, secret, live)
        new = kb.reindex(WINDOW, progress=False, embedder=spy)["version"]

    assert set(spy.refusals) == {"ingest", "delete", "switch", "gc"}
    for name, message in spy.refusals.items():
        assert message != "ALLOWED", f"{name} was allowed during the build"
        assert f"reindex to version {new}" in message and f"pid {os.getpid()}" in message, message
        assert "since" in message and "\n" not in message, message  # one line for "beleg: error: ..."
    assert build_record(root) is None, "the build removes its record"
    # Nothing was half done: the refused ingest is in no version, the refused delete left the
    # document in every one (the new version included, which the deletion would have missed).
    assert sources_by_version(root) == {live: ["before.md", "secret.md"], new: ["before.md", "secret.md"]}

    pg_versions.switch(root, new)
    with beleg.open(root.url, embedder=embedder) as kb:  # after the build, writes go through again
        assert kb.config.index_version == new
        kb.ingest_texts([DURING], progress=False)
        erased = kb.delete([secret])
        assert [v["documents"] for v in erased["versions"]] == [1, 1]  # from every version
        assert not kb.search("Quux-Allee", mode="bm25", self_query=False)
    assert sources_by_version(root) == {live: ["before.md"], new: ["before.md", "during.md"]}


def test_a_deletion_during_a_build_is_not_brought_back_by_the_switch(root: PostgresLocation, embedder: Any) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE, SECRET], progress=False)
        live = kb.config.index_version
        secret = next(r.doc_id for r in kb.store.document_records() if r.source == "secret.md")
        spy = WritesDuringBuild(embedder, root, secret, live, only=("delete",))
        new = kb.reindex(WINDOW, progress=False, embedder=spy)["version"]
    pg_versions.switch(root, new)
    versions = sources_by_version(root)
    # A deletion that went through in the live version must not come back with the switch.
    assert "secret.md" in versions[live] or "secret.md" not in versions[new], (
        f"the document deleted during the build is back in the new live version: {versions}")
    assert spy.refusals["delete"].startswith(f"a reindex to version {new} is running"), spy.refusals
    assert versions == {live: ["before.md", "secret.md"], new: ["before.md", "secret.md"]}
    with beleg.open(root.url, embedder=embedder) as kb:  # after the build, it erases from every version
        assert [v["documents"] for v in kb.delete([secret])["versions"]] == [1, 1]
    assert sources_by_version(root) == {live: ["before.md"], new: ["before.md"]}


# A reindex in a process of its own that stops at its first embedding until it is killed.
_BLOCKED_REINDEX = """
import sys, time
import beleg
from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig

class Stuck:
    def __init__(self, inner):
        self._inner = inner
    def __getattr__(self, name):
        return getattr(self._inner, name)
    def embed_documents(self, texts):
        print("building", flush=True)
        time.sleep(600)

inner = load_embedder(DEFAULT_EMBEDDER)
with beleg.open(sys.argv[1], embedder=inner) as kb:
    kb.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False, embedder=Stuck(inner))
"""


def test_a_killed_reindex_leaves_no_lock_behind(root: PostgresLocation, embedder: Any) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    builder = subprocess.Popen([sys.executable, "-c", _BLOCKED_REINDEX, root.url], stdout=subprocess.PIPE,
                               text=True, env=env)
    try:
        assert builder.stdout is not None and builder.stdout.readline() == "building\n", "the reindex did not start"
        with beleg.open(root.url, embedder=embedder) as kb:
            with pytest.raises(IndexBusyError, match=f"reindex to version .*[(]pid {builder.pid} on"):
                kb.ingest_texts([DURING], progress=False)
            builder.send_signal(signal.SIGKILL)  # no cleanup runs: only the lost session frees the lock
            builder.wait(30)
            deadline = time.monotonic() + 30
            while True:  # the server notices the closed connection at once; allow for a slow machine
                try:
                    kb.ingest_texts([DURING], progress=False)
                    break
                except IndexBusyError:
                    assert time.monotonic() < deadline, "the killed reindex still locks the index"
                    time.sleep(0.2)
            assert sorted(r.source for r in kb.store.document_records()) == ["before.md", "during.md"]
            # The same reindex, run again, resumes and catches up with what was written since.
            new = kb.reindex(WINDOW, progress=False)["version"]
        assert sources_by_version(root)[new] == ["before.md", "during.md"]
    finally:
        if builder.poll() is None:
            builder.kill()
            builder.wait()


class EndSessionDuringBuild:
    """An embedder during whose first call the database ends the session of the build lock
    (a restart, an administrator's pg_terminate_backend)."""

    def __init__(self, inner: Any, root: PostgresLocation) -> None:
        self._inner, self.root, self.ended = inner, root, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        if not self.ended:
            with psycopg.connect(self.root.conninfo, autocommit=True) as admin:
                (ended,) = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                    "AND mode = 'ExclusiveLock' AND database = (SELECT oid FROM pg_database "
                    "WHERE datname = current_database()) AND objsubid = 1 "
                    "AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)",
                    (f"beleg:build:{self.root.schema}",)).fetchone()
            assert ended == 1
            self.ended = True
        return self._inner.embed_documents(texts)


def test_a_build_whose_lock_session_ended_fails_instead_of_reporting_success(root: PostgresLocation,
                                                                             embedder: Any) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        with pytest.raises(IndexStateError, match="ended the session holding the build lock"):
            kb.reindex(WINDOW, progress=False, embedder=EndSessionDuringBuild(embedder, root))
        kb.ingest_texts([DURING], progress=False)  # the lock is gone with its session


def test_switch_refuses_a_version_without_writes_the_live_one_has(root: PostgresLocation, embedder: Any,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        new = kb.reindex(WINDOW, progress=False)["version"]
        kb.ingest_texts([DURING], progress=False)  # after the build: only in the live version
    assert main(["switch", new, "--index", root.url]) == 1
    err = capsys.readouterr().err
    assert "lacks 1 document(s) of the live version" in err and DURING.source in err, err
    assert len(err.strip().splitlines()) == 1
    assert main(["switch", new, "--index", root.url, "--allow-document-loss"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "1 document(s) of the previous live version" in err, err
    assert len(err.strip().splitlines()) == 1
    with beleg.open(root.url, embedder=embedder) as kb:  # and a version in step switches quietly
        assert kb.config.index_version == new
        third = kb.reindex(IndexConfig(ChunkingConfig("window", 80, 10)), progress=False)["version"]
    assert main(["switch", third, "--index", root.url]) == 0
    assert capsys.readouterr().err == ""


def test_an_index_opens_while_a_reindex_builds_after_a_detector_upgrade(root: PostgresLocation, embedder: Any) -> None:
    # Opening rewrites the chunk flags when the injection detector changed: a write, which a
    # build refuses, and the open failed with it. Now it goes on with the older flags (withholding
    # reads each retrieved chunk's text with the current detector) and the next open refreshes them.
    from beleg.ingest.injection_version import DETECTOR_VERSION

    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        kb.catalog.set_meta("injection_detector", "an older detector")
    with psycopg.connect(root.conninfo, autocommit=True) as builder:
        # What a running reindex holds (versions._BUILD_LOCK): writers take it shared, without waiting.
        builder.execute(pg_versions._build_lock("pg_advisory_lock"), (root.schema,))
        with beleg.open(root.url, embedder=embedder) as kb:
            assert [h.source for h in kb.search("frobnitz-1", mode="bm25", k=3)] == ["before.md"]
            assert kb.catalog.get_meta("injection_detector") == "an older detector"
    with beleg.open(root.url, embedder=embedder) as kb:
        assert kb.catalog.get_meta("injection_detector") == DETECTOR_VERSION
