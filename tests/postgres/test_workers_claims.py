"""The claims table of the PostgreSQL ingest workers: who wins, leases, takeover, heartbeat,
done-in-the-commit, and release after a failure."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from psycopg import sql

import beleg
from beleg.errors import ConfigError
from beleg.index.config import IndexConfig
from beleg.index.postgres.claims import DEFAULT_LEASE_S, PostgresClaims, lease_from_env
from beleg.index.postgres.config import PostgresLocation, connect
from beleg.index.postgres.schema import SCHEMA_VERSION
from beleg.ingest.claims import source_key


class Embedder:
    spec, dim, fingerprint = "recording", 8, "recording:1"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def embed_documents(self, texts):
        self.calls += 1
        if self.fail:
            raise RuntimeError("embedding endpoint down")
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    embed_queries = embed_documents


@pytest.fixture
def location(pg_location: str) -> PostgresLocation:
    beleg.open(pg_location, IndexConfig(embedder="recording"), embedder=Embedder()).close()  # creates the tables
    return PostgresLocation.parse(pg_location)


def claims(location: PostgresLocation, lease_s: float = DEFAULT_LEASE_S) -> PostgresClaims:
    return PostgresClaims(connect(location), location, lease_s=lease_s)


def set_row(location: PostgresLocation, source: str, worker: str, lease_from_now_s: float) -> None:
    with connect(location) as conn:
        conn.execute(sql.SQL("INSERT INTO {}.ingest_claims VALUES (%s, %s, now(), now() + %s * interval '1 second') "
                             "ON CONFLICT (source_key) DO UPDATE SET worker = EXCLUDED.worker, "
                             "lease_until = EXCLUDED.lease_until").format(sql.Identifier(location.schema)),
                     (source_key(source), worker, lease_from_now_s))


def rows(location: PostgresLocation) -> int:
    with connect(location) as conn:
        return conn.execute(sql.SQL("SELECT count(*) FROM {}.ingest_claims").format(
            sql.Identifier(location.schema))).fetchone()[0]


def test_one_worker_wins_a_source_until_it_lets_go(location: PostgresLocation) -> None:
    a, b = claims(location), claims(location)
    try:
        assert a.try_claim("docs/x.md") and a.try_claim("docs/x.md")  # again: still ours
        assert not b.try_claim("docs/x.md")
        assert b.try_claim("docs/y.md")
        assert a.holder("docs/x.md") == a.worker
        a.release("docs/x.md")
        assert b.try_claim("docs/x.md")
        b.release_all()
        assert rows(location) == 0
    finally:
        a.conn.close()
        b.conn.close()


def test_an_expired_lease_of_another_machine_is_taken_over_a_live_one_is_not(location: PostgresLocation) -> None:
    c = claims(location)
    try:
        set_row(location, "docs/live.md", "otherhost 4242 cafe", 30)
        set_row(location, "docs/expired.md", "otherhost 4242 cafe", -1)
        assert not c.try_claim("docs/live.md")  # another host's pid cannot be checked: the lease decides
        assert c.try_claim("docs/expired.md")
        assert c.holder("docs/expired.md") == c.worker
    finally:
        c.release_all()
        c.conn.close()


def test_a_claim_of_a_dead_process_on_this_host_is_taken_over_at_once(location: PostgresLocation) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    c = claims(location)
    try:
        import socket

        set_row(location, "docs/a.md", f"{socket.gethostname()} {dead.pid} deadbeef", 600)
        assert c.try_claim("docs/a.md")
    finally:
        c.release_all()
        c.conn.close()


def test_the_heartbeat_keeps_a_slow_workers_claim(location: PostgresLocation) -> None:
    slow, other = claims(location, lease_s=1.0), claims(location)
    try:
        assert slow.try_claim("docs/big.pdf")
        time.sleep(2.5)  # past the lease: only the heartbeat keeps it
        assert not other.try_claim("docs/big.pdf")
        slow.release_all()
        assert other.try_claim("docs/big.pdf")
    finally:
        other.release_all()
        slow.conn.close()
        other.conn.close()


def test_done_in_the_commit_transaction_and_back_on_rollback(location: PostgresLocation) -> None:
    c, other = claims(location), claims(location)
    try:
        assert c.try_claim("docs/a.md") and c.try_claim("docs/b.md")
        with pytest.raises(RuntimeError), c.conn.transaction():
            assert c.commit(["docs/a.md", "docs/b.md"]) == set()
            raise RuntimeError("the document write failed")
        assert rows(location) == 2 and not other.try_claim("docs/a.md")  # rolled back: still claimed
        set_row(location, "docs/b.md", other.worker, 60)  # b's lease ran out and another worker took it
        with c.conn.transaction():
            assert c.commit(["docs/a.md", "docs/b.md"]) == {"docs/b.md"}
        assert other.holder("docs/b.md") == other.worker and other.holder("docs/a.md") is None
        c.release_all()
        assert other.holder("docs/b.md") == other.worker  # never removes a claim it lost
    finally:
        c.conn.close()
        other.conn.close()


def test_claims_are_released_after_failed_files_and_a_failed_run(location: PostgresLocation, tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "good.md").write_text("# Good\n\nPump oil is changed yearly.\n")
    (corpus / "broken.md").write_bytes(b"\xff\xfe\x00broken")
    (corpus / "empty.md").write_text("")
    with beleg.open(location.url, embedder=Embedder()) as kb:
        report = kb.ingest([str(corpus)], progress="none")
    assert report.count("added") == 1 and report.count("added") + report.count("failed") + report.count("skipped") == 3
    assert rows(location) == 0
    (corpus / "new.md").write_text("# New\n\nA new note.\n")
    with beleg.open(location.url, embedder=Embedder(fail=True)) as kb, pytest.raises(Exception, match="endpoint down"):
        kb.ingest([str(corpus)], progress="none")
    assert rows(location) == 0  # the run's claims went with its error, for the next run to take


@pytest.mark.parametrize("value", ["0", "-5", "nan", "soon", "0.5"])
def test_a_bad_lease_setting_is_one_clear_error(value: str) -> None:
    with pytest.raises(ConfigError, match="BELEG_CLAIM_LEASE_S.*at least 1"):
        lease_from_env(value)


def test_the_lease_setting() -> None:
    assert lease_from_env(None) == lease_from_env("") == DEFAULT_LEASE_S
    assert lease_from_env("120") == 120.0


def test_an_index_from_before_the_claims_table_gets_it_when_opened(location: PostgresLocation) -> None:
    s = sql.Identifier(location.schema)
    with connect(location) as conn:  # what a schema at version 1 looks like
        conn.execute(sql.SQL("DROP TABLE {}.ingest_claims, {}.embedding_claims").format(s, s))
        conn.execute(sql.SQL("DELETE FROM {}.schema_migrations WHERE version > 1").format(s))
    with beleg.open(location.url, embedder=Embedder()) as kb:
        assert kb.store.conn.execute(sql.SQL("SELECT array_agg(version ORDER BY version) FROM {}.schema_migrations")
                                     .format(s)).fetchone() == (list(range(1, SCHEMA_VERSION + 1)),)
    assert rows(location) == 0


# ---------------------------------------------------------------------- texts claimed by hash
SHARED = "# Shared\n\nThe same paragraph appears in many files of this corpus.\n"


def shared_hash(corpus: Path, scratch: Path) -> str:
    """The vector key of the one chunk in ``corpus``: the hash of the text the pipeline embeds
    (found by ingesting it into a scratch folder index)."""
    import hashlib

    embedder = CountingEmbedder()
    with beleg.open(scratch, IndexConfig(embedder="recording"), embedder=embedder) as kb:
        kb.ingest([str(corpus)], progress="none")
    [text] = embedder.texts
    return hashlib.sha256(text.encode()).hexdigest()


class CountingEmbedder(Embedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts):
        self.texts.extend(texts)
        return super().embed_documents(texts)


def test_a_text_another_worker_is_embedding_is_waited_for_not_embedded(location: PostgresLocation,
                                                                        tmp_path: Path) -> None:
    import threading

    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "copy.md").write_text(SHARED)
    other = claims(location)  # a worker that has claimed the text and is embedding it now
    embedder = CountingEmbedder()
    reports = []
    h = shared_hash(corpus, tmp_path / "scratch")
    with beleg.open(location.url, embedder=embedder) as kb:
        assert other.claim_texts([h]) == {h}
        worker = threading.Thread(target=lambda: reports.append(kb.ingest([str(corpus)], progress="none")))
        worker.start()
        time.sleep(1.0)
        assert worker.is_alive() and embedder.texts == []  # waiting for the other worker's vector
        vector = np.full(8, 8 ** -0.5, dtype=np.float32)
        other.publish({h: vector})
        worker.join(30)
        assert not worker.is_alive()
        stored = kb.store.conn.execute(sql.SQL("SELECT embedding::text FROM {}.chunks").format(
            sql.Identifier(location.schema))).fetchone()[0]
    assert reports[0].count("added") == 1 and reports[0].embedded == 0 and embedder.texts == []
    assert np.allclose(np.array(eval(stored)), vector)  # the other worker's vector, not a new one
    other.release_all()
    other.conn.close()


def test_a_text_whose_holder_died_is_embedded_here(location: PostgresLocation, tmp_path: Path) -> None:
    import socket

    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "copy.md").write_text(SHARED)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    embedder = CountingEmbedder()
    h = shared_hash(corpus, tmp_path / "scratch")
    with beleg.open(location.url, embedder=embedder) as kb:
        with connect(location) as conn:  # claimed by a worker that was killed before it published
            conn.execute(sql.SQL("INSERT INTO {}.embedding_claims VALUES (%s, %s, now() + interval '10 minutes')")
                         .format(sql.Identifier(location.schema)), (h, f"{socket.gethostname()} {dead.pid} dead"))
        report = kb.ingest([str(corpus)], progress="none")
        left = kb.store.conn.execute(sql.SQL("SELECT count(*) FROM {}.embedding_claims").format(
            sql.Identifier(location.schema))).fetchone()[0]
    assert report.count("added") == 1 and report.embedded == 1 and len(embedder.texts) == 1
    assert left == 0  # done with the commit


def test_a_text_committed_before_the_claim_is_not_claimed(location: PostgresLocation, tmp_path: Path) -> None:
    """Another worker committed the text between this worker's look-up and its claim (the
    other's row went with that commit): embedding it again would be the second time."""
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "copy.md").write_text(SHARED)
    h = shared_hash(corpus, tmp_path / "scratch")
    with beleg.open(location.url, embedder=Embedder()) as kb:
        kb.ingest([str(corpus)], progress="none")
    c = claims(location)
    try:
        assert c.claim_texts([h, "f" * 64]) == {"f" * 64}
        with connect(location) as conn:
            held = conn.execute(sql.SQL("SELECT embed_hash FROM {}.embedding_claims").format(
                sql.Identifier(location.schema))).fetchall()
        assert held == [("f" * 64,)]
    finally:
        c.release_all()
        c.conn.close()


