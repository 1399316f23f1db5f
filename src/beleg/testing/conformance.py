"""A conformance suite for index backends: the contract of :mod:`beleg.index.ports` as tests.

In the style of Haystack's document-store test mixins: a backend's test module subclasses
:class:`StoreConformance`, implements :meth:`~StoreConformance.open_store`, and pytest
collects every ``test_*`` method for it::

    from beleg.testing.conformance import StoreConformance

    class TestMyBackend(StoreConformance):
        def open_store(self, location):
            return MyStore(location)          # every call: a new handle on the same index

``location`` is a fresh folder per test (override the ``location`` fixture for a backend
that lives elsewhere, e.g. one database schema per test). The suite writes through the
:class:`~beleg.index.ports.Store` port only, with small synthetic documents, 8-dimensional
vectors and Beleg's analyzer, and checks reads against references computed here from the
definitions (filters: :func:`beleg.index.filters.matches`; access:
:meth:`beleg.types.Principal.may_read`; BM25: the formula in :mod:`beleg.index.bm25`;
dense: exact cosine over every eligible vector). Requires pytest.
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from beleg.index.analyzer import analyze
from beleg.index.filters import Expr, matches, parse
from beleg.index.ports import ChunkWrite, SearchIndex, Store
from beleg.types import ANONYMOUS, Chunk, Document, Principal

DIM = 8
ALPHA = Principal("ana", "alpha", ("ops",))
BETA = Principal("bo", "beta", ())
ADMINS = Principal("root", None, ("admins",))

#: The corpus every test starts from: (doc_id, metadata, sections). Words chosen so that
#: terms are shared across documents (df > 1) and some occur only in restricted ones.
CORPUS: tuple[tuple[str, dict[str, Any], tuple[str, ...]], ...] = (
    ("d-relay", {"title": "Relay", "product": "ferrolink", "version": "2.4", "status": "current",
                 "date": "2025-03-01", "tags": ["ops", "relay"]},
     ("The relay retries webhook deliveries for 72 hours.", "Relay queues keep messages in order.")),
    ("d-relay-old", {"title": "Relay 1.8", "product": "ferrolink", "version": "1.8", "status": "historical",
                     "date": "2023-06-15"},
     ("The relay retries webhook deliveries for 12 hours.",)),
    ("d-queue", {"title": "Queues", "product": "ferrolink", "version": "10", "status": "draft",
                 "date": "2026-01-10", "tags": ["queue"]},
     ("Queues hold messages until a consumer acknowledges them.", "A queue has a retention window.",
      "Dead letters move to a redrive queue.")),
    ("d-other", {"title": "Harbor", "product": "harbor", "status": "current"},
     ("Harbor lanterns glow over granite piers.",)),
    ("d-alpha", {"title": "Alpha runbook", "product": "ferrolink", "version": "2.4", "status": "current",
                 "tenant": "alpha"},
     ("Zorbulax credentials rotate every night for the relay.", "Escalate relay outages to the alpha desk.")),
    ("d-beta", {"title": "Beta notes", "product": "ferrolink", "status": "current", "tenant": "beta"},
     ("Quibbleton retries twice before paging.",)),
    ("d-admins", {"title": "Admin keys", "product": "harbor", "acl": ["admins"]},
     ("Vexmoor keys open the harbor vault.",)),
)

#: Filters covering every operator, typed comparisons, list keys, missing keys and nesting.
FILTERS: tuple[str, ...] = (
    "status = current", "status != current", "version > 2.4", "version >= 2.4", "version < 2.4",
    "version <= 2.4", "version > 9", "status in (current, draft)", "status not in (current, draft)",
    "tags = ops", "tags in (queue, nothing)", "tags != ops", "date >= 2025-01-01 and date < 2026-01-01",
    "product = ferrolink and (status = draft or not version = 2.4)", "missing = x", "missing != x",
    "title = 'relay 1.8'",
)


def vector_for(text: str) -> np.ndarray:
    """A deterministic L2-normalised vector for a text (no model needed)."""
    seed = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def terms_of(text: str) -> Counter[str]:
    return Counter(analyze(text, "en"))


def stem(word: str) -> str:
    """The BM25 term Beleg's analyzer makes of one word."""
    return analyze(word, "en")[0]


