"""What a read costs PostgreSQL: the row-level security test is inlined into the plan (not a
function call per row read), and vectors stay in the chunk rows (not in TOAST, which an exact
scan would fetch row by row). Both hold for a new index and after migrating an older one."""

from __future__ import annotations

import numpy as np
from psycopg import sql

import beleg
from beleg.index.postgres import rls
from beleg.index.postgres.store import PostgresStore
from beleg.types import Principal
from tests.postgres.test_bulk_load import synthetic_items


def reader_plan(store: PostgresStore, principal: Principal, query: str) -> str:
    with store.conn.transaction(), store.conn.cursor() as cur:
        rls.bind_principal(cur, principal)
        rows = cur.execute(sql.SQL("EXPLAIN (VERBOSE) " + query).format(s=sql.Identifier(store.schema))).fetchall()
    return "\n".join(r[0] for r in rows)


def embedding_storage(store: PostgresStore) -> str:
    return store.conn.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass "
                              "AND attname = 'embedding'", (f"{store.schema}.chunks",)).fetchone()[0]


def test_the_access_policy_is_inlined_for_every_protected_table(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        for table in rls.PROTECTED_TABLES:
            plan = reader_plan(store, Principal("ann", "acme", ("ops",)), f"SELECT count(*) FROM {{s}}.{table}")
            assert "may_read" not in plan, plan  # a function call per row before
            assert "current_setting" in plan  # the policy is there, as an expression
    finally:
        store.drop()
        store.close()


def test_the_inlined_policy_reads_what_the_principal_may_read(pg_location: str) -> None:
    """Every combination of row tenant/ACL and principal, against Principal.may_read."""
    store = PostgresStore(pg_location)
    rows = [(None, None), ("acme", None), ("nordwind", None), (None, []), (None, ["ops"]),
            (None, ["user:ann", "hr"]), ("acme", ["ops"]), ("acme", ["user:bob"])]
    principals = [beleg.ANONYMOUS, Principal("ann", "acme", ()), Principal("bob", None, ("ops",)),
                  Principal("eve", "nordwind", ("hr", "ops")), Principal(None, None, ("ops",))]
    try:
        for principal in principals:
            with store.conn.transaction(), store.conn.cursor() as cur:
                rls.bind_principal(cur, principal)
                for tenant, acl in rows:
                    keys = None if acl is None else rls.document_access({"acl": acl})[1]
                    got = cur.execute(sql.SQL("SELECT {}.may_read(%s, %s)").format(sql.Identifier(store.schema)),
                                      (tenant, keys)).fetchone()[0]
                    meta = {**({"tenant": tenant} if tenant else {}), **({"acl": acl} if acl is not None else {})}
                    assert got == principal.may_read(meta), (principal, tenant, acl)
    finally:
        store.drop()
        store.close()


def test_vectors_are_stored_in_the_chunk_rows(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    try:
        for item in synthetic_items(3):
            store.upsert_document(*item)
        assert embedding_storage(store) == "m"  # MAIN: inline unless the row cannot fit a page
        toast = store.conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = %s::regclass",
                                   (f"{store.schema}.chunks",)).fetchone()[0]
        assert store.conn.execute(f"SELECT count(*) FROM {toast}").fetchone()[0] == 0
    finally:
        store.drop()
        store.close()


def test_an_older_schema_is_migrated_to_the_inlined_policy_and_inline_vectors(pg_location: str) -> None:
    store = PostgresStore(pg_location)
    schema = store.schema
    s = sql.Identifier(schema)
    try:
        item = synthetic_items(2)[1]
        store.upsert_document(*item)
        # As an index written before this migration: the per-row function, vectors in TOAST.
        store.conn.execute(sql.SQL("""CREATE OR REPLACE FUNCTION {s}.may_read(tenant text, acl text[])
            RETURNS boolean LANGUAGE sql STABLE AS $$ SELECT coalesce((tenant IS NULL OR tenant =
            (NULLIF(current_setting('beleg.principal_tenant', true), '')::jsonb #>> '{{}}')) AND (acl IS NULL OR
            acl && ARRAY(SELECT jsonb_array_elements_text(NULLIF(current_setting('beleg.principal_acl', true),
            '')::jsonb))), false) $$""").format(s=s))
        store.conn.execute(sql.SQL("ALTER TABLE {s}.chunks ALTER COLUMN embedding SET STORAGE EXTERNAL").format(s=s))
        latest = store.conn.execute(sql.SQL("SELECT max(version) FROM {s}.schema_migrations").format(s=s)).fetchone()[0]
        store.conn.execute(sql.SQL("DELETE FROM {s}.schema_migrations WHERE version >= %s").format(s=s),
                           (read_cost_version(),))
        assert "may_read" in reader_plan(store, beleg.ANONYMOUS, "SELECT count(*) FROM {s}.chunks")
        store.close()
        store = PostgresStore(pg_location)  # opening migrates
        assert store.conn.execute(sql.SQL("SELECT max(version) FROM {s}.schema_migrations").format(s=s)
                                  ).fetchone()[0] == latest
        assert "may_read" not in reader_plan(store, beleg.ANONYMOUS, "SELECT count(*) FROM {s}.chunks")
        assert embedding_storage(store) == "m"
        view = store.read_view()
        acme = Principal(None, "acme", ())  # the document is of tenant Acme
        hits = view.dense_top_k(np.asarray(item[1][0].vector), 1, view.eligible(None, acme))
        assert hits and hits[0].chunk_id == item[1][0].chunk.chunk_id
    finally:
        store.drop()
        store.close()


def read_cost_version() -> int:
    from beleg.index.postgres import schema

    return next(v for v, description, _ in schema.MIGRATIONS if "inlined" in description)



def test_a_view_looks_up_a_keys_stored_values_once_per_principal(pg_location: str, monkeypatch) -> None:
    """Compiling a filter reads the distinct stored values of each key (every document the
    principal may read); within one snapshot they cannot change, so a view asks once per
    key and principal, and never answers one principal with another's values."""
    from beleg.index.filters import parse

    store = PostgresStore(pg_location)
    try:
        for item in synthetic_items(12):
            store.upsert_document(*item)
        view = store.read_view()
        lookups: list[str] = []
        query = view.reader_query
        monkeypatch.setattr(view, "reader_query", lambda principal, text, *a, **k: (
            lookups.append(text) if "DISTINCT d.metadata" in text else None) or query(principal, text, *a, **k))
        acme, nordwind = Principal(None, "acme", ()), Principal(None, "nordwind", ())
        where = parse("tenant = acme and status = current")
        counts = [view.eligible(where, who).count for who in (acme, acme, nordwind, acme)]
        assert len(lookups) == 4  # two keys, for two principals; the repeats cost nothing
        assert counts[0] == counts[1] == counts[3] > 0 and counts[2] == 0
        assert counts[0] == sum(len(w) for d, w, _ in synthetic_items(12) if acme.may_read(d.metadata)
                                and d.metadata.get("tenant") == "Acme" and d.metadata["status"] == "current")
    finally:
        store.drop()
        store.close()
