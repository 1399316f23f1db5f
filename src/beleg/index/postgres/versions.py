"""Blue/green index versions in PostgreSQL: each version is a schema, and the root schema
(the one the URL names) records which is live.

``beleg reindex`` builds a new configuration into ``<root>_v<index version>`` while the
live one keeps serving; ``beleg switch VERSION`` changes the root's ``live_schema`` in one
transaction, so a process opening the index afterwards reads the new version and none sees
half of a switch; ``beleg gc`` drops the version schemas that are not live. The root schema
is the first version (it holds the pointer, so it is never dropped; when it is not live,
gc erases its documents and its configuration, so it is no longer a version).

A process that opened the live version and stays open refuses document writes once a switch
made another live (:class:`~beleg.index.versions.VersionNotLiveError`, checked by
:class:`~beleg.index.postgres.knowledge_base.PostgresKnowledgeBase` inside each write
transaction while it holds its schema's write lock; ``switch`` takes the outgoing live
schema's write lock before it moves the pointer, so no write slips in between). A
long-running one (``beleg serve``) registers the version it reads (:class:`VersionHold`),
and ``gc`` keeps a version so held. While ``reindex`` builds, document writes, deletions,
``switch`` and ``gc`` are refused (:class:`BuildLock`), as for an index folder.

The same rules as for an index folder keep documents from being lost or brought back:
``switch`` refuses a version whose build never finished or that lacks documents of the live
one, ``gc`` keeps a version holding documents the live one lacks (both unless told
``allow_document_loss``), and an erasure interrupted between schemas is recorded in the
root's meta (``erasure_pending``), refused by ``switch`` and finished by the next delete,
ingest or reindex (:mod:`beleg.index.versions`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from beleg.errors import ConfigError, IndexStateError
from beleg.index.postgres import schema as schema_mod
from beleg.index.postgres.config import PostgresLocation, check_schema_name, connect
from beleg.index.postgres.writes import take_write_lock
from beleg.index.versions import (
    BUILD_STATE_KEY,
    BUILD_UNFINISHED,
    SHORT_WAIT_S,
    Drift,
    IndexBusyError,
    Readiness,
    VersionNotReadyError,
    erasure_entry,
    erasure_pending_error,
)

log = logging.getLogger(__name__)

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


def _writer_connection(location: PostgresLocation) -> Any:
    """A connection whose transactions read what others committed while they waited for a lock."""
    conn = connect(location)
    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
    return conn


def _lock_versions(conn: Any, root: str, *, session: bool = False) -> None:
    """Take the root's versions lock: switches, gc and holder registrations of one index run
    one at a time (until the transaction ends, or with ``session`` until released)."""
    fn = "pg_advisory_lock" if session else "pg_advisory_xact_lock"
    conn.execute(sql.SQL("SELECT {}(hashtext(%s))").format(sql.Identifier(fn)), (f"beleg:versions:{root}",))


def switch(location: PostgresLocation, version: str, *, allow_document_loss: bool = False) -> PostgresVersion:
    """Make ``version`` live, in one transaction (the root's pointer is one row).

    Refused while an erasure is unfinished (:class:`~beleg.index.versions.ErasurePendingError`)
    and, unless ``allow_document_loss``, when the version's build never finished or it lacks
    documents of the live version (:class:`~beleg.index.versions.VersionNotReadyError`)."""
    conn = _writer_connection(location)
    root = location.schema
    try:
        with conn.transaction():
            _lock_versions(conn, root)
            refuse_while_building(conn, root)  # the version being built is not ready, the live one is its source
            refuse_while_erasing(conn, location)
            for v in list_versions(conn, root):
                if v.version == version:
                    if not allow_document_loss:
                        ready = _readiness(conn, root, v)
                        if ready.loses_documents:
                            raise VersionNotReadyError(ready.describe(location.url))
                    # A writer to the live version checks the pointer while it holds this lock:
                    # one in flight commits before the pointer moves, every later one sees it moved.
                    take_write_lock(conn, live_schema(conn, root))
                    conn.execute(sql.SQL("INSERT INTO {}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                                         "DO UPDATE SET value = EXCLUDED.value").format(sql.Identifier(root)),
                                 (LIVE_KEY, v.schema))
                    return PostgresVersion(v.version, v.schema, True)
            known = ", ".join(v.version for v in list_versions(conn, root)) or "none"
        raise ConfigError(f"no version {version!r} in {location.url} (versions: {known}); build it with beleg reindex")
    finally:
        conn.close()


@dataclass(frozen=True)
class Collected:
    removed: list[PostgresVersion]
    #: Versions not live but kept, each with the running processes that hold it open.
    kept: list[tuple[PostgresVersion, list[dict[str, Any]]]]
    #: Versions not live but kept because they hold documents the live version lacks (id → source).
    kept_documents: list[tuple[PostgresVersion, dict[str, str]]] = field(default_factory=list)


def gc(location: PostgresLocation, *, allow_document_loss: bool = False) -> list[PostgresVersion]:
    """Drop every version schema that is not live, not held open and holding no document the
    live version lacks; the root, if so, is emptied. Returns what was removed (:func:`collect`
    also says what was kept and why)."""
    return collect(location, allow_document_loss=allow_document_loss).removed


def collect(location: PostgresLocation, *, allow_document_loss: bool = False) -> Collected:
    """Drop every version schema that is not live and that no running process holds open
    (:class:`VersionHold`); the root, if not live and not held, is emptied. A version holding
    documents the live version lacks (other than those an unfinished erasure removes) is kept
    unless ``allow_document_loss``, as for an index folder (:func:`beleg.index.versions.collect`)."""
    from beleg.index.postgres.store import PostgresStore

    conn = _writer_connection(location)
    root = location.schema
    removed, kept, kept_documents = [], [], []
    try:
        _lock_versions(conn, root, session=True)  # a session lock: VACUUM cannot run in a transaction
        if not conn.execute(_build_lock("pg_try_advisory_lock_shared"), (root,)).fetchone()[0]:
            raise _building_error(conn, root)  # the version being built is not live: gc would drop it
        holders = version_holders(conn, root)
        live = live_schema(conn, root)
        erasing = set((pending_erasure(conn, root) or {}).get("doc_ids", []))
        for v in list_versions(conn, root):
            if v.live:
                continue
            if holders.get(v.schema):
                kept.append((v, holders[v.schema]))
                continue
            only_here = {doc_id: source for doc_id, source in _drift(conn, live, v.schema).extra.items()
                         if doc_id not in erasing}
            if only_here and not allow_document_loss:
                kept_documents.append((v, only_here))
                continue
            if v.schema == root:
                store = PostgresStore(location)
                try:
                    store.erase([r.doc_id for r in store.document_records()])
                    with store.transaction():  # no longer a version one can switch to
                        store.conn.execute(sql.SQL("DELETE FROM {}.meta WHERE key = %s").format(
                            sql.Identifier(root)), (CONFIG_KEY,))
                finally:
                    store.close()
            else:
                schema_mod.drop(conn, v.schema)
            removed.append(v)
        remaining = [s for s in json.loads(_meta(conn, root, VERSIONS_KEY) or "[]")
                     if s not in {v.schema for v in removed}]
        conn.execute(sql.SQL("UPDATE {}.meta SET value = %s WHERE key = %s").format(sql.Identifier(root)),
                     (json.dumps(remaining), VERSIONS_KEY))
    finally:
        conn.close()  # ends the session, and its lock
    return Collected(removed, kept, kept_documents)


# ---------------------------------------------------------------------------- versions held open
#
# A server reads the schema that was live when it started until it is restarted, also after
# a switch; gc must not drop that schema under it. While it runs, a holder keeps a row in the
# root's ``version_holders`` (schema, purpose, pid, host, since) and, on a connection of its
# own, a session advisory lock named by the row's token. The lock is the liveness rule, for
# processes on any host: a process that is gone (killed, its host down) has lost its session
# and with it the lock, and gc, which tries the lock, deletes its row. When the database ends
# the session of a running holder (a restart, pg_terminate_backend), the holder registers
# again on a new connection within HEARTBEAT_S.

#: How often a holder checks that its registration's session is still open.
HEARTBEAT_S = 5.0
_HOLD_LOCK = "SELECT {}(hashtextextended('beleg:hold:' || %s, 0))"


def _hold_lock(fn: str) -> sql.Composed:
    return sql.SQL(_HOLD_LOCK).format(sql.Identifier(fn))


class VersionHold:
    """Registers that this process reads ``schema`` of the index at ``root``, until :meth:`close`.

    Raises IndexStateError when ``schema`` is no longer a version (a switch and a gc ran
    between opening it and registering)."""

    def __init__(self, root: PostgresLocation, schema: str, purpose: str) -> None:
        self.root, self.schema, self.purpose = root, schema, purpose
        self.token = uuid.uuid4().hex
        self._conn = self._register()
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._keep_registered, name="beleg-version-hold", daemon=True)
        self._watch.start()

    def _register(self) -> Any:
        conn = connect(self.root)
        r = sql.Identifier(self.root.schema)
        try:
            schema_mod.migrate(conn, self.root.schema)  # a root opened only through its versions lacks the table
            with conn.transaction():
                _lock_versions(conn, self.root.schema)  # gc reads the holders under it
                if self.schema not in {v.schema for v in list_versions(conn, self.root.schema)}:
                    raise IndexStateError(
                        f"schema {self.schema} is no longer a version of {self.root.url} (a 'beleg switch' and a "
                        f"'beleg gc' ran while this process opened it); open the index again")
                conn.execute(_hold_lock("pg_advisory_lock"), (self.token,))  # kept after the commit
                conn.execute(sql.SQL(
                    "INSERT INTO {}.version_holders (token, version_schema, purpose, pid, host) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (token) DO NOTHING").format(r),
                    (self.token, self.schema, self.purpose, os.getpid(), socket.gethostname()))
        except BaseException:
            conn.close()
            raise
        return conn

    def _keep_registered(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._conn.execute("SELECT 1")
                continue
            except psycopg.Error:
                log.warning("the database ended the session that registers schema %s as held open by this "
                            "process; registering it again", self.schema)
            self._conn.close()
            try:
                self._conn = self._register()
            except (psycopg.Error, IndexStateError, ConfigError) as exc:
                log.error("could not register schema %s as held open again (retrying in %g s): %s",
                          self.schema, HEARTBEAT_S, exc)

    def close(self) -> None:
        self._stop.set()
        self._watch.join()
        try:
            self._conn.execute(sql.SQL("DELETE FROM {}.version_holders WHERE token = %s").format(
                sql.Identifier(self.root.schema)), (self.token,))
        except psycopg.Error as exc:  # the lock ends with the session: gc deletes the row
            log.warning("could not remove this process's registration of schema %s: %s", self.schema, exc)
        finally:
            self._conn.close()

    def __enter__(self) -> VersionHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def version_holders(conn: Any, root: str) -> dict[str, list[dict[str, Any]]]:
    """Schema → the running processes that hold it open; rows of processes that are gone
    (their session no longer holds the registration's lock) are deleted."""
    r = sql.Identifier(root)
    if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{root}.version_holders",)).fetchone()[0]:
        return {}  # written before holders were registered: none can be
    out: dict[str, list[dict[str, Any]]] = {}
    rows = conn.execute(sql.SQL("SELECT token, version_schema, purpose, pid, host, "
                                "to_char(since, 'YYYY-MM-DD\"T\"HH24:MI:SSOF') FROM {}.version_holders "
                                "ORDER BY since").format(r)).fetchall()
    for token, schema, purpose, pid, host, since in rows:
        with conn.transaction():
            gone = conn.execute(_hold_lock("pg_try_advisory_xact_lock"), (token,)).fetchone()[0]
            if gone:
                conn.execute(sql.SQL("DELETE FROM {}.version_holders WHERE token = %s").format(r), (token,))
                continue
        out.setdefault(schema, []).append({"purpose": purpose, "schema": schema, "pid": pid, "host": host,
                                           "since": since})
    return out


# ---------------------------------------------------------------------------- the build lock
#
# While ``beleg reindex`` builds a new version from the live one's documents, document writes
# (ingest, metadata edits, deletions), ``switch`` and ``gc`` are refused, as for an index
# folder (docs/index-lifecycle.md): the build reads the live documents once, so a write
# during it would be missing from the new version (an ingest lost, a deletion brought back by
# the switch). The marker is a session advisory lock named by the root, which the reindex
# holds exclusively on a connection of its own: a reindex that is killed, or whose host goes
# down, loses its session and with it the lock, so it leaves nothing behind. A writer takes
# the lock shared, without waiting, inside its write transaction: not getting it means a
# build runs; getting it makes a build that starts meanwhile wait until the write committed.
# The root's meta row ``reindex_running`` says who builds, for the message; only the lock
# says whether.

BUILD_KEY = "reindex_running"
_BUILD_LOCK = "SELECT {}(hashtextextended('beleg:build:' || %s, 0))"


def _build_lock(fn: str) -> sql.Composed:
    return sql.SQL(_BUILD_LOCK).format(sql.Identifier(fn))


def _building_error(conn: Any, root: str) -> IndexBusyError:
    try:
        owner = json.loads(_meta(conn, root, BUILD_KEY) or "{}")
    except ValueError:
        owner = {}
    target = f" to version {owner['version']}" if owner.get("version") else ""
    return IndexBusyError(
        f"a reindex{target} is running on the index in schema {root} since {owner.get('since', '?')} (pid "
        f"{owner.get('pid', '?')} on {owner.get('host', '?')}); documents cannot change until it finishes, or the "
        "new version would miss the change. Wait for it to finish and run this again (a reindex that was killed "
        "frees the lock by itself; resume it with the same 'beleg reindex' command)")


def refuse_while_building(conn: Any, root: str) -> None:
    """Inside a write transaction: hold the build lock of the index at ``root`` shared until the
    transaction ends, or raise :class:`IndexBusyError` when a reindex holds it."""
    if not conn.execute(_build_lock("pg_try_advisory_xact_lock_shared"), (root,)).fetchone()[0]:
        raise _building_error(conn, root)


@contextmanager
def no_build(location: PostgresLocation) -> Iterator[None]:
    """Hold the build lock of the index at ``location`` shared, on a connection of its own, for
    an operation of several transactions (a deletion: one per version), so a build cannot start
    halfway through it. Raises :class:`IndexBusyError` when a reindex holds it."""
    conn = connect(location)
    try:
        if not conn.execute(_build_lock("pg_try_advisory_lock_shared"), (location.schema,)).fetchone()[0]:
            raise _building_error(conn, location.schema)
        yield
        _unlock(conn, "pg_advisory_unlock_shared", location.schema)
    finally:
        conn.close()  # ends the session, and its lock (if the unlock above did not run)


def _unlock(conn: Any, fn: str, root: str) -> None:
    """Release the build lock before the connection closes: closing a connection does not wait
    for the server to end its session, so a writer right after (the same process's next
    ingest) could still find the lock held and be refused."""
    try:
        conn.execute(_build_lock(fn), (root,))
    except psycopg.Error:
        pass  # the session is gone already, and its lock with it


class BuildLock:
    """Held by ``beleg reindex`` while it builds ``version`` of the index at ``root``: the
    root's build lock, exclusive, on a connection of its own (see above), until :meth:`close`.

    Raises :class:`IndexBusyError` when another reindex holds it, or when writes in flight
    have not committed within :data:`~beleg.index.versions.SHORT_WAIT_S`."""

    def __init__(self, root: PostgresLocation, version: str) -> None:
        self.root = root
        self._conn = connect(root)
        try:
            self._take()
            owner = {"version": version, "pid": os.getpid(), "host": socket.gethostname(),
                     "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            with self._conn.transaction():
                self._conn.execute(sql.SQL("INSERT INTO {}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                                           "DO UPDATE SET value = EXCLUDED.value").format(sql.Identifier(root.schema)),
                                   (BUILD_KEY, json.dumps(owner)))
        except BaseException:
            self._conn.close()
            raise

    def _take(self) -> None:
        conn, key = self._conn, (self.root.schema,)
        if conn.execute(_build_lock("pg_try_advisory_lock"), key).fetchone()[0]:
            return
        with conn.transaction():
            refuse_while_building(conn, self.root.schema)  # another build: refuse at once
        # Writes in flight hold the lock shared: wait for them to commit. Writers that come
        # later queue behind this request, so they are refused instead of starving it.
        conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{SHORT_WAIT_S:g}s")))
        try:
            conn.execute(_build_lock("pg_advisory_lock"), key)
        except psycopg.errors.LockNotAvailable:
            raise IndexBusyError(
                f"writes to the index in schema {self.root.schema} did not finish within {SHORT_WAIT_S:g} s (or another "
                "reindex started), so the reindex cannot start; run it again") from None
        conn.execute("RESET lock_timeout")

    def check_held(self) -> None:
        """Raise IndexStateError when the database ended the lock's session during the build (a
        restart, ``pg_terminate_backend``): writes were accepted meanwhile, and the new version
        may miss them."""
        try:
            self._conn.execute("SELECT 1")
        except psycopg.Error:
            raise IndexStateError(
                f"the database ended the session holding the build lock of the index in schema {self.root.schema} "
                "while the reindex ran, so documents written meanwhile may be missing from the new version; run the "
                "same 'beleg reindex' again (it resumes and catches up)") from None

    def close(self) -> None:
        try:
            with self._conn.transaction():
                self._conn.execute(sql.SQL("DELETE FROM {}.meta WHERE key = %s").format(
                    sql.Identifier(self.root.schema)), (BUILD_KEY,))
        except psycopg.Error as exc:  # the lock ends with the session; a stale row says nothing
            log.warning("could not remove the record of this reindex from schema %s: %s", self.root.schema, exc)
        finally:
            _unlock(self._conn, "pg_advisory_unlock", self.root.schema)
            self._conn.close()

    def __enter__(self) -> BuildLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def drift(location: PostgresLocation, version: str) -> Drift | None:
    """How ``version``'s documents differ from the live version's (see
    :class:`~beleg.index.versions.Drift`); None when the index has no such version. Read-only."""
    conn = connect(location)
    try:
        live = live_schema(conn, location.schema)
        other = next((v.schema for v in list_versions(conn, location.schema) if v.version == version), None)
        return None if other is None else _drift(conn, live, other)
    finally:
        conn.close()


def _drift(conn: Any, live: str, other: str) -> Drift:
    rows = conn.execute(sql.SQL(
        "SELECT l.doc_id, l.source, o.doc_id, o.source FROM {}.documents l FULL JOIN {}.documents o "
        "ON o.doc_id = l.doc_id WHERE l.doc_id IS NULL OR o.doc_id IS NULL OR (l.content_hash, l.metadata) "
        "IS DISTINCT FROM (o.content_hash, o.metadata) ORDER BY coalesce(l.doc_id, o.doc_id)").format(
            sql.Identifier(live), sql.Identifier(other))).fetchall()
    return Drift(missing={lid: lsrc for lid, lsrc, oid, _ in rows if oid is None},
                 changed={lid: lsrc for lid, lsrc, oid, _ in rows if lid is not None and oid is not None},
                 extra={oid: osrc for lid, _, oid, osrc in rows if lid is None})


def _readiness(conn: Any, root: str, version: PostgresVersion) -> Readiness:
    live = live_schema(conn, root)
    live_version = next((v.version for v in list_versions(conn, root) if v.schema == live), "?")
    return Readiness(version.version, live_version, _meta(conn, version.schema, BUILD_STATE_KEY) == BUILD_UNFINISHED,
                     _drift(conn, live, version.schema))


def readiness(location: PostgresLocation, version: str) -> Readiness | None:
    """Whether ``version`` can go live without losing documents; None when there is no such version."""
    conn = connect(location)
    try:
        found = next((v for v in list_versions(conn, location.schema) if v.version == version), None)
        return None if found is None else _readiness(conn, location.schema, found)
    finally:
        conn.close()


def summaries(conn: Any, root: str) -> list[dict[str, Any]]:
    """Every version (live first) with its document count and whether its build finished."""
    out = []
    for v in sorted(list_versions(conn, root), key=lambda v: not v.live):
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}.documents").format(sql.Identifier(v.schema))).fetchone()[0]
        out.append({**v.to_json(), "documents": int(count),
                    "complete": _meta(conn, v.schema, BUILD_STATE_KEY) != BUILD_UNFINISHED})
    return out


# ---------------------------------------------------------------------------- the erasure journal
#
# As for an index folder (beleg.index.versions, "the erasure journal"): the ids an erasure
# removes are committed to the root's meta before the first schema is touched, and the row is
# deleted (and the table vacuumed, so the ids leave it) once every schema is done.

ERASURE_KEY = "erasure_pending"


def pending_erasure(conn: Any, root: str) -> dict[str, Any] | None:
    raw = _meta(conn, root, ERASURE_KEY)
    return None if raw is None else dict(json.loads(raw))


def record_erasure(conn: Any, root: str, doc_ids: list[str], since: str | None = None) -> None:
    with conn.transaction():
        conn.execute(sql.SQL("INSERT INTO {}.meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                             "SET value = EXCLUDED.value").format(sql.Identifier(root)),
                     (ERASURE_KEY, json.dumps(erasure_entry(doc_ids, since))))


def clear_erasure(conn: Any, root: str) -> None:
    with conn.transaction():
        conn.execute(sql.SQL("DELETE FROM {}.meta WHERE key = %s").format(sql.Identifier(root)), (ERASURE_KEY,))
    conn.execute(sql.SQL("VACUUM (ANALYZE) {}.meta").format(sql.Identifier(root)))  # the ids leave rows and statistics


def refuse_while_erasing(conn: Any, location: PostgresLocation) -> None:
    pending = pending_erasure(conn, location.schema)
    if pending is not None:
        raise erasure_pending_error(location.url, pending)