def only_in(doc_id: str, corpus: Sequence[tuple[str, dict[str, Any], Sequence[str]]] = CORPUS) -> set[str]:
    """Terms that occur in ``doc_id`` and in no other document of ``corpus``."""
    own = {t for d, _, sections in corpus if d == doc_id for s in sections for t in terms_of(s)}
    other = {t for d, _, sections in corpus if d != doc_id for s in sections for t in terms_of(s)}
    return own - other


def make_document(doc_id: str, metadata: dict[str, Any], sections: Sequence[str]) -> tuple[Document, list[ChunkWrite]]:
    """A document whose chunks are its sections, with vectors and BM25 terms."""
    text = "\n\n".join(sections)
    writes, start = [], 0
    for ordinal, section in enumerate(sections):
        chunk_id = hashlib.sha256(f"{doc_id}\x1f{ordinal}\x1f{section}".encode()).hexdigest()[:24]
        chunk = Chunk(chunk_id, doc_id, ordinal, start, start + len(section), (str(metadata.get("title", "")),),
                      section)
        embed_hash = hashlib.sha256(section.encode()).hexdigest()[:32]
        writes.append(ChunkWrite(chunk, embed_hash, vector_for(section), terms_of(section)))
        start += len(section) + 2
    content_hash = hashlib.sha256(text.encode()).hexdigest()[:32]
    return Document(doc_id, f"docs/{doc_id}.md", text, dict(metadata), content_hash), writes


def write(store: Store, doc_id: str, metadata: dict[str, Any], sections: Sequence[str]) -> list[ChunkWrite]:
    document, writes = make_document(doc_id, metadata, sections)
    with store.transaction():
        store.upsert_document(document, writes)
    return writes


def _crash_mid_transaction(opener: Any, location: Path, ready: Any) -> None:
    """Child process: open the store, write a document inside a transaction, never commit."""
    store = opener(location)
    document, writes = make_document("d-half", {"title": "Half", "status": "current"},
                                     ("Halfwritten words never commit.", "A second halfwritten chunk."))
    with store.transaction():
        store.upsert_document(document, writes)
        ready.set()
        threading.Event().wait(60)  # killed here


