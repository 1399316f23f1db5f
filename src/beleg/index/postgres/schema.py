"""Tables of one index schema and their migrations (``schema_migrations`` records each version).

One schema is one index version (blue/green versions are sibling schemas). Documents,
chunks (with their pgvector embedding) and BM25 postings ``(term, chunk, tf)`` are tables;
``term_df`` and ``corpus_stats`` hold the BM25 statistics per tenant key (``''``: documents
without a tenant), maintained by every write, so corpus-wide or per-tenant N, df and avgdl
are a few index lookups. The statistics tables are never granted to the reader role.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psycopg import errors, sql

from beleg.index.postgres import rls
from beleg.index.postgres.config import READER_ROLE

SCHEMA_VERSION = 6


def _v1(schema: str) -> list[sql.Composable]:
    s = sql.Identifier(schema)
    tables = sql.SQL("""
    CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE {s}.documents (
        doc_id text PRIMARY KEY,
        source text NOT NULL,
        content_hash text NOT NULL,
        metadata jsonb NOT NULL,
        text text NOT NULL,
        headings jsonb NOT NULL DEFAULT '[]',
        tenant_key text,
        acl_keys text[],
        chunk_count integer NOT NULL DEFAULT 0,
        ingested_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX documents_source ON {s}.documents (source);
    CREATE TABLE {s}.chunks (
        row bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        chunk_id text NOT NULL UNIQUE,
        doc_id text NOT NULL REFERENCES {s}.documents (doc_id) ON DELETE CASCADE,
        ordinal integer NOT NULL,
        start integer NOT NULL,
        "end" integer NOT NULL,
        heading_path jsonb NOT NULL,
        text text NOT NULL,
        flags jsonb NOT NULL DEFAULT '[]',
        embed_hash text NOT NULL,
        length integer NOT NULL,
        embedding vector,
        tenant_key text,
        acl_keys text[]
    );
    CREATE INDEX chunks_doc ON {s}.chunks (doc_id);
    CREATE INDEX chunks_embed_hash ON {s}.chunks (embed_hash);
    CREATE TABLE {s}.postings (
        term text NOT NULL,
        chunk_row bigint NOT NULL REFERENCES {s}.chunks (row) ON DELETE CASCADE,
        tf integer NOT NULL,
        tenant_key text,
        acl_keys text[],
        PRIMARY KEY (term, chunk_row)
    );
    CREATE INDEX postings_chunk ON {s}.postings (chunk_row);
    CREATE TABLE {s}.term_df (
        term text NOT NULL,
        tenant_key text NOT NULL,
        df integer NOT NULL,
        PRIMARY KEY (term, tenant_key)
    );
    CREATE TABLE {s}.corpus_stats (
        tenant_key text PRIMARY KEY,
        chunks bigint NOT NULL,
        total_length bigint NOT NULL
    );
    INSERT INTO {s}.meta (key, value) VALUES ('generation', '0');
    """).format(s=s)
    return [tables, *rls.policy_statements(schema)]


def _v2(schema: str) -> list[sql.Composable]:
    """Claims of the ingest workers (beleg.index.postgres.claims); never granted to the reader."""
    return [sql.SQL("""
    CREATE TABLE {s}.ingest_claims (
        source_key text PRIMARY KEY,
        worker text NOT NULL,
        claimed_at timestamptz NOT NULL,
        lease_until timestamptz NOT NULL
    )""").format(s=sql.Identifier(schema))]


def _v3(schema: str) -> list[sql.Composable]:
    """Chunk texts a worker is embedding, and their vectors once embedded, so another worker
    that meets the same text waits for them instead of embedding it again (never granted
    to the reader; rows go when the documents holding the vectors are committed)."""
    return [sql.SQL("""
    CREATE TABLE {s}.embedding_claims (
        embed_hash text PRIMARY KEY,
        worker text NOT NULL,
        lease_until timestamptz NOT NULL,
        embedding vector
    )""").format(s=sql.Identifier(schema))]


def _v4(schema: str) -> list[sql.Composable]:
    """Cheaper reads: the access policy's function in the form PostgreSQL inlines into every
    policy check (rls.may_read_function; it was a call per row read), and vectors kept in the
    chunk rows (storage MAIN, not TOAST). Rows written before keep their TOASTed vectors until
    they are written again (a re-ingest, a reindex, or VACUUM FULL)."""
    s = sql.Identifier(schema)
    return [rls.may_read_function(schema),
            sql.SQL("ALTER TABLE {s}.chunks ALTER COLUMN embedding SET STORAGE MAIN").format(s=s)]


def _v5(schema: str) -> list[sql.Composable]:
    """Where each file document's file was, resolved at ingest (``os.fsencode`` bytes, as the
    embedded catalog stores it; NULL for texts and rows written before): files are told apart
    by it, never by the path as typed (beleg.ingest.pipeline). The reader may read it under
    the documents policy like any column; no reader query selects it."""
    s = sql.Identifier(schema)
    return [sql.SQL("ALTER TABLE {s}.documents ADD COLUMN IF NOT EXISTS location bytea").format(s=s),
            sql.SQL("CREATE INDEX IF NOT EXISTS documents_location ON {s}.documents (location)").format(s=s)]


def _v6(schema: str) -> list[sql.Composable]:
    """Processes that hold a version open (``beleg serve``), read in the root schema by
    ``beleg gc`` so it keeps the versions they read (beleg.index.postgres.versions.VersionHold);
    never granted to the reader."""
    return [sql.SQL("""
    CREATE TABLE IF NOT EXISTS {s}.version_holders (
        token text PRIMARY KEY,
        version_schema text NOT NULL,
        purpose text NOT NULL,
        pid integer NOT NULL,
        host text NOT NULL,
        since timestamptz NOT NULL DEFAULT now()
    )""").format(s=sql.Identifier(schema))]


#: (version, description, statements for a schema). Append; never edit a released one.
MIGRATIONS: list[tuple[int, str, Callable[[str], list[sql.Composable]]]] = [
    (1, "documents, chunks with vectors, postings, BM25 statistics, row-level security", _v1),
    (2, "claims of ingest workers (source hash, worker, lease)", _v2),
    (3, "claims of chunk texts being embedded, with their vectors once embedded", _v3),
    (4, "cheaper reads: the access policy inlined, vectors stored in the chunk rows", _v4),
    (5, "documents.location: the resolved path of a document's file", _v5),
    (6, "version_holders: processes holding a version open, kept by gc", _v6),
]


def ensure_reader_role(conn: Any) -> None:
    """Create the cluster-wide reader role once (NOLOGIN, no privileges of its own)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('beleg:reader-role'))")
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (READER_ROLE,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN NOINHERIT").format(sql.Identifier(READER_ROLE)))
    try:  # the connecting role must be able to SET ROLE to it (superusers always can)
        conn.execute(sql.SQL("GRANT {} TO CURRENT_USER").format(sql.Identifier(READER_ROLE)))
    except (errors.InsufficientPrivilege, errors.InvalidGrantOperation):
        pass  # already a member, or the administrator granted it


def migrate(conn: Any, schema: str) -> int:
    """Bring ``schema`` to :data:`SCHEMA_VERSION` (creating it); returns the version now."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except errors.InsufficientPrivilege as exc:
        from beleg.errors import ConfigError

        raise ConfigError(f"pgvector is not enabled in database {conn.info.dbname} and role {conn.info.user} may not "
                          f"enable it ({str(exc).strip().splitlines()[0]}); ask an administrator to run "
                          "'CREATE EXTENSION vector' in that database") from None
    ensure_reader_role(conn)
    s = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"beleg:migrate:{schema}",))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(s))
        conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {}.schema_migrations (version integer PRIMARY KEY, "
                             "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())").format(s))
        current = conn.execute(sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations").format(s)
                               ).fetchone()[0]
        if current > SCHEMA_VERSION:
            from beleg.errors import IndexVersionError

            raise IndexVersionError(f"schema {schema} is at version {current}, newer than this Beleg "
                                    f"({SCHEMA_VERSION}); upgrade Beleg")
        for version, description, statements in MIGRATIONS:
            if version > current:
                for statement in statements(schema):
                    conn.execute(statement)
                conn.execute(sql.SQL("INSERT INTO {}.schema_migrations (version, description) VALUES (%s, %s)")
                             .format(s), (version, description))
                current = version
    return current


def exists(conn: Any, schema: str) -> bool:
    """Whether ``schema`` holds a Beleg index (its migrations table)."""
    return conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_migrations",)).fetchone()[0]


def drop(conn: Any, schema: str) -> None:
    """Remove an index schema with everything in it."""
    conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