def test_a_file_whose_claim_was_taken_over_before_the_commit_is_not_written(location: PostgresLocation,
                                                                             tmp_path: Path, monkeypatch) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nValve a is checked monthly.\n")
    (corpus / "b.md").write_text("# B\n\nValve b is checked weekly.\n")
    stolen = str(corpus / "b.md")

    class Stalled(PostgresClaims):
        """A worker that stalled past its lease: another worker took b.md over meanwhile."""

        def commit(self, sources, embedded=()):
            set_row(location, stolen, "otherhost 7 cafe", 60)
            return super().commit(sources, embedded)

    with beleg.open(location.url, embedder=Embedder()) as kb:
        monkeypatch.setattr(kb, "_ingest_claims", lambda: Stalled(kb.store.conn, kb.location))
        report = kb.ingest([str(corpus)], progress="none")
        stored = sorted(Path(r.source).name for r in kb.store.document_records())
    by_name = {Path(f.source).name: f for f in report.files}
    assert by_name["a.md"].status == "added" and stored == ["a.md"]
    assert by_name["b.md"].status == "skipped" and "took this file over" in by_name["b.md"].reason
    with connect(location) as conn:  # the other worker's claim is left alone
        assert conn.execute(sql.SQL("SELECT worker FROM {}.ingest_claims").format(
            sql.Identifier(location.schema))).fetchall() == [("otherhost 7 cafe",)]