class StoreConformance:
    """Tests every :class:`~beleg.index.ports.Store` / :class:`~beleg.index.ports.SearchIndex`
    backend must pass. Subclass it and implement :meth:`open_store`."""

    #: The BM25 parameters of the stores :meth:`open_store` returns.
    k1: float = 1.5
    b: float = 0.75

    def open_store(self, location: Path) -> Store:
        """A new handle on the index at ``location`` (created on first use)."""
        raise NotImplementedError("a backend's conformance test implements open_store(location)")

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture
    def location(self, tmp_path: Path) -> Path:
        return tmp_path / "index"

    @pytest.fixture
    def store(self, location: Path) -> Iterator[Store]:
        store = self.open_store(location)
        try:
            yield store
        finally:
            store.close()

    @pytest.fixture
    def loaded(self, store: Store) -> Store:
        for doc_id, metadata, sections in CORPUS:
            write(store, doc_id, metadata, sections)
        return store

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def visible_chunks(index: SearchIndex, expr: Expr | None, principal: Principal) -> set[str]:
        """The reference: chunks of documents the principal may read and the filter matches."""
        readable = {d.doc_id: d.metadata for d in index.all_documents()}
        return {cid for cid, doc_id in index.chunk_documents()
                if principal.may_read(readable[doc_id]) and matches(expr, readable[doc_id])}

    def reference_bm25(self, index: SearchIndex, query_terms: Sequence[str]) -> dict[str, float]:
        """BM25 (Lucene) of every chunk for the query, from the definition, corpus-wide statistics."""
        tfs = {cid: terms_of(record.text) for cid, record in
               index.chunks([cid for cid, _ in index.chunk_documents()]).items()}
        n = len(tfs)
        avgdl = sum(sum(t.values()) for t in tfs.values()) / n
        out: dict[str, float] = {}
        for cid, tf in tfs.items():
            dl = sum(tf.values())
            score = 0.0
            for term in dict.fromkeys(query_terms):
                df = sum(1 for t in tfs.values() if term in t)
                if tf.get(term):
                    idf = math.log1p((n - df + 0.5) / (df + 0.5))
                    score += idf * tf[term] / (tf[term] + self.k1 * (1 - self.b + self.b * dl / avgdl))
            if score > 0:
                out[cid] = score
        return out

    # ------------------------------------------------------------------ documents and chunks
    def test_ingest_then_read_back(self, loaded: Store) -> None:
        index = loaded.read_view()
        assert len(index) == sum(len(sections) for _, _, sections in CORPUS)
        assert [d.doc_id for d in index.all_documents()] == sorted(doc_id for doc_id, _, _ in CORPUS)
        chunks = index.document_chunks("d-queue", ANONYMOUS)
        assert [c.ordinal for c in chunks] == [0, 1, 2]
        document = loaded.document("d-queue")
        assert document is not None
        for c in chunks:  # offsets index into the document's text
            assert document.text[c.start:c.end] == c.text
        assert index.chunks([chunks[1].chunk_id, "no-such-chunk"]).keys() == {chunks[1].chunk_id}

    def test_generation_grows_with_each_commit_and_views_are_reused(self, store: Store) -> None:
        first = store.generation
        write(store, "d-one", {"status": "current"}, ("One lonely sentence.",))
        assert store.generation > first
        view = store.read_view()
        assert store.read_view().generation == view.generation == store.generation

    def test_update_replaces_every_chunk_vector_and_term(self, loaded: Store) -> None:
        old = {c.chunk_id for c in loaded.read_view().document_chunks("d-other", ANONYMOUS)}
        vectors_before = loaded.vector_count()
        write(loaded, "d-other", CORPUS[3][1], ("Harbor ferries carry basalt.",))
        index = loaded.read_view()
        new = index.document_chunks("d-other", ANONYMOUS)
        assert [c.text for c in new] == ["Harbor ferries carry basalt."] and not old & {c.chunk_id for c in new}
        assert not index.chunks(sorted(old))
        gone = only_in("d-other") - set(terms_of("Harbor ferries carry basalt."))
        assert gone and loaded.stored_terms(sorted(gone)) == set()  # only the old text had them
        assert stem("basalt") in loaded.stored_terms([stem("basalt")])
        assert loaded.vector_count() == vectors_before  # one vector replaced by one
        assert index.lexical_top_k(sorted(gone), 5, index.eligible(None, ANONYMOUS)) == []

    def test_metadata_only_update_keeps_chunks(self, loaded: Store) -> None:
        before = loaded.read_view().document_chunks("d-queue", ANONYMOUS)
        with loaded.transaction():
            loaded.update_metadata("d-queue", "docs/d-queue.md", {**CORPUS[2][1], "status": "current"})
        index = loaded.read_view()
        assert index.document_chunks("d-queue", ANONYMOUS) == before
        eligible = index.eligible(parse("status = draft"), ANONYMOUS)
        assert eligible.count == 0
        assert {c.chunk_id for c in before} <= self.visible_chunks(index, parse("status = current"), ANONYMOUS)

    def test_a_failed_transaction_changes_nothing(self, loaded: Store) -> None:
        generation = loaded.generation
        document, writes = make_document("d-new", {"status": "current"}, ("Never committed text.",))
        with pytest.raises(RuntimeError):
            with loaded.transaction():
                loaded.upsert_document(document, writes)
                raise RuntimeError("abort")
        assert loaded.generation == generation and loaded.document("d-new") is None
        new = set(terms_of("Never committed text.")) - {t for _, _, ss in CORPUS for x in ss for t in terms_of(x)}
        assert new and loaded.stored_terms(sorted(new)) == set()

    # ------------------------------------------------------------------ erasure
    def test_erasure_leaves_no_trace(self, loaded: Store) -> None:
        writes = make_document(*CORPUS[4])[1]
        vectors_before = loaded.vector_count()
        summary = loaded.erase(["d-alpha", "d-never-existed"])
        assert (summary.documents, summary.chunks, summary.vectors) == (1, 2, 2)
        unique = only_in("d-alpha")
        assert summary.terms == len(unique) and summary.complete
        index = loaded.read_view()
        assert loaded.document("d-alpha") is None
        assert "d-alpha" not in {d.doc_id for d in index.all_documents()}
        assert not index.chunks([w.chunk.chunk_id for w in writes])
        assert unique and loaded.stored_terms(sorted(unique)) == set()
        assert stem("relay") in loaded.stored_terms([stem("relay")])  # shared with other documents: kept
        assert loaded.vector_count() == vectors_before - 2
        assert index.lexical_top_k(sorted(unique), 5, index.eligible(None, ALPHA)) == []
        assert not any(index.term_statistics(sorted(unique), index.eligible(None, ALPHA)).known(t) for t in unique)

    # ------------------------------------------------------------------ filters and access
    @pytest.mark.parametrize("where", FILTERS)
    def test_every_filter_operator_matches_the_reference(self, loaded: Store, where: str) -> None:
        index = loaded.read_view()
        expr = parse(where)
        for principal in (ANONYMOUS, ALPHA):
            expected = self.visible_chunks(index, expr, principal)
            eligible = index.eligible(expr, principal)
            assert eligible.count == len(expected), (where, principal)
            assert {cid for cid, _ in index.chunk_documents() if cid in eligible} == expected
            found = index.dense_top_k(vector_for("relay"), 100, eligible)
            assert {h.chunk_id for h in found} == expected

    def test_permissions_fail_closed(self, loaded: Store) -> None:
        index = loaded.read_view()
        public = {doc_id for doc_id, meta, _ in CORPUS if "tenant" not in meta and "acl" not in meta}
        assert {d.doc_id for d in index.documents(ANONYMOUS)} == public
        assert {d.doc_id for d in index.documents(Principal(None, "gamma", ("nobody",)))} == public
        assert {d.doc_id for d in index.documents(ALPHA)} == public | {"d-alpha"}
        assert {d.doc_id for d in index.documents(ADMINS)} == public | {"d-admins"}
        # A filter only narrows: asking for another tenant's documents finds nothing.
        assert index.eligible(parse("tenant = alpha"), ANONYMOUS).count == 0
        assert index.eligible(parse("tenant = alpha"), BETA).count == 0
        assert index.document_chunks("d-alpha", BETA) == []
        assert index.documents(BETA, ["d-alpha"]) == []
        everything = index.eligible(None, ANONYMOUS)
        words = [stem(w) for w in ("relay", "zorbulax", "vexmoor", "quibbleton")]
        for hit in index.lexical_top_k(words, 50, everything):
            assert hit.doc_id in public
        assert index.metadata_values("version", ANONYMOUS) == {"2.4", "1.8", "10"}
        assert index.metadata_values("title", BETA) >= {"Beta notes"}
        assert "Alpha runbook" not in index.metadata_values("title", BETA)

    def test_term_statistics_reveal_nothing_restricted(self, loaded: Store) -> None:
        index = loaded.read_view()
        zorbulax, vexmoor, quibbleton, relay = (stem(w) for w in ("zorbulax", "vexmoor", "quibbleton", "relay"))
        hidden = [zorbulax, vexmoor, quibbleton]
        for principal, sees in ((ANONYMOUS, set()), (ALPHA, {zorbulax}), (BETA, {quibbleton}),
                                (ADMINS, {vexmoor})):
            stats = index.term_statistics(hidden + [relay], index.eligible(None, principal))
            assert {t for t in hidden if stats.known(t)} == sees, principal
            assert stats.known(relay)
            # Unseen looks exactly like nonexistent.
            unseen = zorbulax if zorbulax not in sees else vexmoor
            assert stats.idf_of(unseen) == stats.idf_of("nonexistentzz") == stats.unseen_idf
        # A filter narrows statistics too: a term visible only outside the filter is unknown.
        harbor, queue = stem("harbor"), stem("queue")
        draft = index.term_statistics([harbor, queue], index.eligible(parse("status = draft"), ANONYMOUS))
        assert not draft.known(harbor) and draft.known(queue)
        # Known terms carry the idf lexical scoring uses (corpus-wide N and df, see ports.py).
        public, alpha = (index.term_statistics([relay], index.eligible(None, p)) for p in (ANONYMOUS, ALPHA))
        assert public.idf_of(relay) == pytest.approx(alpha.idf_of(relay), abs=1e-9)
        assert public.chunks == len(index)

    # ------------------------------------------------------------------ scoring
    @pytest.mark.parametrize("query", ["relay retries webhook", "queue", "harbor granite relay", "nothingmatches"])
    def test_bm25_scores_match_the_definition(self, loaded: Store, query: str) -> None:
        index = loaded.read_view()
        terms = list(dict.fromkeys(analyze(query, "en")))
        reference = self.reference_bm25(index, terms)
        eligible = index.eligible(None, ALPHA)
        visible = self.visible_chunks(index, None, ALPHA)
        found = index.lexical_top_k(terms, 100, eligible)
        expected = {cid: s for cid, s in reference.items() if cid in visible}
        assert {h.chunk_id for h in found} == set(expected)
        for hit in found:
            assert hit.score == pytest.approx(expected[hit.chunk_id], rel=1e-6, abs=1e-6)
        assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
        top = index.lexical_top_k(terms, 2, eligible)
        assert [h.chunk_id for h in top] == [h.chunk_id for h in found[:2]]

    @pytest.mark.parametrize("where", [None, "status = current", "version >= 2.4"])
    def test_dense_top_k_is_exact(self, loaded: Store, where: str | None) -> None:
        index = loaded.read_view()
        expr = parse(where) if where else None
        visible = sorted(self.visible_chunks(index, expr, ALPHA))
        query = vector_for("webhook deliveries")
        records = index.chunks(visible)
        scores = {cid: float(vector_for(records[cid].text) @ query) for cid in visible}
        expected = sorted(visible, key=lambda c: -scores[c])[:3]
        found = index.dense_top_k(query, 3, index.eligible(expr, ALPHA))
        assert [h.chunk_id for h in found] == expected
        for hit in found:
            assert hit.score == pytest.approx(scores[hit.chunk_id], abs=1e-5)
            assert hit.doc_id == records[hit.chunk_id].doc_id
        assert np.allclose(index.vectors([h.chunk_id for h in found]),
                           np.stack([vector_for(records[h.chunk_id].text) for h in found]), atol=1e-6)

    # ------------------------------------------------------------------ concurrency and crashes
    def test_a_view_stays_consistent_while_another_writer_commits(self, loaded: Store, location: Path) -> None:
        view = loaded.read_view()
        eligible = view.eligible(None, ANONYMOUS)
        relay, basalt = stem("relay"), stem("basalt")

        def observed() -> tuple[Any, ...]:
            return (view.generation, len(view), eligible.count, view.lexical_top_k([relay], 10, eligible),
                    view.dense_top_k(vector_for("q"), 5, eligible), view.term_statistics([relay, basalt], eligible),
                    view.metadata_values("status", ANONYMOUS))

        before = observed()
        errors: list[BaseException] = []

        def writer() -> None:
            try:
                other = self.open_store(location)
                try:
                    write(other, "d-late", {"status": "review"}, ("Relay basalt arrives late.",))
                    other.erase(["d-relay-old"])
                finally:
                    other.close()
            except BaseException as exc:  # reported in the main thread
                errors.append(exc)

        thread = threading.Thread(target=writer)
        thread.start()
        thread.join(60)
        assert not errors, errors
        assert observed() == before
        fresh = loaded.read_view()
        assert fresh.generation > view.generation
        assert "review" in fresh.metadata_values("status", ANONYMOUS)
        assert "d-relay-old" not in {d.doc_id for d in fresh.all_documents()}

    def test_a_writer_killed_mid_transaction_leaves_the_last_commit(self, loaded: Store, location: Path) -> None:
        generation, chunks = loaded.generation, len(loaded.read_view())
        context = multiprocessing.get_context("fork")
        ready = context.Event()
        child = context.Process(target=_crash_mid_transaction, args=(self.open_store, location, ready))
        child.start()
        try:
            assert ready.wait(60), "the writer never reached its transaction"
        finally:
            child.kill()
            child.join(30)
        reopened = self.open_store(location)
        try:
            index = reopened.read_view()
            assert reopened.generation == generation and len(index) == chunks
            assert reopened.document("d-half") is None and reopened.stored_terms([stem("halfwritten")]) == set()
            write(reopened, "d-after", {"status": "current"}, ("Written after the crash.",))  # still writable
            assert reopened.read_view().document_chunks("d-after", ANONYMOUS)
        finally:
            reopened.close()
