"""``KnowledgeBase`` over PostgreSQL: what ``--index postgresql://…`` opens.

:class:`PostgresKnowledgeBase` is the knowledge base with its storage swapped: searches,
answers and the leak suite already go through the ports (:meth:`search_index`); ingest
goes through :class:`PostgresCatalog`, which gives the ingest pipeline the catalog calls it
makes, in terms of a :class:`~beleg.index.postgres.store.PostgresStore`. Term ids exist only
inside one ingest (the store keeps terms as text), and vectors live on their chunks.

Blue/green versions are schemas (:mod:`beleg.index.postgres.versions`). Not yet for
PostgreSQL (refused with a clear error): chunk contexts written by an LLM.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import sql

from beleg.backends.embedders import Embedder
from beleg.errors import ConfigError, IndexStateError, IndexVersionError
from beleg.index.config import IndexConfig
from beleg.index.ports import ChunkWrite
from beleg.index.postgres import hnsw_calibration
from beleg.index.postgres import versions as pg_versions
from beleg.index.postgres.claims import LEASE_ENV, PostgresClaims, lease_from_env
from beleg.index.postgres.config import PostgresLocation, connect
from beleg.index.postgres.store import PostgresStore
from beleg.index.versions import BUILD_FINISHED, BUILD_STATE_KEY, BUILD_UNFINISHED, VersionNotLiveError
from beleg.kb import KnowledgeBase
from beleg.retrieve.techniques import Techniques
from beleg.types import Chunk, Document, Heading

CONFIG_KEY = "index_config"


class PostgresCatalog:
    """The catalog calls of :class:`beleg.ingest.pipeline.Ingestor` and ``KnowledgeBase``,
    answered by a :class:`PostgresStore` (row numbers become chunk ids)."""

    #: Never opened read-only (what a role may write is the server's to grant), so no write of a
    #: read is ever skipped: the folder catalog's read-only mode and notes have no counterpart.
    read_only = False
    notes: tuple[str, ...] = ()

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self.write_guard: Any = None
        #: True once an update or deletion left dead rows; :meth:`checkpoint` vacuums them.
        self.pending_erasure = False
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._vectors: dict[str, np.ndarray] = {}
        #: Another version's catalog whose vectors a reindex with the same embedder reuses.
        self.donor: PostgresCatalog | None = None

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self.store.schema))

    def _rows(self, text: str, params: Any = None) -> list[tuple[Any, ...]]:
        return self.store.conn.execute(self._q(text), params).fetchall()

    # ------------------------------------------------------------------ transactions and meta
    @contextmanager
    def transaction(self) -> Iterator[None]:
        try:
            with self.store.transaction():
                yield
        finally:
            if self.store._depth == 0:
                self._vectors.clear()  # only for the upserts of this transaction

    def get_meta(self, key: str) -> str | None:
        return self.store.get_meta(key)

    def set_meta(self, key: str, value: str) -> None:
        self.store.set_meta(key, value)

    @property
    def generation(self) -> int:
        return self.store.generation

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ documents
    def sources(self) -> dict[str, str]:
        return dict(self._rows("SELECT doc_id, source FROM {s}.documents"))

    def document_state(self, doc_id: str) -> tuple[str, dict[str, Any], str] | None:
        rows = self._rows("SELECT content_hash, metadata, source FROM {s}.documents WHERE doc_id = %s", (doc_id,))
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None

    def document(self, doc_id: str) -> Document | None:
        return self.store.document(doc_id)

    def doc_ids_for_source(self, source: str) -> list[str]:
        return [r[0] for r in self._rows("SELECT doc_id FROM {s}.documents WHERE source = %s ORDER BY doc_id",
                                         (source,))]

    def location(self, doc_id: str) -> str | None:
        return self.store.location(doc_id)

    def locations(self) -> dict[str, str]:
        return self.store.locations()

    def doc_ids_at(self, location: str) -> list[str]:
        return self.store.doc_ids_at(location)

    def set_location(self, doc_id: str, location: str | None) -> None:
        self.store.set_location(doc_id, location)

    def copy_locations_from(self, other: PostgresCatalog) -> None:
        self.store.copy_locations_from(other.store)

    def documents_meta(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(r.doc_id, r.source, r.metadata) for r in self.store.document_records()]

    def upsert_document(self, doc: Document, chunks: Sequence[Chunk], embed_hashes: Sequence[str],
                        postings: Sequence[tuple[np.ndarray, np.ndarray]], headings: Sequence[Heading] = ()) -> None:
        missing = [h for h in embed_hashes if h not in self._vectors]
        vectors = {**self.cached_vectors(missing), **self._vectors} if missing else self._vectors
        writes = [ChunkWrite(c, h, vectors[h], {self._terms[int(t)]: int(n) for t, n in zip(ids.tolist(), tfs.tolist())})
                  for c, h, (ids, tfs) in zip(chunks, embed_hashes, postings)]
        self.pending_erasure = self.pending_erasure or self.document_state(doc.doc_id) is not None
        self.store.upsert_document(doc, writes, headings)

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        self.pending_erasure = True  # the old metadata must not stay in dead rows
        self.store.update_metadata(doc_id, source, metadata)

    def delete_document(self, doc_id: str) -> dict[str, int]:
        summary = self.store._writer.erase([doc_id])
        self.pending_erasure = True
        return {"documents": summary.documents, "chunks": summary.chunks, "vectors": summary.vectors}

    def drop_orphan_terms(self) -> int:
        return 0  # the store drops a term with its last posting, in the same transaction

    def move_contexts(self, old_doc_id: str, new_doc_id: str) -> None:
        return None  # LLM chunk contexts are refused for PostgreSQL (see _contextualizer)

    def checkpoint(self) -> bool:
        """VACUUM and ANALYZE the tables an update or deletion left dead rows in (the old text)."""
        self.store.purge_dead_rows()
        self.pending_erasure = False
        return True

    # ------------------------------------------------------------------ terms and vectors
    def term_ids(self, terms: Sequence[str], create: bool) -> dict[str, int]:
        """Ids valid inside this object only: the store keeps terms as text."""
        for term in dict.fromkeys(terms):
            if term not in self._term_ids:
                self._term_ids[term] = len(self._terms)
                self._terms.append(term)
        return {t: self._term_ids[t] for t in terms}

    def put_vectors(self, vectors: Mapping[str, np.ndarray]) -> None:
        self._vectors.update({h: np.asarray(v, dtype=np.float32) for h, v in vectors.items()})

    def cached_vectors(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these chunk texts: on committed chunks, or embedded by another
        ingest worker whose documents are not committed yet (``embedding_claims``)."""
        rows = self._rows("SELECT DISTINCT ON (embed_hash) embed_hash, embedding::text FROM ("
                          "SELECT embed_hash, embedding FROM {s}.chunks WHERE embed_hash = ANY(%(h)s) UNION ALL "
                          "SELECT embed_hash, embedding FROM {s}.embedding_claims WHERE embed_hash = ANY(%(h)s)) v "
                          "WHERE embedding IS NOT NULL", {"h": list(dict.fromkeys(hashes))})
        found = {h: np.array(json.loads(v), dtype=np.float32) for h, v in rows}
        missing = [h for h in hashes if h not in found]
        if missing and self.donor is not None:
            found.update(self.donor.cached_vectors(missing))
        return found

    def documents_with_headings(self) -> Iterator[tuple[Document, tuple[Heading, ...]]]:
        """Every stored document with its reader's headings (what a reindex re-chunks)."""
        for doc_id, source, text, meta, content_hash, headings in self._rows(
                "SELECT doc_id, source, text, metadata, content_hash, headings FROM {s}.documents ORDER BY doc_id"):
            yield (Document(doc_id, source, text, meta, content_hash),
                   tuple(Heading(int(h[0]), str(h[1]), int(h[2])) for h in headings))

    # ------------------------------------------------------------------ chunks
    def chunk_texts(self, offset: int = 0, limit: int | None = None) -> Iterator[tuple[str, str, str]]:
        """``(chunk_id, text, flags json)`` of the chunks in row order from ``offset`` (at most
        ``limit``; for re-running the injection detector)."""
        for chunk_id, text, flags in self._rows("SELECT chunk_id, text, flags FROM {s}.chunks ORDER BY row "
                                                "LIMIT %s OFFSET %s", (limit, offset)):
            yield chunk_id, text, json.dumps(flags)

    def set_chunk_flags(self, flags: Mapping[str, Sequence[str]]) -> None:
        with self.store.conn.cursor() as cur:
            cur.executemany(self._q("UPDATE {s}.chunks SET flags = %s::jsonb WHERE chunk_id = %s"),
                            [(json.dumps(list(f)), chunk_id) for chunk_id, f in flags.items()])

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        rows = self._rows('SELECT chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags FROM {s}.chunks '
                          "WHERE chunk_id = %s", (chunk_id,))
        if not rows:
            return None
        cid, doc_id, ordinal, start, end, heading_path, text, flags = rows[0]
        return Chunk(cid, doc_id, ordinal, start, end, tuple(heading_path), text, tuple(flags))

    def counts(self) -> dict[str, int]:
        one = lambda text: int(self._rows(text)[0][0])  # noqa: E731
        return {"documents": one("SELECT count(*) FROM {s}.documents"), "chunks": one("SELECT count(*) FROM {s}.chunks"),
                "terms": one("SELECT count(DISTINCT term) FROM {s}.term_df"), "embeddings": self.store.vector_count()}


