"""The PostgreSQL backend against the embedded one on a real corpus (the demo's documents,
paragraphs as chunks): BM25 scores equal to 1e-6, the same term statistics, the same exact
dense top-k, the same eligibility, for several principals and filters."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from beleg.index.analyzer import analyze, analyze_query, detect_language
from beleg.index.catalog import Catalog
from beleg.index.embedded import EmbeddedStore
from beleg.index.filters import parse
from beleg.index.ports import ChunkWrite
from beleg.index.postgres.store import PostgresStore
from beleg.types import ANONYMOUS, Chunk, Document, Principal

CORPUS = Path(__file__).resolve().parents[2] / "demo" / "corpus"
DIM = 16
PRINCIPALS = (ANONYMOUS, Principal("ana", "nordwind", ("ops",)), Principal("bo", "suedhafen", ()),
              Principal("root", None, ("admins",)))
QUERIES = ("How long does Ferrolink retry failed webhook deliveries?", "E-4012", "POST /v5/queues/{id}/redrive",
           "X-Request-Id header", "Wie lange werden Nachrichten aufbewahrt?", "retention window dead letter queue",
           "the", "zzzunknownword")
FILTERS = (None, "lang = de", "part >= 2", "tenant = nordwind", "not lang = en or part < 1")


def vector(text: str) -> np.ndarray:
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def documents() -> list[tuple[Document, list[ChunkWrite]]]:
    """Every demo file as a document; access varied by file so every principal sees a different part."""
    out = []
    for i, path in enumerate(sorted(CORPUS.rglob("*.md"))):
        text = path.read_text(encoding="utf-8")
        lang = detect_language(text)
        meta: dict = {"lang": lang, "part": i % 4, "title": path.stem}
        if i % 5 == 1:
            meta["tenant"] = "Nordwind"
        elif i % 5 == 2:
            meta["tenant"] = "suedhafen"
        elif i % 5 == 3:
            meta["acl"] = ["admins", "user:ana"]
        doc_id = f"doc-{i:02d}"
        writes = []
        for ordinal, m in enumerate(re.finditer(r"\S(?:.*?\S)?(?=\n\s*\n|\Z)", text, re.S)):
            para = m.group(0)
            chunk = Chunk(hashlib.sha256(f"{doc_id}/{ordinal}/{para}".encode()).hexdigest()[:24], doc_id, ordinal,
                          m.start(), m.end(), (path.stem,), para)
            writes.append(ChunkWrite(chunk, hashlib.sha256(para.encode()).hexdigest(), vector(para),
                                     Counter(analyze(para, lang))))
        out.append((Document(doc_id, str(path), text, meta, hashlib.sha256(text.encode()).hexdigest()), writes))
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory, postgres_url):
    import psycopg

    schema = f"t_agree_{hashlib.sha256(str(tmp_path_factory.getbasetemp()).encode()).hexdigest()[:8]}"
    embedded = EmbeddedStore(Catalog(tmp_path_factory.mktemp("embedded") / "catalog.sqlite"), dim=DIM)
    pg = PostgresStore(f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schema}")
    for store in (embedded, pg):
        for document, writes in documents():
            with store.transaction():
                store.upsert_document(document, writes)
    yield embedded.read_view(), pg.read_view()
    embedded.close()
    pg.drop()
    pg.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_the_corpus_is_big_enough_to_mean_something(both) -> None:
    embedded, pg = both
    assert len(embedded) == len(pg) > 300
    assert [d.doc_id for d in embedded.all_documents()] == [d.doc_id for d in pg.all_documents()]


@pytest.mark.parametrize("where", FILTERS)
@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: str(p.tenant or p.user or "anonymous"))
def test_bm25_scores_agree_to_1e6(both, principal: Principal, where: str | None) -> None:
    embedded, pg = both
    expr = parse(where) if where else None
    e_elig, p_elig = embedded.eligible(expr, principal), pg.eligible(expr, principal)
    assert e_elig.count == p_elig.count
    compared = 0
    for query in QUERIES:
        terms = analyze_query(query)
        e_hits = embedded.lexical_top_k(terms, 25, e_elig)
        p_hits = pg.lexical_top_k(terms, 25, p_elig)
        assert len(e_hits) == len(p_hits), query
        e_scores = {h.chunk_id: h.score for h in embedded.lexical_top_k(terms, 10_000, e_elig)}
        for hit in p_hits:  # the same chunks, up to ties at the cut
            assert hit.score == pytest.approx(e_scores[hit.chunk_id], abs=1e-6, rel=1e-6), query
            compared += 1
        assert np.allclose([h.score for h in e_hits], [h.score for h in p_hits], atol=1e-6, rtol=0)
        e_stats, p_stats = embedded.term_statistics(terms, e_elig), pg.term_statistics(terms, p_elig)
        assert e_stats.chunks == p_stats.chunks
        assert e_stats.idf.keys() == p_stats.idf.keys()
        for term, idf in e_stats.idf.items():
            assert p_stats.idf[term] == pytest.approx(idf, abs=1e-9)
    if expr is None:
        assert compared > 20


@pytest.mark.parametrize("where", FILTERS)
def test_exact_dense_top_k_agrees(both, where: str | None) -> None:
    embedded, pg = both
    expr = parse(where) if where else None
    for principal in PRINCIPALS:
        for text in QUERIES[:3]:
            q = vector(text)
            e_hits = embedded.dense_top_k(q, 10, embedded.eligible(expr, principal))
            p_hits = pg.dense_top_k(q, 10, pg.eligible(expr, principal))
            assert [h.chunk_id for h in p_hits] == [h.chunk_id for h in e_hits]
            assert np.allclose([h.score for h in p_hits], [h.score for h in e_hits], atol=1e-5)
