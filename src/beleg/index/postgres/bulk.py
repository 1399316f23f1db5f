"""Loading many documents into an empty PostgreSQL index at once (``beleg migrate`` into PostgreSQL).

The per-document write path (:class:`~beleg.index.postgres.writes.SchemaWriter`) spends about
twenty statements on every document to keep the BM25 statistics exact, and pgvector grows the
HNSW graph one vector at a time: copying a 100k-chunk index that way takes many minutes.
Into an *empty* schema this loader instead

* COPYs documents, chunks and postings in batches (chunks in COPY's binary format: a vector
  goes as pgvector's binary form, 384 floats are not printed and parsed as text),
* computes ``term_df`` and ``corpus_stats`` once at the end by ``GROUP BY`` over what was
  copied (the same counts the per-document writes maintain),
* drops the schema's HNSW index before the copy and builds it once after it, with
  ``maintenance_work_mem`` raised for that statement so the graph is built in memory
  (pgvector builds a graph far faster than it grows one),

all in one transaction under the schema's write lock: readers see nothing or everything, and a
failure leaves the schema as empty as it was.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

from beleg.errors import IndexStateError
from beleg.index.ports import ChunkWrite
from beleg.index.postgres.rls import document_access
from beleg.types import Document, Heading

#: Documents per COPY batch: big enough that round trips do not count, small enough to buffer.
BATCH_DOCUMENTS = 500
#: The most memory asked for the HNSW build (the server's setting is used when it is higher).
MAX_BUILD_MEMORY_MIB = 2048

BulkItem = tuple[Document, Sequence[ChunkWrite], Sequence[Heading]]

_CHUNK_COLUMNS = ('chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags, embed_hash, length, '
                  "embedding, tenant_key, acl_keys")


def _vector_dumper(oid: int) -> type[Dumper]:
    """A binary dumper for float vectors to pgvector's ``vector`` (dimension, unused, float4s; big-endian)."""

    class VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            values = np.asarray(obj, dtype=">f4").ravel()
            return struct.pack(">HH", values.size, 0) + values.tobytes()

    VectorBinaryDumper.oid = oid
    return VectorBinaryDumper


def is_empty(conn: Any, schema: str) -> bool:
    """Whether the schema holds no document (the only state this loader writes into)."""
    return not conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {}.documents)").format(
        sql.Identifier(schema))).fetchone()[0]


