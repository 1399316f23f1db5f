"""Row-Level Security: the database refuses another principal's rows even to a query that
forgets its access predicate."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from beleg.index.postgres import rls, search
from beleg.index.postgres.config import READER_ROLE
from beleg.index.postgres.store import PostgresStore
from beleg.testing.conformance import ADMINS, ALPHA, BETA, CORPUS, stem, vector_for, write
from beleg.types import ANONYMOUS, Principal

PUBLIC = {d for d, meta, _ in CORPUS if "tenant" not in meta and "acl" not in meta}


@pytest.fixture
def loaded(pg_location: str):
    store = PostgresStore(pg_location)
    for doc_id, metadata, sections in CORPUS:
        write(store, doc_id, metadata, sections)
    yield store
    store.close()


def unfiltered(store: PostgresStore, principal: Principal | None, table: str, column: str) -> set[str]:
    """``SELECT * FROM <table>`` with no WHERE at all, as the reader role bound to ``principal``."""
    with psycopg.connect(store.pg_location.conninfo) as conn, conn.cursor() as cur:  # one transaction
        if principal is None:
            cur.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(READER_ROLE)))
        else:
            rls.bind_principal(cur, principal)
        cur.execute(sql.SQL("SELECT * FROM {}.{}").format(sql.Identifier(store.schema), sql.Identifier(table)))
        names = [d.name for d in cur.description]
        return {row[names.index(column)] for row in cur.fetchall()}


def doc_of_chunk(store: PostgresStore) -> dict[str, str]:
    return dict(store.conn.execute(sql.SQL("SELECT chunk_id, doc_id FROM {}.chunks").format(
        sql.Identifier(store.schema))).fetchall())


@pytest.mark.parametrize("principal, extra", [(ANONYMOUS, set()), (None, set()), (ALPHA, {"d-alpha"}),
                                              (BETA, {"d-beta"}), (ADMINS, {"d-admins"}),
                                              (Principal("eve", "gamma", ("nobody",)), set())])
def test_an_unfiltered_select_returns_only_the_principals_rows(loaded: PostgresStore, principal, extra) -> None:
    chunks = doc_of_chunk(loaded)
    allowed = PUBLIC | extra
    assert unfiltered(loaded, principal, "documents", "doc_id") == allowed
    assert {chunks[c] for c in unfiltered(loaded, principal, "chunks", "chunk_id")} == allowed
    rows = dict(loaded.conn.execute(sql.SQL("SELECT row, doc_id FROM {}.chunks").format(
        sql.Identifier(loaded.schema))).fetchall())
    assert {rows[r] for r in unfiltered(loaded, principal, "postings", "chunk_row")} == allowed


def test_the_tables_force_rls_and_the_reader_owns_nothing(loaded: PostgresStore) -> None:
    rows = loaded.conn.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = ANY(%s)", (loaded.schema, list(rls.PROTECTED_TABLES))).fetchall()
    assert {r[0] for r in rows} == set(rls.PROTECTED_TABLES)
    assert all(r[1] and r[2] and r[3] != READER_ROLE for r in rows)
    reader = loaded.conn.execute("SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s",
                                 (READER_ROLE,)).fetchone()
    assert reader == (False, False, False)


@pytest.mark.parametrize("table", ["term_df", "corpus_stats", "meta"])
def test_the_reader_cannot_read_statistics_or_meta(loaded: PostgresStore, table: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        unfiltered(loaded, ALPHA, table, "term" if table == "term_df" else "tenant_key")


def test_the_reader_cannot_write(loaded: PostgresStore) -> None:
    with psycopg.connect(loaded.pg_location.conninfo) as conn, conn.cursor() as cur:
        rls.bind_principal(cur, ALPHA)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            cur.execute(sql.SQL("DELETE FROM {}.chunks").format(sql.Identifier(loaded.schema)))


def test_a_query_that_forgets_the_access_predicate_still_sees_only_its_rows(loaded: PostgresStore,
                                                                          monkeypatch) -> None:
    """Simulate the bug RLS exists for: every search query loses its explicit access test."""
    monkeypatch.setattr(rls, "access_predicate", lambda alias, principal: (sql.SQL("TRUE"), {}))
    monkeypatch.setattr(search.rls, "access_predicate", lambda alias, principal: (sql.SQL("TRUE"), {}))
    index = loaded.read_view()
    for principal, own in ((ANONYMOUS, set()), (BETA, {"d-beta"}), (ALPHA, {"d-alpha"})):
        eligible = index.eligible(None, principal)
        words = [stem(w) for w in ("relay", "zorbulax", "vexmoor", "quibbleton", "harbor")]
        lexical = {h.doc_id for h in index.lexical_top_k(words, 100, eligible)}
        dense = {h.doc_id for h in index.dense_top_k(vector_for("relay"), 100, eligible)}
        assert lexical <= PUBLIC | own and dense == PUBLIC | own
        assert {d.doc_id for d in index.documents(principal)} == PUBLIC | own
        assert index.document_chunks("d-alpha", principal) == ([] if "d-alpha" not in own else
                                                               index.document_chunks("d-alpha", ALPHA))
    # Control: without RLS (as the owner) the same broken query returns everyone's rows.
    owner = {r[0] for r in loaded.conn.execute(sql.SQL("SELECT doc_id FROM {}.documents").format(
        sql.Identifier(loaded.schema)))}
    assert owner == {d for d, _, _ in CORPUS}


def test_the_principal_setting_is_per_transaction(loaded: PostgresStore) -> None:
    """After the transaction that bound ALPHA ends, the session is back to no principal."""
    with psycopg.connect(loaded.pg_location.conninfo, autocommit=True) as conn:
        with conn.transaction(), conn.cursor() as cur:
            rls.bind_principal(cur, ALPHA)
        with conn.transaction(), conn.cursor() as cur:
            cur.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(READER_ROLE)))
            cur.execute(sql.SQL("SELECT doc_id FROM {}.documents").format(sql.Identifier(loaded.schema)))
            assert {r[0] for r in cur.fetchall()} == PUBLIC