class PostgresKnowledgeBase(KnowledgeBase):
    """A knowledge base whose index is one schema of a PostgreSQL database."""

    # The same roles as the embedded knowledge base's, played by the PostgreSQL classes.
    store: PostgresStore  # type: ignore[assignment]
    catalog: PostgresCatalog  # type: ignore[assignment]

    def __init__(self, path: str | Path, config: IndexConfig | None = None, *, create: bool = True,
                 embedder: Embedder | None = None, version: str | None = None) -> None:
        self.root_location = PostgresLocation.parse(str(path))
        schema, live = self._schema_for(version)
        self.location = self.root_location.with_schema(schema)
        self.root = self.root_location.url  # type: ignore[assignment]  # a URL, not a folder
        self.path = self.location.url  # type: ignore[assignment]
        #: Whether this object opened the version that was live: its document writes are then
        #: refused once a switch made another live, or they would be lost to every reader.
        #: A copy reopened on the same version later (a server's thread) takes the original's.
        self.opened_live = schema == live
        self.store = PostgresStore(self.location, create=create)
        self.store.write_guard = self._guard_write
        try:
            self.config = self._load_config(config, create)
        except BaseException:
            self.store.close()
            raise
        self.catalog = PostgresCatalog(self.store)
        self._thread = threading.local()
        self._refresh_flags()
        self._embedder = embedder
        self._embedder_checked = False
        self._sentence_vectors: Any = None
        self.techniques = Techniques()

    def _schema_for(self, version: str | None) -> tuple[str, str]:
        """The schema of ``version`` (a version, or the schema of one; None: the live one), and
        the live version's schema."""
        conn = connect(self.root_location)
        try:
            root = self.root_location.schema
            live = pg_versions.live_schema(conn, root)
            if version in (None, "live"):
                return live, live
            for v in pg_versions.list_versions(conn, root):
                if version in (v.version, v.schema):
                    return v.schema, live
            raise IndexStateError(f"no version {version!r} in {self.root_location.url}; build it with 'beleg reindex'")
        finally:
            conn.close()

    def _load_config(self, config: IndexConfig | None, create: bool) -> IndexConfig:
        raw = self.store.get_meta(CONFIG_KEY)
        if raw is not None:
            stored = IndexConfig.from_json(json.loads(raw))
            if config is not None and config.index_version != stored.index_version:
                raise IndexVersionError(
                    f"index {self.root} was built with {stored.versioned()} (version {stored.index_version}), "
                    f"not {config.versioned()} (version {config.index_version}); open it without a config, "
                    "or build the new configuration in a new schema (--index URL?schema=NAME)")
            return stored
        if not create:
            raise IndexStateError(f"no Beleg index at {self.root}; create one with 'beleg init --index {self.root}'")
        chosen = config or IndexConfig()
        with self.store.transaction():
            self.store.set_meta(CONFIG_KEY, json.dumps(chosen.to_json()))
        return chosen

    # ------------------------------------------------------------------ storage
    def close(self) -> None:
        self.store.close()

    def search_index(self) -> Any:
        """A snapshot of the last commit: a new transaction when another process committed."""
        return self.store.read_view()

    def snapshot(self) -> Any:
        return self.search_index()

    def _refuse_while_building(self) -> None:
        """At the start of an ingest: refuse it at once while a reindex builds, or when a
        switch made another version live (each write transaction checks again)."""
        with self.store.conn.transaction():
            self._guard_write()

    def _guard_write(self) -> None:
        """Run inside every write transaction but an erasure's, once the schema's write lock is
        held (PostgresStore.write_guard): IndexBusyError while a reindex builds (the new version
        would miss the write; a build that starts meanwhile waits for this transaction), then
        :meth:`_refuse_if_switched`."""
        pg_versions.refuse_while_building(self.store.conn, self.root_location.schema)
        self._refuse_if_switched()

    def _refuse_if_switched(self) -> None:
        """Raise VersionNotLiveError when this object opened the live version and the root now
        names another: ``beleg switch`` takes the schema's write lock before it moves the
        pointer, so a write either commits while its version is live or is refused."""
        if not self.opened_live:
            return
        live = pg_versions.live_schema(self.store.conn, self.root_location.schema)
        if live != self.store.schema:
            raise VersionNotLiveError(
                f"the index {self.root} was switched to another live version (schema {live}) after this process "
                f"opened schema {self.store.schema}; a change written now would be lost to everyone who opens the "
                "index. Reopen the index (restart the server) and write again")

    def _flush_replaced_text(self) -> None:
        if self.catalog.pending_erasure:
            self.catalog.checkpoint()

    def _ingest_claims(self) -> PostgresClaims:
        """Claims in the schema's ``ingest_claims`` table, so several ingest processes (on any
        machine that reaches the database) share one corpus (beleg.index.postgres.claims)."""
        return PostgresClaims(self.store.conn, self.location, lease_s=lease_from_env(os.environ.get(LEASE_ENV)))

    def _contextualizer(self) -> Any:
        if self.config.chunking.context != "none":
            raise ConfigError(f"chunk contexts ({self.config.chunking.context}) are not available for a PostgreSQL "
                              "index yet; create it with --context none")
        return None

    # ------------------------------------------------------------------ versions
    def reindex(self, config: IndexConfig, *, progress: bool | str | None = None,
                embedder: Embedder | None = None, stop: threading.Event | None = None) -> dict[str, Any]:
        """Build ``config`` into its own schema from the stored documents (blue/green); nothing
        changes for readers until ``beleg switch``. With the same embedder, vectors of unchanged
        chunk texts are taken from this version instead of recomputed; run again, it resumes.
        While it builds, document writes and deletions to the index are refused (IndexBusyError,
        :class:`~beleg.index.postgres.versions.BuildLock`), so the new version misses none.
        """
        version = config.index_version
        if version == self.config.index_version:
            raise ConfigError(f"version {version} is this index's live configuration already; nothing to build")
        with pg_versions.BuildLock(self.root_location, version) as lock:
            self._finish_erasure_locked()
            result = self._build_version(config, progress=progress, embedder=embedder, stop=stop)
            lock.check_held()  # else writes were accepted during the build
        return result

    def _build_version(self, config: IndexConfig, *, progress: bool | str | None,
                       embedder: Embedder | None, stop: threading.Event | None = None) -> dict[str, Any]:
        version = config.index_version
        root = self.root_location.schema
        schema = pg_versions.version_schema(root, version)
        pg_versions.register(self.store.conn, root, schema)
        same_model = config.embedder == self.config.embedder
        scope = "tenant" if self.store.per_tenant_statistics else "corpus"  # the new version keeps it
        target_location = replace(self.root_location.with_schema(schema), statistics=scope)
        target = PostgresKnowledgeBase(target_location.url, config,
                                       embedder=embedder or (self._embedder if same_model else None))
        try:
            # Unfinished until the last document is written, as for an index folder (KnowledgeBase._build_version).
            with target.store.transaction():
                target.store.set_meta(BUILD_STATE_KEY, BUILD_UNFINISHED)
            if same_model:
                target.catalog.donor = self.catalog
                fingerprint = self.store.get_meta("embedder_fingerprint")
                if fingerprint and target.store.get_meta("embedder_fingerprint") is None:
                    with target.store.transaction():
                        target.store.set_meta("embedder_fingerprint", fingerprint)
            items = list(self.catalog.documents_with_headings())
            report = target._ingestor(progress=progress, stop=stop).run_documents(items)
            # Stored documents carry no file: where each was read from comes from this version,
            # or the new one could no longer tell its files from others (beleg.ingest.pipeline._whose).
            target.catalog.copy_locations_from(self.catalog)
            gone = {r.doc_id for r in target.store.document_records()} - {doc.doc_id for doc, _ in items}
            if gone:
                target.store.erase(sorted(gone))
            with target.store.transaction():
                target.store.set_meta(BUILD_STATE_KEY, BUILD_FINISHED)
            status = target.status()
        finally:
            target.close()
        return {"version": version, "path": target.path, "live": self.config.index_version,
                "documents": status["documents"], "chunks": status["chunks"], "embedded": report.embedded,
                "copied_vectors_unused": 0, "failed": report.to_json()["failures"]}

    def _version_stores(self) -> list[tuple[pg_versions.PostgresVersion | None, PostgresStore]]:  # type: ignore[override]
        """The store of every version schema, the live one first (this object's own store for
        its schema): an erasure reaches what readers see before the others."""
        out: list[tuple[pg_versions.PostgresVersion | None, PostgresStore]] = []
        for v in sorted(pg_versions.list_versions(self.store.conn, self.root_location.schema), key=lambda v: not v.live):
            out.append((v, self.store if v.schema == self.store.schema else
                        PostgresStore(self.root_location.with_schema(v.schema))))
        if not any(store is self.store for _, store in out):
            out.insert(0, (None, self.store))
        return out

    # ------------------------------------------------------------------ deletion
    def _delete(self, doc_ids: Sequence[str], expr: Any) -> dict[str, Any]:
        """Erase from every version (schema), then VACUUM; see :meth:`PostgresStore.erase` for
        what ``complete`` means here. Refused while a reindex builds (IndexBusyError)."""
        with pg_versions.no_build(self.root_location):  # refused while a reindex builds, as for a folder
            return self._erase_locked(doc_ids, expr)

    def _erase_locked(self, doc_ids: Sequence[str], expr: Any) -> dict[str, Any]:
        stores = self._version_stores()
        try:  # an erasure reaches every version, so a switch cannot bring a document back
            return self._erase(stores, doc_ids, expr)  # type: ignore[arg-type]
        finally:
            self.store.forget_view()
            for _, store in stores:
                if store is not self.store:
                    store.close()

    def _pending_erasure(self) -> dict[str, Any] | None:
        return pg_versions.pending_erasure(self.store.conn, self.root_location.schema)

    def _record_erasure(self, doc_ids: list[str], since: str | None) -> None:
        pg_versions.record_erasure(self.store.conn, self.root_location.schema, doc_ids, since)

    def _clear_erasure(self) -> None:
        pg_versions.clear_erasure(self.store.conn, self.root_location.schema)

    # ------------------------------------------------------------------ inspection
    def status(self) -> dict[str, Any]:
        counts = self.catalog.counts()
        by = self._documents_by_facet()
        return {
            "index": self.root,
            "backend": "postgresql",
            "schema": self.store.schema,
            "version_path": self.path,
            "versions": pg_versions.summaries(self.store.conn, self.root_location.schema),
            "erasure_pending": self._pending_erasure(),
            "index_version": self.config.index_version,
            "config": self.config.versioned(),
            "embedder_fingerprint": self.store.get_meta("embedder_fingerprint"),
            "generation": self.store.generation,
            "bm25_statistics": "per tenant" if self.store.per_tenant_statistics else "corpus-wide",
            "vector_index": self._vector_index_status(),
            **counts,
            "documents_by": {k: dict(sorted(v.items())) for k, v in by.items()},
        }

    def _vector_index_status(self) -> dict[str, Any]:
        """How dense search reads the HNSW index, as the writer last measured it."""
        cal = hnsw_calibration.Calibration.from_json(self.store.get_meta(hnsw_calibration.META_KEY))
        if cal is None:
            return {"measured": False, "exact_below_eligible_chunks": self.store.exact_below,
                    "note": f"not measured (measured from {max(self.store.exact_below, hnsw_calibration.CALIBRATE_FROM)} "
                            "chunks on); above exact_below eligible chunks, HNSW at ef_search 4 k within 100-1000"}
        return {"measured": True, "at_chunks": cal.rows, "target_recall": hnsw_calibration.TARGET,
                "exact_below_eligible_chunks": self.store.exact_below,
                "ef_search": {f"k<={d}": ("exact (no level reaches the target)" if e is None else e)
                              for d, e in sorted(cal.ef.items())},
                "recall": {f"k={d}": levels for d, levels in sorted(cal.recall.items())}}
