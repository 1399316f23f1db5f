"""Writes of one index schema: documents with their chunks, vectors and postings, metadata
edits and erasure, each keeping the BM25 statistics (``term_df``, ``corpus_stats``) exact.

Every function runs inside the store's write transaction, which holds the schema's write
lock (one writer at a time, like SQLite's ``BEGIN IMMEDIATE``), so the read-modify-write of
the statistics cannot race another writer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import sql

from beleg.errors import IndexStateError
from beleg.index.ports import ChunkWrite, ErasureSummary
from beleg.index.postgres.rls import document_access
from beleg.types import Document, Heading


def take_write_lock(conn: Any, schema: str) -> None:
    """Take ``schema``'s write lock until the end of the current transaction. Writers of every
    process queue on it, and ``beleg switch`` takes the outgoing live schema's, so a writer that
    checks the live pointer while holding it cannot miss a switch (beleg.index.postgres.versions)."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"beleg:write:{schema}",))


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form; float32 values print exactly (strtof reads them back bit for bit)."""
    return "[" + ",".join(repr(x) for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


class SchemaWriter:
    """The write statements of one schema over one connection (inside a transaction)."""

    def __init__(self, conn: Any, schema: str) -> None:
        self.conn = conn
        self.s = sql.Identifier(schema)

    def q(self, text: str) -> sql.Composed:
        """A statement with ``{s}`` for the schema."""
        return sql.SQL(text).format(s=self.s)

    # ------------------------------------------------------------------ vectors
    def ensure_dimension(self, dim: int) -> None:
        """Type the vector column and build its HNSW index on the first write of vectors."""
        row = self.conn.execute(self.q("SELECT value FROM {s}.meta WHERE key = 'dim'")).fetchone()
        if row is not None:
            if int(row[0]) != dim:
                raise IndexStateError(f"this index stores {row[0]}-dimensional vectors, got {dim}; "
                                      "an index holds vectors of one embedder only (re-ingest into a new index)")
            return
        self.conn.execute(sql.SQL("ALTER TABLE {s}.chunks ALTER COLUMN embedding TYPE vector({d})").format(
            s=self.s, d=sql.Literal(dim)))
        # Keep vectors in the chunk rows (changing the type resets the column to pgvector's
        # EXTERNAL storage, which moves a 384-float vector into TOAST as soon as the chunk
        # text makes the row exceed 2 kB; an exact scan then fetches every vector from there).
        self.conn.execute(self.q("ALTER TABLE {s}.chunks ALTER COLUMN embedding SET STORAGE MAIN"))
        # Inner product: Beleg's vectors are L2-normalised, so it is the cosine.
        self.conn.execute(self.q("CREATE INDEX chunks_hnsw ON {s}.chunks USING hnsw (embedding vector_ip_ops)"))
        self.conn.execute(self.q("INSERT INTO {s}.meta (key, value) VALUES ('dim', %s)"), (str(dim),))

    # ------------------------------------------------------------------ statistics
    def _add_corpus_stats(self, doc_id: str, sign: int) -> None:
        """Add (sign 1) or remove (sign -1) a document's chunks from the per-tenant totals."""
        rows = self.conn.execute(self.q(
            "SELECT coalesce(tenant_key, ''), count(*), coalesce(sum(length), 0) FROM {s}.chunks "
            "WHERE doc_id = %s GROUP BY 1"), (doc_id,)).fetchall()
        for tenant, n, length in rows:
            self.conn.execute(self.q(
                "INSERT INTO {s}.corpus_stats (tenant_key, chunks, total_length) VALUES (%s, %s, %s) "
                "ON CONFLICT (tenant_key) DO UPDATE SET chunks = {s}.corpus_stats.chunks + EXCLUDED.chunks, "
                "total_length = {s}.corpus_stats.total_length + EXCLUDED.total_length"),
                (tenant, sign * n, sign * int(length)))
        self.conn.execute(self.q("DELETE FROM {s}.corpus_stats WHERE chunks <= 0"))

    def _doc_df(self, doc_ids: Sequence[str]) -> Counter[tuple[str, str]]:
        """How many chunks of these documents hold each term, per tenant key (their share of df)."""
        rows = self.conn.execute(self.q(
            "SELECT p.term, coalesce(p.tenant_key, ''), count(*) FROM {s}.postings p JOIN {s}.chunks c "
            "ON c.row = p.chunk_row WHERE c.doc_id = ANY(%s) GROUP BY 1, 2"), (list(doc_ids),))
        return Counter({(term, tenant): n for term, tenant, n in rows})

    def _apply_df(self, before: Counter[tuple[str, str]], after: Counter[tuple[str, str]]) -> None:
        """Move df by what changed: the work is the document's terms, not their postings
        elsewhere (recounting a common term would read all of its postings on every write)."""
        keys = sorted(set(before) | set(after))
        delta = [(term, tenant, after[(term, tenant)] - before[(term, tenant)]) for term, tenant in keys]
        delta = [d for d in delta if d[2]]
        if not delta:
            return
        self.conn.execute(self.q(
            "INSERT INTO {s}.term_df (term, tenant_key, df) SELECT * FROM unnest(%s::text[], %s::text[], %s::int[]) "
            "ON CONFLICT (term, tenant_key) DO UPDATE SET df = {s}.term_df.df + EXCLUDED.df"),
            ([d[0] for d in delta], [d[1] for d in delta], [d[2] for d in delta]))
        self.conn.execute(self.q("DELETE FROM {s}.term_df WHERE df <= 0 AND term = ANY(%s)"),
                          (sorted({d[0] for d in delta}),))

    # ------------------------------------------------------------------ documents
    def upsert_document(self, document: Document, chunks: Sequence[ChunkWrite], headings: Sequence[Heading]) -> None:
        if chunks:
            self.ensure_dimension(int(np.asarray(chunks[0].vector).shape[-1]))
        before = self._doc_df([document.doc_id])
        self._add_corpus_stats(document.doc_id, -1)
        self.conn.execute(self.q("DELETE FROM {s}.chunks WHERE doc_id = %s"), (document.doc_id,))
        tenant, acl = document_access(document.metadata)
        self.conn.execute(self.q(
            "INSERT INTO {s}.documents (doc_id, source, content_hash, metadata, text, headings, tenant_key, acl_keys, "
            "chunk_count) VALUES (%s, %s, %s, %s::jsonb, %s, %s::jsonb, %s, %s, %s) ON CONFLICT (doc_id) DO UPDATE SET "
            "source = EXCLUDED.source, content_hash = EXCLUDED.content_hash, metadata = EXCLUDED.metadata, "
            "text = EXCLUDED.text, headings = EXCLUDED.headings, tenant_key = EXCLUDED.tenant_key, "
            "acl_keys = EXCLUDED.acl_keys, chunk_count = EXCLUDED.chunk_count, ingested_at = now()"),
            (document.doc_id, document.source, document.content_hash, json.dumps(document.metadata, ensure_ascii=False),
             document.text, json.dumps([[h.level, h.title, h.start] for h in headings], ensure_ascii=False),
             tenant, acl, len(chunks)))
        with self.conn.cursor() as cur:
            cur.executemany(self.q(
                'INSERT INTO {s}.chunks (chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags, '
                "embed_hash, length, embedding, tenant_key, acl_keys) "
                "VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s::jsonb, %s, %s, %s::vector, %s, %s)"),
                [(w.chunk.chunk_id, w.chunk.doc_id, w.chunk.ordinal, w.chunk.start, w.chunk.end,
                  json.dumps(list(w.chunk.heading_path), ensure_ascii=False), w.chunk.text,
                  json.dumps(list(w.chunk.flags)), w.embed_hash, int(sum(w.terms.values())),
                  vector_literal(w.vector), tenant, acl) for w in chunks])
            rows = dict(self.conn.execute(self.q("SELECT chunk_id, row FROM {s}.chunks WHERE doc_id = %s"),
                                          (document.doc_id,)).fetchall())
            # COPY: a chunk has dozens of postings, and row-by-row INSERTs dominated ingest time.
            with cur.copy(self.q("COPY {s}.postings (term, chunk_row, tf, tenant_key, acl_keys) FROM STDIN")) as copy:
                for w in chunks:
                    for term, tf in w.terms.items():
                        if tf > 0:
                            copy.write_row((term, rows[w.chunk.chunk_id], int(tf), tenant, acl))
        self._add_corpus_stats(document.doc_id, 1)
        after: Counter[tuple[str, str]] = Counter()
        for w in chunks:
            after.update((term, tenant or "") for term, tf in w.terms.items() if tf > 0)
        self._apply_df(before, after)

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        """New metadata and access columns on the document and every row of it; statistics follow
        (a tenant change moves the document's chunks to another tenant's statistics)."""
        tenant, acl = document_access(metadata)
        before = self._doc_df([doc_id])
        self._add_corpus_stats(doc_id, -1)
        self.conn.execute(self.q("UPDATE {s}.documents SET metadata = %s::jsonb, source = %s, tenant_key = %s, "
                                 "acl_keys = %s WHERE doc_id = %s"),
                          (json.dumps(metadata, ensure_ascii=False), source, tenant, acl, doc_id))
        self.conn.execute(self.q("UPDATE {s}.chunks SET tenant_key = %s, acl_keys = %s WHERE doc_id = %s"),
                          (tenant, acl, doc_id))
        self.conn.execute(self.q("UPDATE {s}.postings p SET tenant_key = %s, acl_keys = %s FROM {s}.chunks c "
                                 "WHERE c.row = p.chunk_row AND c.doc_id = %s"), (tenant, acl, doc_id))
        self._add_corpus_stats(doc_id, 1)
        self._apply_df(before, self._doc_df([doc_id]))

    def erase(self, doc_ids: Sequence[str]) -> ErasureSummary:
        """Delete the documents (those present) with chunks, vectors and postings; count what went."""
        present = [r[0] for r in self.conn.execute(self.q("SELECT doc_id FROM {s}.documents WHERE doc_id = ANY(%s)"),
                                                   (list(dict.fromkeys(doc_ids)),))]
        if not present:
            return ErasureSummary()
        before = self._doc_df(present)
        terms = {term for term, _ in before}
        hashes = [r[0] for r in self.conn.execute(
            self.q("SELECT DISTINCT embed_hash FROM {s}.chunks WHERE doc_id = ANY(%s)"), (present,))]
        for doc_id in present:
            self._add_corpus_stats(doc_id, -1)
        chunks = self.conn.execute(self.q("DELETE FROM {s}.chunks WHERE doc_id = ANY(%s)"), (present,)).rowcount
        # A vector a killed ingest worker published and never committed must not outlive the text.
        self.conn.execute(self.q("DELETE FROM {s}.embedding_claims WHERE embed_hash = ANY(%s)"), (hashes,))
        self.conn.execute(self.q("DELETE FROM {s}.documents WHERE doc_id = ANY(%s)"), (present,))
        kept_hashes = {r[0] for r in self.conn.execute(
            self.q("SELECT DISTINCT embed_hash FROM {s}.chunks WHERE embed_hash = ANY(%s)"), (hashes,))}
        self._apply_df(before, Counter())
        kept_terms = {r[0] for r in self.conn.execute(
            self.q("SELECT DISTINCT term FROM {s}.term_df WHERE term = ANY(%s)"), (sorted(terms),))}
        return ErasureSummary(documents=len(present), chunks=chunks, vectors=len(set(hashes) - kept_hashes),
                              terms=len(terms - kept_terms))
