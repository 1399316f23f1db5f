"""``beleg migrate SRC DST``: copy an index between backends (folder ⇄ PostgreSQL) without
re-embedding.

Documents, chunks (offsets, heading paths, flags), vectors and file locations are read through
the source's ports and written through the target's :class:`~beleg.index.ports.Store`; BM25 terms are
re-derived with the same analyzer and the same chunk text the ingest pipeline analysed
(:func:`beleg.ingest.pipeline.index_text`), which is cheap and gives identical postings. Into
an empty PostgreSQL index everything goes in one bulk load (:mod:`beleg.index.postgres.bulk`:
COPY, statistics and the HNSW index built once at the end); into anything else document by
document. The target is created with the source's configuration (same index version) and embedder
fingerprint, so later ingests into it reuse the copied vectors.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, IndexVersionError
from beleg.index.analyzer import analyze
from beleg.index.ports import ChunkWrite
from beleg.ingest.pipeline import index_text
from beleg.types import Document, Heading


def _headings(source: Any) -> dict[str, tuple[Heading, ...]]:
    """The readers' headings per document where the source keeps them (the embedded catalog)."""
    read = getattr(source.catalog, "documents_with_headings", None)
    return {doc.doc_id: tuple(headings) for doc, headings in read()} if read else {}


def migrate(source_location: str | Path, target_location: str | Path) -> dict[str, Any]:
    """Copy every document of the index at ``source_location`` into ``target_location``
    (created, or an index with the same configuration). Returns counts."""
    from beleg.kb import KnowledgeBase

    with KnowledgeBase(source_location, create=False) as source:
        if source.config.chunking.context != "none":
            raise ConfigError(f"index {source_location} has chunk contexts ({source.config.chunking.context}); "
                              "migrate copies indexes without them only (the contexts would be lost)")
        with KnowledgeBase(target_location, source.config) as target:
            _copy_fingerprint(source, target)
            counts = _copy_documents(source, target)
            _copy_locations(source, target)
            target._flush_replaced_text()
            status = target.status()
    return {"source": str(source_location), "target": str(target_location), **counts,
            "target_documents": status["documents"], "target_chunks": status["chunks"], "embedded": 0}


def _copy_fingerprint(source: Any, target: Any) -> None:
    fingerprint = source.store.get_meta("embedder_fingerprint")
    held = target.store.get_meta("embedder_fingerprint")
    if held is not None and fingerprint is not None and held != fingerprint:
        raise IndexVersionError(f"the target holds vectors of {held!r}, the source of {fingerprint!r}; "
                                "migrate into an empty index")
    if fingerprint is not None and held is None:
        with target.store.transaction():
            target.store.set_meta("embedder_fingerprint", fingerprint)


def _copy_locations(source: Any, target: Any) -> None:
    """Where each file document was read from: without it the target could not tell the
    corpus's files from another folder's of the same relative path (beleg.ingest.pipeline)."""
    located = source.store.locations()
    if located:
        with target.store.transaction():
            for doc_id, location in located.items():
                target.store.set_location(doc_id, location)


def _copy_documents(source: Any, target: Any) -> dict[str, Any]:
    """Into an empty PostgreSQL index in one bulk load (COPY, the HNSW index built once at the end);
    otherwise document by document through the target's store, one transaction each."""
    from beleg.index.postgres import bulk
    from beleg.index.postgres.store import PostgresStore

    items = _documents(source)
    if isinstance(target.store, PostgresStore) and bulk.is_empty(target.store.conn, target.store.schema):
        loaded = bulk.bulk_load(target.store, items)
        return {"documents": loaded["documents"], "chunks": loaded["chunks"], "method": "bulk copy",
                "seconds": loaded["seconds"]}
    documents = chunks = 0
    for document, writes, headings in items:
        with target.store.transaction():
            target.store.upsert_document(document, writes, headings)
        documents += 1
        chunks += len(writes)
    return {"documents": documents, "chunks": chunks, "method": "per document"}


def _documents(source: Any) -> Iterator[tuple[Document, list[ChunkWrite], tuple[Heading, ...]]]:
    """Every document of the source with its chunk writes (vectors copied, terms re-derived) and headings."""
    view = source.search_index()
    chunk_ids: dict[str, list[str]] = defaultdict(list)
    for chunk_id, doc_id in view.chunk_documents():
        chunk_ids[doc_id].append(chunk_id)
    headings = _headings(source)
    for record in source.store.document_records():
        document = source.store.document(record.doc_id)
        if document is None:
            continue  # erased since the view was taken
        ids = chunk_ids.get(record.doc_id, [])
        records = view.chunks(ids)
        ids = sorted((c for c in ids if c in records), key=lambda c: records[c].ordinal)
        vectors = view.vectors(ids) if ids else []
        language = document.metadata.get("language", "en")
        writes = []
        for chunk_id, vector in zip(ids, vectors):
            chunk = records[chunk_id].to_chunk()
            text = index_text(document.title, chunk)
            writes.append(ChunkWrite(chunk, hashlib.sha256(text.encode()).hexdigest(), vector,
                                     Counter(analyze(text, language))))
        yield document, writes, headings.get(record.doc_id, ())
