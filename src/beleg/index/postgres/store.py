"""The PostgreSQL :class:`~beleg.index.ports.Store`: one schema of one database.

Writes go through one connection in explicit transactions; the outermost transaction takes
the schema's write lock (an advisory lock, so writers in many processes queue instead of
racing the statistics) and bumps ``generation`` in ``meta``. A commit is visible to every
other process at its next :meth:`read_view`, which is a new snapshot transaction (no reload:
nothing is cached in memory but the view's transaction).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from beleg.errors import IndexStateError
from beleg.index.ports import ChunkWrite, DocumentRecord, ErasureSummary
from beleg.index.postgres import hnsw_calibration
from beleg.index.postgres import schema as schema_mod
from beleg.index.postgres.config import PostgresLocation, connect
from beleg.index.postgres.search import EXACT_BELOW, PostgresSearchIndex
from beleg.index.postgres.writes import SchemaWriter, take_write_lock
from beleg.types import Document, Heading

log = logging.getLogger(__name__)

#: Tables holding document text, ids, terms or vectors: vacuumed and analysed after an erasure.
ERASED_TABLES = ("postings", "chunks", "documents", "term_df", "corpus_stats", "embedding_claims")

#: meta key of the statistics scope chosen when the index was created ("corpus" or "tenant").
STATISTICS_KEY = "bm25_statistics"


class PostgresStore:
    """An index version in PostgreSQL (see the module docstring).

    Args:
        location: A ``postgresql://`` URL (``?schema=NAME`` picks the schema) or a parsed location.
        per_tenant_statistics: Only when the schema is new (None: the URL's ``statistics=``,
            else corpus-wide): BM25 N, df and avgdl over the
            asking principal's tenant plus public documents, so one tenant's scores do not move
            when another tenant's documents change (costs a second statistics lookup per query
            and nothing per write: the per-tenant counts are kept either way).
    """

    def __init__(self, location: str | PostgresLocation, *, per_tenant_statistics: bool | None = None,
                 k1: float = 1.5, b: float = 0.75, exact_below: int = EXACT_BELOW, create: bool = True) -> None:
        self.pg_location = location if isinstance(location, PostgresLocation) else PostgresLocation.parse(location)
        self.schema = self.pg_location.schema
        self.conn = connect(self.pg_location)
        if not create and not schema_mod.exists(self.conn, self.schema):
            self.conn.close()
            raise IndexStateError(f"no Beleg index in schema {self.schema} of {self.pg_location.conninfo}; "
                                  f"create one with 'beleg init --index {self.pg_location.url}'")
        schema_mod.migrate(self.conn, self.schema)
        # Stated, not left to the server's default: a write transaction reads what another one
        # committed while it waited for the write lock (the statistics, the live pointer).
        self.conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
        self.k1, self.b, self.exact_below = k1, b, exact_below
        #: Called inside every write transaction but an erasure's, once the write lock is held
        #: (the knowledge base refuses writes to a version a switch took out of service).
        self.write_guard: Callable[[], None] | None = None
        self._writer = SchemaWriter(self.conn, self.schema)
        self._depth = 0
        self._view: PostgresSearchIndex | None = None
        self._latest_conn: Any = None
        scope = self.get_meta(STATISTICS_KEY)
        if scope is None:
            if per_tenant_statistics is None:
                per_tenant_statistics = self.pg_location.statistics == "tenant"
            scope = "tenant" if per_tenant_statistics else "corpus"
            with self.transaction():
                self.set_meta(STATISTICS_KEY, scope)
        self.per_tenant_statistics = scope == "tenant"

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self.schema))

    # ------------------------------------------------------------------ commits
    @property
    def generation(self) -> int:
        return int(self.conn.execute(self._q("SELECT value FROM {s}.meta WHERE key = 'generation'")).fetchone()[0])

    @contextmanager
    def transaction(self, *, erasure: bool = False) -> Iterator[None]:
        """All writes inside commit together (nested calls join the outer transaction). After
        the outermost commit, the HNSW index's search depth is measured again when the number
        of chunks has moved enough (:mod:`beleg.index.postgres.hnsw_calibration`).

        The outermost one takes the schema's write lock, then runs :attr:`write_guard` unless
        it is an ``erasure`` (an erasure must reach every version, live or not)."""
        outermost = self._depth == 0
        with self.conn.transaction():
            self._depth += 1
            try:
                if self._depth == 1:
                    take_write_lock(self.conn, self.schema)
                    if self.write_guard is not None and not erasure:
                        self.write_guard()
                yield
                if self._depth == 1:
                    self.conn.execute(self._q("UPDATE {s}.meta SET value = (value::bigint + 1)::text "
                                              "WHERE key = 'generation'"))
            finally:
                self._depth -= 1
        if outermost:
            self._calibrate_vector_index()

    def _calibrate_vector_index(self) -> None:
        """Measure the HNSW index's search depth when :func:`hnsw_calibration.due` says so."""
        try:
            if self.get_meta("dim") is None:
                return  # no vectors, no HNSW index yet
            rows = int(self.conn.execute(self._q("SELECT coalesce(sum(chunks), 0) FROM {s}.corpus_stats"))
                       .fetchone()[0])
            last = hnsw_calibration.Calibration.from_json(self.get_meta(hnsw_calibration.META_KEY))
            if not hnsw_calibration.due(rows, last, self.exact_below):
                return
            result = hnsw_calibration.measure(self.conn, self.schema)
            with self.conn.transaction():
                self.set_meta(hnsw_calibration.META_KEY, result.to_json())
        except psycopg.Error as exc:  # the commit stands; searches keep the last measurement
            log.warning("measuring the HNSW index's search depth failed (%s); dense search keeps the last "
                        "measurement (or the default levels) until the next commit", str(exc).strip())
            return
        log.info("HNSW index at %d chunks: ef_search %s for recall >= %.2f (%.1f s)", result.rows,
                 {d: e if e is not None else "exact" for d, e in result.ef.items()},
                 hnsw_calibration.TARGET, result.seconds)

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute(self._q("SELECT value FROM {s}.meta WHERE key = %s"), (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(self._q("INSERT INTO {s}.meta (key, value) VALUES (%s, %s) "
                                  "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"), (key, value))

    def read_view(self) -> PostgresSearchIndex:
        """A snapshot of the last commit; reused while nothing was committed. The view it
        replaces is closed (a long-open snapshot would keep erased rows from being vacuumed)."""
        if self._view is not None and not self._view.broken and self._view.generation == self.generation:
            return self._view
        self.forget_view()
        self._view = PostgresSearchIndex(connect(self.pg_location), self.schema, self._latest, k1=self.k1,
                                         b=self.b, per_tenant_statistics=self.per_tenant_statistics,
                                         exact_below=self.exact_below)
        return self._view

    def _latest(self) -> Any:
        """A connection outside any transaction, for reads of the latest commit (not the write
        connection: a thread's read must never run inside another thread's write transaction)."""
        if self._latest_conn is None or self._latest_conn.closed:
            self._latest_conn = connect(self.pg_location)
        return self._latest_conn

    def forget_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    # ------------------------------------------------------------------ documents
    def document(self, doc_id: str) -> Document | None:
        row = self.conn.execute(self._q("SELECT doc_id, source, text, metadata, content_hash FROM {s}.documents "
                                        "WHERE doc_id = %s"), (doc_id,)).fetchone()
        return Document(row[0], row[1], row[2], row[3], row[4]) if row else None

    def document_records(self) -> list[DocumentRecord]:
        rows = self.conn.execute(self._q("SELECT doc_id, source, metadata FROM {s}.documents ORDER BY doc_id"))
        return [DocumentRecord(r[0], r[1], r[2]) for r in rows]

    def upsert_document(self, document: Document, chunks: Sequence[ChunkWrite],
                        headings: Sequence[Heading] = ()) -> None:
        if self.get_meta("dim") is None:
            self.forget_view()  # typing the vector column waits for open snapshots on the table
        with self.transaction():
            self._writer.upsert_document(document, chunks, headings)

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        with self.transaction():
            self._writer.update_metadata(doc_id, source, metadata)

    # ------------------------------------------------------------------ file locations
    def location(self, doc_id: str) -> str | None:
        row = self.conn.execute(self._q("SELECT location FROM {s}.documents WHERE doc_id = %s"), (doc_id,)).fetchone()
        return os.fsdecode(row[0]) if row and row[0] is not None else None

    def locations(self) -> dict[str, str]:
        return {doc_id: os.fsdecode(loc) for doc_id, loc in self.conn.execute(
            self._q("SELECT doc_id, location FROM {s}.documents WHERE location IS NOT NULL"))}

    def doc_ids_at(self, location: str) -> list[str]:
        return [r[0] for r in self.conn.execute(
            self._q("SELECT doc_id FROM {s}.documents WHERE location = %s ORDER BY doc_id"), (os.fsencode(location),))]

    def set_location(self, doc_id: str, location: str | None) -> None:
        # The file system's bytes: a name that is not UTF-8 must still be found again.
        with self.transaction():
            self.conn.execute(self._q("UPDATE {s}.documents SET location = %s WHERE doc_id = %s"),
                              (None if location is None else os.fsencode(location), doc_id))

    def copy_locations_from(self, other: PostgresStore) -> None:
        """Give documents without a location the one they have in another schema of this
        database (a version rebuilt from that one's documents, which carry no file)."""
        with self.transaction():
            self.conn.execute(sql.SQL(
                "UPDATE {s}.documents d SET location = o.location FROM {o}.documents o "
                "WHERE o.doc_id = d.doc_id AND d.location IS NULL AND o.location IS NOT NULL").format(
                s=sql.Identifier(self.schema), o=sql.Identifier(other.schema)))

    def erase(self, doc_ids: Sequence[str]) -> ErasureSummary:
        """One transaction; then VACUUM, so the dead rows (the erased text, terms and vectors) are
        removed from tables and indexes. ``complete`` is False when another session's open
        snapshot still holds them back (run the erasure or ``beleg gc`` again after it ends)."""
        self.forget_view()
        with self.transaction(erasure=True):
            summary = self._writer.erase(doc_ids)
        if not summary.documents:
            return summary
        self.purge_dead_rows()
        return ErasureSummary(summary.documents, summary.chunks, summary.vectors, summary.terms,
                              complete=not self._older_snapshots())

    def purge_dead_rows(self) -> None:
        """After deleting or replacing text: VACUUM the tables that hold document text, ids, terms
        or vectors, so the dead rows leave tables and indexes, and ANALYZE them, so the planner's
        statistics (``pg_statistic``: most common values, histograms) are sampled again from the
        rows that remain instead of keeping values of the deleted ones. ANALYZE leaves the old
        statistics of a table it finds empty; those are cleared (PostgreSQL 18 and later)."""
        s = sql.Identifier(self.schema)
        for table in ERASED_TABLES:
            self.conn.execute(sql.SQL("VACUUM (ANALYZE) {}.{}").format(s, sql.Identifier(table)))
        if self.conn.info.server_version < 180000:
            return  # no pg_clear_attribute_stats before 18 (docs/postgres.md, Erasure)
        for table in ERASED_TABLES:
            if self.conn.execute(sql.SQL("SELECT NOT EXISTS (SELECT 1 FROM {}.{})").format(
                    s, sql.Identifier(table))).fetchone()[0]:
                self.conn.execute("SELECT pg_clear_attribute_stats(%(s)s, %(t)s, attname, false) FROM pg_attribute "
                                  "WHERE attrelid = format('%%I.%%I', %(s)s, %(t)s)::regclass AND attnum > 0 "
                                  "AND NOT attisdropped", {"s": self.schema, "t": table})

    def _older_snapshots(self) -> bool:
        """Whether another session of this database holds a snapshot (which keeps dead rows)."""
        row = self.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                "AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL").fetchone()
        return bool(row[0])

    # ------------------------------------------------------------------ inspection
    def stored_terms(self, terms: Sequence[str]) -> set[str]:
        rows = self.conn.execute(self._q("SELECT term FROM {s}.term_df WHERE term = ANY(%(t)s) UNION "
                                         "SELECT term FROM {s}.postings WHERE term = ANY(%(t)s)"), {"t": list(terms)})
        return {r[0] for r in rows}

    def vector_count(self) -> int:
        return int(self.conn.execute(self._q("SELECT count(DISTINCT embed_hash) FROM {s}.chunks "
                                             "WHERE embedding IS NOT NULL")).fetchone()[0])

    def drop(self) -> None:
        """Remove this index version's schema entirely (tests, ``beleg gc`` of an old version)."""
        self.forget_view()
        schema_mod.drop(self.conn, self.schema)

    def close(self) -> None:
        self.forget_view()
        if self._latest_conn is not None:
            self._latest_conn.close()
        self.conn.close()