class BulkLoader:
    """COPY-based writes into one empty schema, inside the caller's write transaction."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.conn = store.conn
        self.s = sql.Identifier(store.schema)
        self._vector_index: str | None = None  # the HNSW index's definition, dropped during the load
        self._vector_oid: int | None = None
        self._dim = 0
        self.chunks = 0

    def q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=self.s)

    # ------------------------------------------------------------------ vector index
    def _prepare_vectors(self, dim: int) -> None:
        """Type the vector column (the backend's own first-write path), then set its HNSW index aside."""
        self.store._writer.ensure_dimension(dim)
        row = self.conn.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = %s AND i.tablename = 'chunks' "
            "AND i.indexdef ILIKE '%% USING hnsw %%'", (self.store.schema,)).fetchone()
        if row is not None:
            self._vector_index = row[1]
            self.conn.execute(sql.SQL("DROP INDEX {}.{}").format(self.s, sql.Identifier(row[0])))
        self._vector_oid = int(self.conn.execute("SELECT 'vector'::regtype::oid").fetchone()[0])
        self.conn.adapters.register_dumper(None, _vector_dumper(self._vector_oid))

    def build_vector_index(self) -> None:
        """Build the HNSW index set aside by :meth:`_prepare_vectors` over every copied vector."""
        if self._vector_index is None:
            return
        needed_mib = int(self.chunks * (4 * self._dim + 512) * 1.25 / 2**20) + 64
        current = self.conn.execute("SELECT setting::bigint * 1024 / 2^20 FROM pg_settings "
                                    "WHERE name = 'maintenance_work_mem'").fetchone()[0]
        if needed_mib > current:  # only ever raised, for this transaction only
            self.conn.execute("SELECT set_config('maintenance_work_mem', %s, true)",
                              (f"{min(needed_mib, MAX_BUILD_MEMORY_MIB)}MB",))
        self.conn.execute(self._vector_index)
        self._vector_index = None

    # ------------------------------------------------------------------ rows
    def add_batch(self, items: Sequence[BulkItem]) -> None:
        """COPY one batch of documents with their chunks and postings."""
        items = [(d, list(c), h) for d, c, h in items]
        first = next((c[0] for _, c, _ in items if c), None)
        if first is not None and self._vector_oid is None:
            self._dim = int(np.asarray(first.vector).shape[-1])
            self._prepare_vectors(self._dim)
        with self.conn.cursor() as cur:
            with cur.copy(self.q("COPY {s}.documents (doc_id, source, content_hash, metadata, text, headings, "
                                 "tenant_key, acl_keys, chunk_count) FROM STDIN")) as copy:
                for document, chunks, headings in items:
                    tenant, acl = document_access(document.metadata)
                    copy.write_row((document.doc_id, document.source, document.content_hash,
                                    json.dumps(document.metadata, ensure_ascii=False), document.text,
                                    json.dumps([[h.level, h.title, h.start] for h in headings], ensure_ascii=False),
                                    tenant, acl, len(chunks)))
            if first is None:
                return
            self._copy_chunks(cur, items)
            rows = dict(cur.execute(self.q("SELECT chunk_id, row FROM {s}.chunks WHERE doc_id = ANY(%s)"),
                                    ([d.doc_id for d, _, _ in items],)).fetchall())
            with cur.copy(self.q("COPY {s}.postings (term, chunk_row, tf, tenant_key, acl_keys) FROM STDIN")) as copy:
                for document, chunks, _ in items:
                    tenant, acl = document_access(document.metadata)
                    for w in chunks:
                        for term, tf in w.terms.items():
                            if tf > 0:
                                copy.write_row((term, rows[w.chunk.chunk_id], int(tf), tenant, acl))

    def _copy_chunks(self, cur: Any, items: Sequence[BulkItem]) -> None:
        types = ["text", "text", "int4", "int4", "int4", "jsonb", "text", "jsonb", "text", "int4",
                 self._vector_oid, "text", "text[]"]
        with cur.copy(self.q(f"COPY {{s}}.chunks ({_CHUNK_COLUMNS}) FROM STDIN (FORMAT BINARY)")) as copy:
            copy.set_types(types)
            for document, chunks, _ in items:
                tenant, acl = document_access(document.metadata)
                for w in chunks:
                    vector = np.asarray(w.vector, dtype=np.float32)
                    if vector.shape != (self._dim,):
                        raise IndexStateError(f"chunk {w.chunk.chunk_id} has a vector of shape {vector.shape}, "
                                              f"the index stores {self._dim}-dimensional vectors")
                    copy.write_row((w.chunk.chunk_id, w.chunk.doc_id, w.chunk.ordinal, w.chunk.start, w.chunk.end,
                                    list(w.chunk.heading_path), w.chunk.text, list(w.chunk.flags), w.embed_hash,
                                    int(sum(w.terms.values())), vector, tenant, acl))
                    self.chunks += 1

    def write_statistics(self) -> None:
        """``corpus_stats`` and ``term_df`` of everything copied, per tenant key ('' = no tenant)."""
        self.conn.execute(self.q(
            "INSERT INTO {s}.corpus_stats (tenant_key, chunks, total_length) "
            "SELECT coalesce(tenant_key, ''), count(*), sum(length) FROM {s}.chunks GROUP BY 1"))
        self.conn.execute(self.q(
            "INSERT INTO {s}.term_df (term, tenant_key, df) "
            "SELECT term, coalesce(tenant_key, ''), count(*) FROM {s}.postings GROUP BY 1, 2"))


def bulk_load(store: Any, items: Iterable[BulkItem], batch_documents: int = BATCH_DOCUMENTS) -> dict[str, Any]:
    """Write every ``(document, chunk writes, headings)`` into the store's empty schema in one
    transaction (see the module docstring). Returns counts and seconds per phase."""
    store.forget_view()  # typing the vector column waits for open snapshots on the table
    loader = BulkLoader(store)
    seconds: dict[str, float] = {}
    documents = 0
    with store.transaction():
        if not is_empty(store.conn, store.schema):
            raise IndexStateError(f"schema {store.schema} already holds documents; a bulk load writes into an "
                                  "empty index only (migrate into a new schema, or ingest instead)")
        t = time.perf_counter()
        pending: list[BulkItem] = []
        for item in items:
            pending.append(item)
            if len(pending) >= batch_documents:
                loader.add_batch(pending)
                documents += len(pending)
                pending = []
        if pending:
            loader.add_batch(pending)
            documents += len(pending)
        seconds["copy"] = time.perf_counter() - t
        t = time.perf_counter()
        loader.write_statistics()
        seconds["statistics"] = time.perf_counter() - t
        t = time.perf_counter()
        loader.build_vector_index()
        seconds["vector_index"] = time.perf_counter() - t
    t = time.perf_counter()
    for table in ("documents", "chunks", "postings", "term_df", "corpus_stats"):  # the planner's statistics
        store.conn.execute(sql.SQL("ANALYZE {}.{}").format(loader.s, sql.Identifier(table)))
    seconds["analyze"] = time.perf_counter() - t
    return {"documents": documents, "chunks": loader.chunks, "seconds": {k: round(v, 2) for k, v in seconds.items()}}
