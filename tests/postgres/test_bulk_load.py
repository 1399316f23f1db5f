"""The bulk load (beleg.index.postgres.bulk) writes exactly what the per-document path writes,
in one transaction, and a failure part-way leaves the schema empty; migrate uses it."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import psycopg
import pytest

import beleg
from beleg.errors import IndexStateError
from beleg.index.ports import ChunkWrite
from beleg.index.postgres import bulk
from beleg.index.postgres.migrate import migrate
from beleg.index.postgres.store import PostgresStore
from beleg.types import Chunk, Document, Heading, Principal
from tests.postgres.conftest import schema_url

DIM = 8
TABLES = {
    "documents": "SELECT doc_id, source, content_hash, metadata, text, headings, tenant_key, acl_keys, chunk_count "
                 "FROM {s}.documents ORDER BY doc_id",
    "chunks": 'SELECT row, chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags, embed_hash, length, '
              "embedding::text, tenant_key, acl_keys FROM {s}.chunks ORDER BY row",
    "postings": "SELECT term, chunk_row, tf, tenant_key, acl_keys FROM {s}.postings ORDER BY term, chunk_row",
    "term_df": "SELECT term, tenant_key, df FROM {s}.term_df ORDER BY term, tenant_key",
    "corpus_stats": "SELECT tenant_key, chunks, total_length FROM {s}.corpus_stats ORDER BY tenant_key",
}


def synthetic_items(n_docs: int, seed: int = 3) -> list[tuple[Document, list[ChunkWrite], tuple[Heading, ...]]]:
    """Documents with tenants, ACLs, shared terms, headings, flags and a chunk-less document."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "sigma", "kappa", "omega", "zeta"]
    items = []
    for d in range(n_docs):
        meta: dict = {"title": f"Doc {d}", "status": "current" if d % 2 else "draft"}
        if d % 3 == 1:
            meta["tenant"] = "Acme" if d % 2 else "Nordwind"
        if d % 5 == 2:
            meta["acl"] = ["group:ops", "user:Ann"]
        doc_id = f"doc-{d:03d}"
        n_chunks = 0 if d == 4 else int(rng.integers(1, 5))
        writes, offset = [], 0
        for c in range(n_chunks):
            text = " ".join(rng.choice(words, size=int(rng.integers(3, 9))))
            chunk = Chunk(f"{doc_id}-{c}", doc_id, c, offset, offset + len(text), (meta["title"], f"Part {c}"), text,
                          ("instruction-like:override",) if c == 1 else ())
            vector = rng.normal(size=DIM).astype(np.float32)
            writes.append(ChunkWrite(chunk, f"hash-{doc_id}-{c}", vector / np.linalg.norm(vector),
                                     Counter(text.split())))
            offset += len(text) + 2
        text = "\n\n".join(w.chunk.text for w in writes)
        items.append((Document(doc_id, f"docs/{doc_id}.md", text, meta, f"content-{d}"), writes,
                      (Heading(1, meta["title"], 0),)))
    return items


def table_rows(conn: psycopg.Connection, schema: str) -> dict[str, list[tuple]]:
    return {name: conn.execute(query.format(s=schema)).fetchall() for name, query in TABLES.items()}


@pytest.fixture
def two_schemas(postgres_url: str):
    names = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    stores = [PostgresStore(schema_url(postgres_url, n)) for n in names]
    yield names, stores
    for store in stores:
        store.drop()
        store.close()


def test_bulk_load_writes_what_the_per_document_path_writes(two_schemas, postgres_url: str) -> None:
    (one_by_one, bulk_schema), (store_a, store_b) = two_schemas
    items = synthetic_items(23)
    for document, writes, headings in items:
        store_a.upsert_document(document, writes, headings)
    generation = store_b.generation
    result = bulk.bulk_load(store_b, items, batch_documents=5)  # several batches
    assert result["documents"] == 23 and result["chunks"] == sum(len(w) for _, w, _ in items)
    assert store_b.generation == generation + 1  # one commit, not one per document
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert table_rows(conn, bulk_schema) == table_rows(conn, one_by_one)
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'chunks_hnsw'",
                             (bulk_schema,)).fetchone()
    assert index is not None and "USING hnsw" in index[0]  # rebuilt after the copy
    # Searches agree, exact and through the HNSW index, for a tenant and anonymously.
    query = items[7][1][0].vector
    for principal in (Principal(None, "acme", ()), beleg.ANONYMOUS):
        for exact_below in (10**9, 0):
            store_a.exact_below = store_b.exact_below = exact_below
            views = [store.read_view() for store in (store_a, store_b)]
            found = [v.dense_top_k(query, 5, v.eligible(None, principal)) for v in views]
            assert [h.chunk_id for h in found[0]] == [h.chunk_id for h in found[1]]
            lexical = [v.lexical_top_k(["alpha", "omega"], 5, v.eligible(None, principal)) for v in views]
            assert [(h.chunk_id, round(h.score, 9)) for h in lexical[0]] == \
                   [(h.chunk_id, round(h.score, 9)) for h in lexical[1]]
            for store in (store_a, store_b):
                store.forget_view()


def test_a_failed_bulk_load_leaves_the_schema_empty(two_schemas, postgres_url: str) -> None:
    (schema, _), (store, _) = two_schemas
    items = synthetic_items(12)
    bad = items[9][1][0]
    items[9][1][0] = ChunkWrite(bad.chunk, bad.embed_hash, np.ones(DIM + 1, dtype=np.float32), bad.terms)
    with pytest.raises(IndexStateError, match="9-dimensional|shape"):
        bulk.bulk_load(store, items, batch_documents=4)  # fails in the third batch
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert all(rows == [] for rows in table_rows(conn, schema).values())
    store.upsert_document(*items[0])  # the schema is usable as it was
    assert store.read_view().dense_top_k(items[0][1][0].vector, 1, store.read_view().eligible(None, beleg.ANONYMOUS))


def test_bulk_load_refuses_a_schema_with_documents(two_schemas) -> None:
    _, (store, _) = two_schemas
    items = synthetic_items(3)
    store.upsert_document(*items[0])
    with pytest.raises(IndexStateError, match="already holds documents"):
        bulk.bulk_load(store, items[1:])


def test_migrate_into_an_empty_postgresql_index_is_one_bulk_load(tmp_path: Path, pg_location: str, embedder) -> None:
    (tmp_path / "docs").mkdir()
    for i in range(4):
        (tmp_path / "docs" / f"d{i}.md").write_text(f"# Topic {i}\n\nReplay window {i} of queue E-40{i}.\n",
                                                   encoding="utf-8")
    folder = tmp_path / "kb"
    with beleg.open(folder, embedder=embedder) as kb:
        kb.ingest([tmp_path / "docs"], progress=False)
        kb.search("warm", mode="dense")  # records the embedder's fingerprint
    first = migrate(folder, pg_location)
    assert first["method"] == "bulk copy" and first["documents"] == 4 and set(first["seconds"]) >= {
        "copy", "statistics", "vector_index"}
    (tmp_path / "docs" / "d9.md").write_text("# Late\n\nA later document.\n", encoding="utf-8")
    with beleg.open(folder, embedder=embedder) as kb:
        kb.ingest([tmp_path / "docs"], progress=False)
    second = migrate(folder, pg_location)  # the target holds documents now: one by one
    assert second["method"] == "per document" and second["target_documents"] == 5
