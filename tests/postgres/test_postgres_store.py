"""PostgreSQL-specific behaviour beyond the conformance suite: per-tenant statistics, filters
that cannot inject SQL, the HNSW path for broad filters, migrations, other processes' commits."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from psycopg import sql

from beleg.errors import IndexStateError, IndexVersionError
from beleg.index.filters import And, Cmp, parse, to_expr
from beleg.index.postgres import search
from beleg.index.postgres.schema import SCHEMA_VERSION
from beleg.index.postgres.store import PostgresStore
from beleg.testing.conformance import ALPHA, CORPUS, make_document, stem, vector_for, write
from beleg.types import ANONYMOUS


def alpha_scores(store: PostgresStore) -> dict[str, float]:
    index = store.read_view()
    hits = index.lexical_top_k([stem("relay"), stem("retries")], 50, index.eligible(None, ALPHA))
    return {h.chunk_id: h.score for h in hits}


@pytest.mark.parametrize("per_tenant", [False, True])
def test_per_tenant_statistics_keep_a_tenants_scores_still(pg_location: str, per_tenant: bool) -> None:
    store = PostgresStore(pg_location, per_tenant_statistics=per_tenant)
    try:
        for doc_id, metadata, sections in CORPUS:
            if metadata.get("tenant") != "beta":
                write(store, doc_id, metadata, sections)
        before = alpha_scores(store)
        # Another tenant adds documents full of the same words.
        for i in range(5):
            write(store, f"d-beta-{i}", {"tenant": "beta"}, (f"Relay retries relay number {i}.",))
        after = alpha_scores(store)
        assert before.keys() == after.keys() and before
        moved = max(abs(before[c] - after[c]) for c in before)
        if per_tenant:
            assert moved < 1e-9
        else:
            assert moved > 1e-3  # corpus-wide statistics: beta's documents change N and df
        assert PostgresStore(pg_location).per_tenant_statistics is per_tenant  # recorded with the index
    finally:
        store.close()


def test_filter_values_and_keys_never_become_sql(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        evil = "x'); DROP TABLE documents; --"
        write(store, "d-evil", {"title": evil, "ti'tle\"; --": "y"}, ("An evil title.",))
        write(store, "d-plain", {"title": "plain"}, ("A plain title.",))
        index = store.read_view()
        assert index.eligible(parse(f'title = "{evil}"'), ANONYMOUS).count == 1
        assert index.eligible(to_expr({"ti'tle\"; --": "y"}), ANONYMOUS).count == 1
        assert index.eligible(And((Cmp("title", "in", (evil, "plain")), Cmp("x'--", "!=", "1"))),
                              ANONYMOUS).count == 2
        assert len(store.read_view().all_documents()) == 2  # the tables are all there
    finally:
        store.close()


def test_broad_filters_use_the_hnsw_index_with_iterative_scan(pg_location: str, monkeypatch) -> None:
    store = PostgresStore(pg_location, exact_below=0)  # every search takes the ANN path
    try:
        rng = np.random.default_rng(7)
        documents = []
        for i in range(60):
            sections = tuple(f"Section {i}-{j} word{rng.integers(1000)}" for j in range(5))
            documents.append(make_document(f"d-{i:03d}", {"group": "rare" if i % 20 == 0 else "common"}, sections))
        with store.transaction():
            for document, writes in documents:
                store.upsert_document(document, writes)
        calls = []
        original = search.PostgresSearchIndex._approximate
        monkeypatch.setattr(search.PostgresSearchIndex, "_approximate",
                            lambda self, *a: calls.append(a) or original(self, *a))
        index = store.read_view()
        chunks = {w.chunk.chunk_id: (w.vector, d.metadata["group"]) for d, ws in documents for w in ws}
        for where, k in ((None, 10), ("group = rare", 10)):
            query = vector_for(f"query {where}")
            eligible = [c for c, (_, g) in chunks.items() if where is None or g == "rare"]
            exact = sorted(eligible, key=lambda c: -float(chunks[c][0] @ query))[:k]
            found = index.dense_top_k(query, k, index.eligible(parse(where) if where else None, ANONYMOUS))
            assert len(found) == k  # a selective filter does not starve the index scan
            assert {h.chunk_id for h in found} <= set(eligible)
            assert len({h.chunk_id for h in found} & set(exact)) >= k - 1  # recall@10 >= 0.9
            assert [h.score for h in found] == sorted((h.score for h in found), reverse=True)
        assert len(calls) == 2
    finally:
        store.close()


def test_migrations_are_recorded_and_a_newer_schema_is_refused(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        s = sql.Identifier(store.schema)
        rows = store.conn.execute(sql.SQL("SELECT version FROM {}.schema_migrations").format(s)).fetchall()
        assert rows == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
        PostgresStore(pg_location).close()  # reopening applies nothing twice
        assert store.conn.execute(sql.SQL("SELECT count(*) FROM {}.schema_migrations").format(s)).fetchone() == (SCHEMA_VERSION,)
        store.conn.execute(sql.SQL("INSERT INTO {}.schema_migrations VALUES (99, 'from the future')").format(s))
        with pytest.raises(IndexVersionError, match="version 99"):
            PostgresStore(pg_location)
    finally:
        store.close()


def test_vectors_of_another_width_are_refused(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        write(store, "d-one", {}, ("Eight wide.",))
        document, writes = make_document("d-two", {}, ("Sixteen wide.",))
        wide = [type(w)(w.chunk, w.embed_hash, np.ones(16, np.float32) / 4, w.terms) for w in writes]
        with pytest.raises(IndexStateError, match="8-dimensional vectors, got 16"):
            store.upsert_document(document, wide)
    finally:
        store.close()


def test_a_commit_in_another_process_is_seen_at_the_next_view(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        write(store, "d-first", {"status": "current"}, ("First words.",))
        view = store.read_view()
        child = textwrap.dedent(f"""
            from beleg.index.postgres.store import PostgresStore
            from beleg.testing.conformance import write
            store = PostgresStore({pg_location!r})
            write(store, "d-second", {{"status": "current"}}, ("Second words from elsewhere.",))
            store.close()
        """)
        subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
        assert [d.doc_id for d in view.all_documents()] == ["d-first"]  # the old view stays as it was
        fresh = store.read_view()
        assert fresh is not view and [d.doc_id for d in fresh.all_documents()] == ["d-first", "d-second"]
        hits = fresh.lexical_top_k([stem("elsewhere")], 5, fresh.eligible(None, ANONYMOUS))
        assert [h.doc_id for h in hits] == ["d-second"]
    finally:
        store.close()


def test_one_view_shared_by_threads_keeps_each_principal_apart(pg_location: str) -> None:
    """Threads of one process share a view (decompose runs sub-questions in parallel): the
    principal bound for one thread's query must never be another's."""
    import threading

    from beleg.testing.conformance import ADMINS, BETA

    store = PostgresStore(pg_location)
    try:
        for doc_id, metadata, sections in CORPUS:
            write(store, doc_id, metadata, sections)
        index = store.read_view()
        words = [stem(w) for w in ("relay", "zorbulax", "vexmoor", "quibbleton", "harbor")]
        principals = (ANONYMOUS, ALPHA, BETA, ADMINS)

        def look(principal):
            eligible = index.eligible(None, principal)
            return (sorted(h.chunk_id for h in index.lexical_top_k(words, 50, eligible)),
                    [d.doc_id for d in index.documents(principal)])

        expected = {p: look(p) for p in principals}
        assert len({str(v) for v in expected.values()}) == 4
        errors, wrong = [], []

        def worker(i: int) -> None:
            try:
                for j in range(15):
                    principal = principals[(i + j) % 4]
                    if look(principal) != expected[principal]:
                        wrong.append(principal)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors and not wrong
    finally:
        store.close()


def test_statistics_stay_equal_to_a_full_recount(pg_location: str) -> None:
    """df and corpus totals are maintained by deltas; after updates, tenant moves and erasures
    they must equal a recount from the postings and chunks themselves."""
    store = PostgresStore(pg_location)
    s = sql.Identifier(store.schema)

    def check() -> None:
        kept = set(store.conn.execute(sql.SQL("SELECT term, tenant_key, df FROM {}.term_df").format(s)).fetchall())
        recount = set(store.conn.execute(sql.SQL(
            "SELECT term, coalesce(tenant_key, ''), count(*)::int FROM {}.postings GROUP BY 1, 2").format(s)).fetchall())
        assert kept == recount
        totals = set(store.conn.execute(sql.SQL("SELECT * FROM {}.corpus_stats").format(s)).fetchall())
        recount = set(store.conn.execute(sql.SQL(
            "SELECT coalesce(tenant_key, ''), count(*), sum(length) FROM {}.chunks GROUP BY 1").format(s)).fetchall())
        assert totals == recount

    try:
        for doc_id, metadata, sections in CORPUS:
            write(store, doc_id, metadata, sections)
        check()
        write(store, "d-relay", {**CORPUS[0][1], "tenant": "beta"}, ("The relay now belongs to beta.",))
        check()
        with store.transaction():
            store.update_metadata("d-alpha", "docs/d-alpha.md", {**CORPUS[4][1], "tenant": "beta"})
            store.update_metadata("d-other", "docs/d-other.md", {**CORPUS[3][1], "tenant": "gamma"})
        check()
        store.erase(["d-beta", "d-queue"])
        check()
        store.erase([doc_id for doc_id, _, _ in CORPUS])
        check()
        assert store.conn.execute(sql.SQL("SELECT count(*) FROM {}.term_df").format(s)).fetchone() == (0,)
    finally:
        store.close()


def test_chunk_reads_never_see_an_open_write_transaction(pg_location: str) -> None:
    """Display reads go to the latest commit on a connection of their own: not into a write
    transaction that another thread of the process has open (and might yet roll back)."""
    store = PostgresStore(pg_location)
    try:
        write(store, "d-first", {}, ("Committed words.",))
        view = store.read_view()
        document, writes = make_document("d-open", {}, ("Uncommitted words.",))
        with pytest.raises(RuntimeError):
            with store.transaction():
                store.upsert_document(document, writes)
                assert view.chunks([writes[0].chunk.chunk_id]) == {}
                raise RuntimeError("roll back")
        assert view.chunks([writes[0].chunk.chunk_id]) == {}
    finally:
        store.close()
