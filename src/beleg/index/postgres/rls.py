"""Row-Level Security: the database itself refuses another principal's rows.

Every search runs as :data:`~beleg.index.postgres.config.READER_ROLE`, a role that owns
nothing, with the principal bound to the transaction (``set_config(..., is_local => true)``,
the same as ``SET LOCAL beleg.principal_tenant``). The tables that hold text, terms or
vectors (documents, chunks with their vectors, postings) have ``FORCE ROW LEVEL SECURITY``
and a policy that lets the reader see a row only when :func:`may_read_sql` holds for the
principal of the transaction. So a query that forgets its access predicate (every query
also states it, :func:`access_predicate`) still returns only the principal's rows.

Each row carries its document's access columns, folded as :class:`beleg.types.Principal`
compares them: ``tenant_key`` (the folded tenant, NULL for none) and ``acl_keys`` (the
canonical ACL entries, NULL when the document has no ACL; an empty array lets nobody in).

What it does not protect against: SQL run by someone who can execute arbitrary statements
on the connection (they can set the principal themselves). It stops query bugs, not a
hostile client; give untrusted code no database connection at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from psycopg import sql

from beleg.index.postgres.config import READER_ROLE
from beleg.types import Principal

#: Tables whose rows are filtered by the principal (vectors live in ``chunks.embedding``).
PROTECTED_TABLES = ("documents", "chunks", "postings")
TENANT_SETTING = "beleg.principal_tenant"
ACL_SETTING = "beleg.principal_acl"


def document_access(metadata: Mapping[str, Any]) -> tuple[str | None, list[str] | None]:
    """``(tenant_key, acl_keys)`` of a document, exactly as :meth:`Principal.may_read` reads them."""
    tenant = metadata.get("tenant")
    acl = metadata.get("acl")
    tenant_key = None if tenant is None else Principal.fold(str(tenant))
    if acl is None:
        return tenant_key, None
    entries = acl if isinstance(acl, (list, tuple)) else [acl]
    return tenant_key, sorted({Principal.acl_entry(str(a)) for a in entries})


def principal_values(principal: Principal) -> tuple[str | None, list[str]]:
    """The principal's folded tenant (None: no tenant) and the ACL entries that admit it."""
    tenant = None if principal.tenant is None else Principal.fold(principal.tenant)
    return tenant, sorted(principal.acl_names())


def bind_principal(cur: Any, principal: Principal) -> None:
    """Run the rest of this transaction as the reader role, as ``principal`` (until rebound)."""
    tenant, acl = principal_values(principal)
    cur.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(READER_ROLE)))
    cur.execute("SELECT set_config(%s, %s, true), set_config(%s, %s, true)",
                (TENANT_SETTING, json.dumps(tenant), ACL_SETTING, json.dumps(acl)))


def unbind_principal(cur: Any) -> None:
    """Back to the connecting (owner) role for administrative reads inside a view."""
    cur.execute("SET LOCAL ROLE NONE")
    cur.execute("SELECT set_config(%s, '', true), set_config(%s, '', true)", (TENANT_SETTING, ACL_SETTING))


def access_predicate(alias: str, principal: Principal) -> tuple[sql.Composable, dict[str, Any]]:
    """The explicit access test every query states (the policies hold it too)."""
    tenant, acl = principal_values(principal)
    a = sql.Identifier(alias)
    clause = sql.SQL("(({a}.tenant_key IS NULL OR {a}.tenant_key = %(p_tenant)s) AND "
                     "({a}.acl_keys IS NULL OR {a}.acl_keys && %(p_acl)s::text[]))").format(a=a)
    return clause, {"p_tenant": tenant, "p_acl": acl}


def may_read_function(schema: str) -> sql.Composable:
    """``{schema}.may_read(tenant, acl)``: whether the transaction's principal reads a row.

    One expression without a sub-select (``jsonb ?| text[]``: does the principal's JSON list
    hold any of the row's ACL entries, the same test as ``&&``), so PostgreSQL inlines it into
    every policy check; the earlier form, ``acl && ARRAY(SELECT jsonb_array_elements_text(...))``,
    was called once per row read (about a third of a BM25 query's time at 5k chunks)."""
    return sql.SQL("""
        CREATE OR REPLACE FUNCTION {s}.may_read(tenant text, acl text[]) RETURNS boolean
        LANGUAGE sql STABLE AS $$
          SELECT coalesce(
            (tenant IS NULL OR tenant = (NULLIF(current_setting({tenant_setting}, true), '')::jsonb #>> '{{}}'))
            AND (acl IS NULL OR NULLIF(current_setting({acl_setting}, true), '')::jsonb ?| acl), false)
        $$""").format(s=sql.Identifier(schema), tenant_setting=sql.Literal(TENANT_SETTING),
                      acl_setting=sql.Literal(ACL_SETTING))


def policy_statements(schema: str) -> list[sql.Composable]:
    """The function and policies of one schema (run by its owner, in a migration)."""
    s = sql.Identifier(schema)
    out: list[sql.Composable] = [may_read_function(schema)]
    for table in PROTECTED_TABLES:
        t = sql.SQL("{}.{}").format(s, sql.Identifier(table))
        out += [
            sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(t),
            sql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(t),
            # The owner (the role that runs ingest and migrations) writes every row.
            sql.SQL("CREATE POLICY owner_all ON {} FOR ALL TO CURRENT_USER USING (true) WITH CHECK (true)").format(t),
            sql.SQL("CREATE POLICY reader_own_rows ON {} FOR SELECT TO {} USING ({}.may_read(tenant_key, acl_keys))")
            .format(t, sql.Identifier(READER_ROLE), s),
            sql.SQL("GRANT SELECT ON {} TO {}").format(t, sql.Identifier(READER_ROLE)),
        ]
    out.append(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(s, sql.Identifier(READER_ROLE)))
    out.append(sql.SQL("GRANT EXECUTE ON FUNCTION {}.may_read(text, text[]) TO {}").format(
        s, sql.Identifier(READER_ROLE)))
    return out
