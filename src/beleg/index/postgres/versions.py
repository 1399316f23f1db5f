"""Blue/green index versions in PostgreSQL: each version is a schema, and the root schema
(the one the URL names) records which is live.

``beleg reindex`` builds a new configuration into ``<root>_v<index version>`` while the
live one keeps serving; ``beleg switch VERSION`` changes the root's ``live_schema`` in one
transaction, so a process opening the index afterwards reads the new version and none sees
half of a switch; ``beleg gc`` drops the version schemas that are not live. The root schema
is the first version (it holds the pointer, so it is never dropped; when it is not live,
gc erases its documents and its configuration, so it is no longer a version).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from beleg.errors import ConfigError
from beleg.index.postgres import schema as schema_mod
from beleg.index.postgres.config import PostgresLocation, check_schema_name, connect

LIVE_KEY = "live_schema"
VERSIONS_KEY = "version_schemas"
CONFIG_KEY = "index_config"


@dataclass(frozen=True)
class PostgresVersion:
    """One version of an index: its configuration's version, its schema, whether it is live."""

    version: str
    schema: str
    live: bool

    @property
    def path(self) -> str:
        """Where the version lives (the schema; a folder for the embedded backend)."""
        return self.schema

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "schema": self.schema, "live": self.live}


def version_schema(root: str, version: str) -> str:
    return check_schema_name(f"{root}_v{version}")


def _meta(conn: Any, schema: str, key: str) -> str | None:
    if not schema_mod.exists(conn, schema):
        return None
    row = conn.execute(sql.SQL("SELECT value FROM {}.meta WHERE key = %s").format(sql.Identifier(schema)),
                       (key,)).fetchone()
    return row[0] if row else None


def live_schema(conn: Any, root: str) -> str:
    """The schema the index at ``root`` serves from (the root itself until a switch)."""
    return _meta(conn, root, LIVE_KEY) or root


def list_versions(conn: Any, root: str) -> list[PostgresVersion]:
    live = live_schema(conn, root)
    schemas = [root, *json.loads(_meta(conn, root, VERSIONS_KEY) or "[]")]
    out = []
    for schema in dict.fromkeys(schemas):
        raw = _meta(conn, schema, CONFIG_KEY)
        if raw is not None:
            out.append(PostgresVersion(json.loads(raw)["index_version"], schema, schema == live))
    return out


def register(conn: Any, root: str, schema: str) -> None:
    """Record a version schema under the root (before building it, so gc and erasure see it)."""
    s = sql.Identifier(root)
    with conn.transaction():
        known = json.loads(_meta(conn, root, VERSIONS_KEY) or "[]")
        if schema not in known:
            conn.execute(sql.SQL("INSERT INTO {}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                                 "SET value = EXCLUDED.value").format(s), (VERSIONS_KEY, json.dumps(known + [schema])))


def switch(location: PostgresLocation, version: str) -> PostgresVersion:
    """Make ``version`` live, in one transaction (the root's pointer is one row)."""
    conn = connect(location)
    try:
        for v in list_versions(conn, location.schema):
            if v.version == version:
                with conn.transaction():
                    conn.execute(sql.SQL("INSERT INTO {}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                                         "DO UPDATE SET value = EXCLUDED.value").format(sql.Identifier(location.schema)),
                                 (LIVE_KEY, v.schema))
                return PostgresVersion(v.version, v.schema, True)
        known = ", ".join(v.version for v in list_versions(conn, location.schema)) or "none"
        raise ConfigError(f"no version {version!r} in {location.url} (versions: {known}); build it with beleg reindex")
    finally:
        conn.close()


def gc(location: PostgresLocation) -> list[PostgresVersion]:
    """Drop every version schema that is not live; the root, if not live, is emptied."""
    from beleg.index.postgres.store import PostgresStore

    conn = connect(location)
    removed = []
    try:
        for v in list_versions(conn, location.schema):
            if v.live:
                continue
            if v.schema == location.schema:
                store = PostgresStore(location)
                try:
                    store.erase([r.doc_id for r in store.document_records()])
                    with store.transaction():  # no longer a version one can switch to
                        store.conn.execute(sql.SQL("DELETE FROM {}.meta WHERE key = %s").format(
                            sql.Identifier(location.schema)), (CONFIG_KEY,))
                finally:
                    store.close()
            else:
                schema_mod.drop(conn, v.schema)
            removed.append(v)
        remaining = [s for s in json.loads(_meta(conn, location.schema, VERSIONS_KEY) or "[]")
                     if s not in {v.schema for v in removed}]
        conn.execute(sql.SQL("UPDATE {}.meta SET value = %s WHERE key = %s").format(sql.Identifier(location.schema)),
                     (json.dumps(remaining), VERSIONS_KEY))
    finally:
        conn.close()
    return removed
