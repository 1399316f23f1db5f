"""A PostgreSQL index switched to another version while a process holds the old one open:
its document writes are refused (they would land in a schema nobody opens any more), its
deletions still reach every version, and ``beleg gc`` keeps a version a running process has
registered as held (beleg.index.postgres.versions.VersionHold) until that process is gone."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg import sql

import beleg
from beleg.index.config import IndexConfig
from beleg.index.postgres import versions as pg_versions
from beleg.index.postgres.config import PostgresLocation
from beleg.index.versions import VersionNotLiveError
from beleg.ingest.chunking import ChunkingConfig
from beleg.ingest.pipeline import TextSource

BEFORE = TextSource("before.md", "# Before\n\nWritten before the switch, frobnitz-1.\n")
AFTER = TextSource("after.md", "# After\n\nWritten after the switch, frobnitz-2.\n")




def sources_by_version(root: PostgresLocation) -> dict[str, list[str]]:
    """Every version's stored document sources, read from the database (schema → sources)."""
    with psycopg.connect(root.conninfo, autocommit=True) as conn:
        out = {}
        for v in pg_versions.list_versions(conn, root.schema):
            rows = conn.execute(sql.SQL("SELECT source FROM {}.documents ORDER BY source").format(
                sql.Identifier(v.schema))).fetchall()
            out[v.schema] = [r[0] for r in rows]
        return out


def build_new_version(kb: Any) -> str:
    return kb.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)["version"]


def test_writes_through_an_index_opened_before_a_switch_are_refused_and_deletes_reach_every_version(
        root: PostgresLocation, embedder: Any) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        old_schema = kb.store.schema
        pg_versions.switch(root, build_new_version(kb))

        with pytest.raises(VersionNotLiveError, match="switched to another live version") as refused:
            kb.ingest_texts([AFTER], progress=False)
        assert "\n" not in str(refused.value)  # one line for the CLI's "beleg: error: ..."
        versions = sources_by_version(root)
        assert len(versions) == 2 and all(sources == ["before.md"] for sources in versions.values()), versions

        # Searches still answer from the version this object opened.
        assert kb.search("frobnitz", mode="bm25", self_query=False)
        # A deletion is not refused: it erases from every version, the new live one included.
        doc_id = kb.store.document_records()[0].doc_id
        erased = kb.delete([doc_id])
        assert erased["deleted"] == [doc_id] and [v["documents"] for v in erased["versions"]] == [1, 1]
        assert kb.store.schema == old_schema
    assert all(sources == [] for sources in sources_by_version(root).values())


class SwitchAtFirstEmbedding:
    """The real embedder, but an operator's ``beleg switch`` runs right before its next batch
    is embedded: after the ingest checked at its start that its version is live, before its
    commit."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.switch: Any = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        if self.switch is not None:
            switch, self.switch = self.switch, None
            switch()
        return self._inner.embed_documents(texts)


def test_a_switch_during_an_ingest_refuses_its_commit(root: PostgresLocation, embedder: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A lock wait that would never end (the switch waiting for a write lock the ingest holds)
    # fails the test instead of hanging it.
    monkeypatch.setenv("PGOPTIONS", "-c lock_timeout=30000")
    switching = SwitchAtFirstEmbedding(embedder)
    with beleg.open(root.url, embedder=switching) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        new = build_new_version(kb)
        switching.switch = lambda: pg_versions.switch(root, new)
        with pytest.raises(VersionNotLiveError):
            kb.ingest_texts([AFTER], progress=False)
        assert switching.switch is None  # the switch ran mid-ingest
    assert all(sources == ["before.md"] for sources in sources_by_version(root).values())
    with psycopg.connect(root.conninfo, autocommit=True) as conn:  # nor a claim or a published vector
        for table in ("ingest_claims", "embedding_claims"):
            assert conn.execute(sql.SQL("SELECT count(*) FROM {}.{}").format(
                sql.Identifier(root.schema), sql.Identifier(table))).fetchone()[0] == 0, table


def test_a_switch_waits_for_a_write_in_flight_on_the_live_version(root: PostgresLocation, embedder: Any,
                                                                  postgres_url: str) -> None:
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        new = build_new_version(kb)
        switched: list[Any] = []
        switch = threading.Thread(target=lambda: switched.append(pg_versions.switch(root, new)))
        with kb.store.transaction():  # a write in flight: it checked that its version is live
            switch.start()
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                deadline = time.monotonic() + 30
                while not admin.execute(  # the switch waits for the schema's write lock
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted "
                        "AND objid::bigint = hashtext(%s)::bigint & 4294967295",
                        (f"beleg:write:{kb.store.schema}",)).fetchone()[0]:
                    assert switch.is_alive() and time.monotonic() < deadline, "the switch did not wait"
                    time.sleep(0.05)
            kb.store.set_meta("written_while_live", "yes")
        switch.join(30)
        assert switched and switched[0].version == new  # it went ahead once the write committed
        assert kb.store.get_meta("written_while_live") == "yes"
        with pytest.raises(VersionNotLiveError):  # and every later write sees it
            with kb.store.transaction():
                kb.store.set_meta("written_after", "no")
        assert kb.store.get_meta("written_after") is None


def holder_rows(root: PostgresLocation) -> list[tuple[str, str]]:
    with psycopg.connect(root.conninfo, autocommit=True) as conn:
        return conn.execute(sql.SQL("SELECT token, version_schema FROM {}.version_holders ORDER BY token").format(
            sql.Identifier(root.schema))).fetchall()


def test_gc_keeps_a_held_version_until_its_holder_is_gone(root: PostgresLocation, embedder: Any, postgres_url: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_versions, "HEARTBEAT_S", 0.2)
    with beleg.open(root.url, embedder=embedder) as kb:
        kb.ingest_texts([BEFORE], progress=False)
        old_version, old_schema = kb.config.index_version, kb.store.schema
        new = build_new_version(kb)
    hold = pg_versions.VersionHold(root, old_schema, "beleg serve")
    try:
        pg_versions.switch(root, new)
        collected = pg_versions.collect(root)
        assert collected.removed == [] and [v.version for v, _ in collected.kept] == [old_version]
        (entry,) = collected.kept[0][1]
        assert entry["pid"] == os.getpid() and entry["purpose"] == "beleg serve" and entry["schema"] == old_schema

        # The database ends the holder's session (a restart, pg_terminate_backend): it registers again.
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            backend = hold._conn.info.backend_pid
            assert admin.execute("SELECT pg_terminate_backend(%s)", (backend,)).fetchone()[0]
        deadline = time.monotonic() + 30
        while hold._conn.closed or hold._conn.info.backend_pid == backend:
            assert time.monotonic() < deadline, "the holder did not register again"
            time.sleep(0.1)
        assert [v.version for v, _ in pg_versions.collect(root).kept] == [old_version]
        # What a killed process leaves: its row, and no session holding the row's lock.
        with psycopg.connect(root.conninfo, autocommit=True) as conn:
            conn.execute(sql.SQL("INSERT INTO {}.version_holders (token, version_schema, purpose, pid, host) "
                                 "VALUES ('killed', %s, 'beleg serve', 4711, 'another-host')").format(
                sql.Identifier(root.schema)), (old_schema,))
        assert len(pg_versions.collect(root).kept[0][1]) == 1  # the killed one counts for nothing
        assert [token for token, _ in holder_rows(root)] == [hold.token]  # and its row is gone
    finally:
        hold.close()
    assert holder_rows(root) == []
    collected = pg_versions.collect(root)
    assert [v.version for v in collected.removed] == [old_version] and collected.kept == []
