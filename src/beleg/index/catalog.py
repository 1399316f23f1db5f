"""The catalog: one SQLite file that is the index's single source of truth.

Documents, chunks, term postings (as per-chunk arrays of term ids) and embeddings live
in one database, so a document's replacement is one transaction: a crash leaves either
the old or the new version, never half of each. The in-memory search structures
(:mod:`beleg.index.snapshot`) are derived from it and rebuilt when ``generation``
changes. WAL mode lets searches read while an ingest writes.

A catalog this process cannot write (a read-only folder or mount, another user's index) is
opened read-only: searches and answers work, writes raise :class:`ReadOnlyIndexError`, and
the writes a read does on the side (see :meth:`Catalog.note`) are skipped with a note.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from beleg.errors import ReadOnlyIndexError
from beleg.types import Chunk, Document, Heading

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    metadata TEXT NOT NULL,
    text TEXT NOT NULL,
    headings TEXT NOT NULL DEFAULT '[]',
    location BLOB,
    ingested_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX IF NOT EXISTS documents_source ON documents(source);
CREATE TABLE IF NOT EXISTS chunks (
    row INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    term_ids BLOB NOT NULL,
    term_tfs BLOB NOT NULL,
    flags TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS chunks_embed_hash ON chunks(embed_hash);
CREATE TABLE IF NOT EXISTS terms (term_id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS embeddings (embed_hash TEXT PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_contexts (key TEXT PRIMARY KEY, doc_id TEXT NOT NULL, context TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS chunk_contexts_doc ON chunk_contexts(doc_id);
CREATE TABLE IF NOT EXISTS sentence_vectors (
    key TEXT NOT NULL, doc_id TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (key, doc_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sentence_vectors_doc ON sentence_vectors(doc_id);
"""
#: Columns added after the first schema, with their types; an older catalog gets them on its first writable open.
_ADDED_COLUMNS = (("chunks", "flags", "TEXT NOT NULL DEFAULT '[]'"), ("documents", "headings", "TEXT NOT NULL DEFAULT '[]'"),
                  ("documents", "location", "BLOB"))


def write_access_problem(path: Path) -> str | None:
    """Why this process cannot write the catalog at ``path``, or None when it can.

    SQLite writes the file and, in WAL mode, creates ``-wal`` and ``-shm`` files beside it, so
    the folder must be writable too. A catalog that does not exist yet is for its creator to
    report on (None)."""
    if not path.exists():
        return None
    for place, what in ((path.parent, "its folder"), (path, path.name)):
        if not os.access(place, os.W_OK):
            return f"{what} is not writable" if os.access(place, os.R_OK) else f"{what} is not accessible"
    return None


def read_only_uri(path: Path) -> str:
    """The URI that opens the catalog at ``path`` read-only.

    A WAL database is read through its ``-wal`` and ``-shm`` files: the log may hold commits
    the main file does not, and a writer with more rights may be at work (the ``-shm`` file is
    how SQLite sees its commits). SQLite creates the two files when they are missing, which
    it can where the folder is writable (only the catalog file is not). Where it is not and
    there is no ``-wal`` file, every commit is in the main file, and it is opened ``immutable``:
    read without the two files, locks or change detection (a writer that starts while it is
    open is not seen until the next open)."""
    uri = path.resolve().as_uri() + "?mode=ro"
    if os.access(path.parent, os.W_OK):
        return uri
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    if not wal.exists():
        return uri + "&immutable=1"
    if not shm.exists():
        raise ReadOnlyIndexError(
            f"the index in {path.parent} cannot be read by this process: {wal.name} holds commits, and reading "
            f"it needs {shm.name}, which is missing and cannot be created here (the folder is read-only to this "
            "process); open the index once with write access (e.g. 'beleg status'), which folds the log into "
            f"{path.name}")
    return uri


class Catalog:
    """Typed access to the catalog database, safe to share across threads.

    Each thread gets its own SQLite connection (:attr:`db`), so its transactions and read
    snapshots are its own: a thread searching never reads inside another thread's open
    write transaction, and writers queue on SQLite's lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        #: Called before every document write (upsert, metadata edit, delete), inside its
        #: transaction; it raises to refuse the write (a reindex is building, see
        #: beleg.index.versions.refuse_while_building). None: writes are always allowed.
        self.write_guard: Callable[[], None] | None = None
        #: True once a commit replaced or removed stored text whose old page images may still
        #: be in the write-ahead log; :meth:`checkpoint` clears it (KnowledgeBase.ingest calls
        #: it once per run: after every commit would slow a long ingest down).
        self.pending_erasure = False
        #: Why this process cannot write the catalog (None: it can). Then it is opened read-only
        #: and every :meth:`transaction` raises ReadOnlyIndexError naming it.
        self.read_only_reason = write_access_problem(path)
        #: One line per write a read skipped because the catalog is read-only (see :meth:`note`).
        self.notes: list[str] = []
        if self.read_only:
            # Creating tables or columns would be a write: a catalog that needs them cannot be read here.
            missing = self._missing_schema()
            if missing:
                raise ReadOnlyIndexError(
                    f"the index in {path.parent} was written by an older Beleg and lacks {', '.join(missing)}, "
                    f"which the first open adds; it is read-only to this process ({self.read_only_reason}): open "
                    "it once with write access (e.g. 'beleg status'), then read it from here")
            return
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(_SCHEMA)
        # Catalogs written before these columns existed get them (empty) on open. ``location``
        # (where a file document's file was, resolved at ingest) is NULL for rows written before
        # it existed: the next ingest of that file records it (beleg.ingest.pipeline).
        for table, column, kind in _ADDED_COLUMNS:
            if column not in {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}:
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self.db.execute("CREATE INDEX IF NOT EXISTS documents_location ON documents(location)")

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def _missing_schema(self) -> list[str]:
        """Tables and columns of the current schema this catalog lacks (indexes only speed things up)."""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = [f"table {t}" for t in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA) if t not in tables]
        missing += [f"column {table}.{column}" for table, column, _ in _ADDED_COLUMNS if table in tables
                    and column not in {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}]
        return missing

    def note(self, skipped: str) -> None:
        """Record that a read skipped a write because the catalog is read-only: ``skipped`` says
        what and what it costs, in one line. Each is kept once; the CLI shows them on stderr."""
        line = f"{skipped} (the index is read-only to this process: {self.read_only_reason})"
        if line not in self.notes:
            self.notes.append(line)
            log.warning("%s", line)

    def _refuse_read_only(self) -> None:
        if self.read_only:
            raise ReadOnlyIndexError(
                f"cannot write to the index in {self.path.parent}: it is read-only to this process "
                f"({self.read_only_reason}); searching and answering work, but this needs write access to the "
                f"folder and {self.path.name}: run it as a user who may write there, or on a writable copy")

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection (opened on its first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "db", None)
        if conn is None:
            conn = self._connect()
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError(f"the catalog {self.path} is closed")
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in `transaction`).
        # check_same_thread=False only so that close() may close every thread's connection;
        # each connection is used by the thread that opened it.
        if self.read_only:
            conn = sqlite3.connect(read_only_uri(self.path), uri=True, isolation_level=None, timeout=30.0,
                                   check_same_thread=False)
        else:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        # Deleted content is overwritten with zeros, not left in free pages: an erased
        # document must not be recoverable from the file (see `erase`).
        conn.execute("PRAGMA secure_delete=ON")
        self._local.db = conn
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @property
    def _orphan_term_candidates(self) -> set[int]:
        """Terms the current transaction of this thread may have orphaned (see :meth:`drop_orphan_terms`)."""
        candidates: set[int] | None = getattr(self._local, "orphan_terms", None)
        if candidates is None:
            candidates = self._local.orphan_terms = set()
        return candidates

    @_orphan_term_candidates.setter
    def _orphan_term_candidates(self, value: set[int]) -> None:
        self._local.orphan_terms = value

    def close(self) -> None:
        """Close every thread's connection."""
        with self._connections_lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together and bump ``generation``, or none do."""
        self._refuse_read_only()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            # Terms only replaced chunks used (an update that dropped a name) go in the same commit.
            self.drop_orphan_terms()
            self.db.execute(
                "INSERT INTO meta(key, value) VALUES('generation', '1') "
                "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
            )
            self.db.execute("COMMIT")
        except BaseException:
            self._orphan_term_candidates.clear()
            if self.db.in_transaction:  # a failed COMMIT (disk full) may have rolled back already
                self.db.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    # ------------------------------------------------------------------ documents
    def document_state(self, doc_id: str) -> tuple[str, dict[str, Any], str] | None:
        """``(content_hash, metadata, source)`` of a stored document, or None."""
        row = self.db.execute(
            "SELECT content_hash, metadata, source FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return (row[0], json.loads(row[1]), row[2]) if row else None

    def document(self, doc_id: str) -> Document | None:
        row = self.db.execute(
            "SELECT doc_id, source, text, metadata, content_hash FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return Document(row[0], row[1], row[2], json.loads(row[3]), row[4]) if row else None

    def documents_with_headings(self) -> Iterator[tuple[Document, tuple[Heading, ...]]]:
        """Every stored document with the headings its reader found (for ``reindex``)."""
        rows = self.db.execute(
            "SELECT doc_id, source, text, metadata, content_hash, headings FROM documents ORDER BY doc_id").fetchall()
        for r in rows:
            yield (Document(r[0], r[1], r[2], json.loads(r[3]), r[4]),
                   tuple(Heading(int(h[0]), str(h[1]), int(h[2])) for h in json.loads(r[5])))

    def documents_meta(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(doc_id, source, metadata)`` of every document, in a stable order."""
        rows = self.db.execute("SELECT doc_id, source, metadata FROM documents ORDER BY doc_id").fetchall()
        return [(r[0], r[1], json.loads(r[2])) for r in rows]

    def sources(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT doc_id, source FROM documents").fetchall())

    def doc_ids_for_source(self, source: str) -> list[str]:
        """Ids of the stored documents ingested from ``source`` (usually none or one)."""
        return [r[0] for r in self.db.execute("SELECT doc_id FROM documents WHERE source = ? ORDER BY doc_id",
                                              (source,))]

    def location(self, doc_id: str) -> str | None:
        """Where the file of a stored document was when it was last ingested: its resolved
        absolute path (None for a text, or a row from before locations were recorded).

        ``source`` is the path as the user typed it, often relative to a working directory
        that is not recorded, so it cannot tell two files apart; this can."""
        row = self.db.execute("SELECT location FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return os.fsdecode(row[0]) if row and row[0] is not None else None

    def locations(self) -> dict[str, str]:
        """``doc_id → location`` of the documents whose file location is recorded."""
        return {d: os.fsdecode(loc) for d, loc in
                self.db.execute("SELECT doc_id, location FROM documents WHERE location IS NOT NULL")}

    def doc_ids_at(self, location: str) -> list[str]:
        """Ids of the stored documents whose file was at ``location`` (usually none or one)."""
        return [r[0] for r in self.db.execute("SELECT doc_id FROM documents WHERE location = ? ORDER BY doc_id",
                                              (os.fsencode(location),))]

    def set_location(self, doc_id: str, location: str | None) -> None:
        """Record where a document's file is (call inside :meth:`transaction`, after its upsert)."""
        self._check_writable()
        # Stored as the file system's bytes: a name that is not UTF-8 must still be found again
        # (``source`` holds a printable form of it, which names no file).
        self.db.execute("UPDATE documents SET location = ? WHERE doc_id = ?",
                        (None if location is None else os.fsencode(location), doc_id))

    def copy_locations_from(self, other: Catalog) -> None:
        """Give documents the locations they have in another catalog (a version rebuilt from
        this one's documents, which carry no file)."""
        self.db.execute("ATTACH DATABASE ? AS other", (str(other.path),))
        try:
            with self.transaction():
                self.db.execute("UPDATE documents SET location = (SELECT o.location FROM other.documents o "
                                "WHERE o.doc_id = documents.doc_id) WHERE location IS NULL")
        finally:
            self.db.execute("DETACH DATABASE other")

    def move_contexts(self, old_doc_id: str, new_doc_id: str) -> None:
        """Give a re-keyed document the cached chunk contexts of its old id (call inside :meth:`transaction`)."""
        self.db.execute("UPDATE chunk_contexts SET doc_id = ? WHERE doc_id = ?", (new_doc_id, old_doc_id))

    def upsert_document(self, doc: Document, chunks: Sequence[Chunk], embed_hashes: Sequence[str],
                        postings: Sequence[tuple[np.ndarray, np.ndarray]],
                        headings: Sequence[Heading] = ()) -> None:
        """Replace a document and all its chunks (call inside :meth:`transaction`).

        The reader's headings are kept so a later ``reindex`` can re-chunk by structure
        from the catalog alone, without the source files.

        Vocabulary terms that only the replaced chunks used are dropped when the
        transaction commits (only those terms are checked, not the whole vocabulary)."""
        self._check_writable()
        old_hashes = self._embed_hashes(doc.doc_id)
        old_terms = self._term_ids_of(doc.doc_id)
        removed = self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc.doc_id,)).rowcount
        # The old text's sentence vectors go with it (the new text's come with this commit or lazily).
        removed += self.db.execute("DELETE FROM sentence_vectors WHERE doc_id = ?", (doc.doc_id,)).rowcount
        new_terms = {int(t) for _, (ids, _) in zip(chunks, postings) for t in np.asarray(ids).tolist()}
        self._orphan_term_candidates.update(old_terms - new_terms)
        self.pending_erasure = self.pending_erasure or removed > 0
        self.db.execute(
            "INSERT OR REPLACE INTO documents(doc_id, source, content_hash, metadata, text, headings) "
            "VALUES(?,?,?,?,?,?)",
            (doc.doc_id, doc.source, doc.content_hash, json.dumps(doc.metadata, ensure_ascii=False, sort_keys=True),
             doc.text, json.dumps([[h.level, h.title, h.start] for h in headings], ensure_ascii=False)),
        )
        self.db.executemany(
            'INSERT INTO chunks(chunk_id, doc_id, ordinal, start, "end", heading_path, text, embed_hash, term_ids, '
            "term_tfs, flags) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
            [
                (c.chunk_id, c.doc_id, c.ordinal, c.start, c.end, json.dumps(list(c.heading_path), ensure_ascii=False),
                 c.text, h, ids.astype(np.int32).tobytes(), tfs.astype(np.int32).tobytes(), json.dumps(list(c.flags)))
                for c, h, (ids, tfs) in zip(chunks, embed_hashes, postings)
            ],
        )
        self._drop_orphan_vectors(old_hashes)

    def _check_writable(self) -> None:
        if self.write_guard is not None:
            self.write_guard()

    def _term_ids_of(self, doc_id: str) -> set[int]:
        """Every vocabulary term id the chunks of ``doc_id`` use."""
        out: set[int] = set()
        for (blob,) in self.db.execute("SELECT term_ids FROM chunks WHERE doc_id = ?", (doc_id,)):
            out.update(np.frombuffer(blob, dtype=np.int32).tolist())
        return out

    def _embed_hashes(self, doc_id: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT embed_hash FROM chunks WHERE doc_id = ?", (doc_id,))]

    def _drop_orphan_vectors(self, hashes: Sequence[str]) -> None:
        """Delete the vectors among ``hashes`` that no chunk uses any more: nothing of an old text stays."""
        self.db.executemany(
            "DELETE FROM embeddings WHERE embed_hash = ? AND NOT EXISTS (SELECT 1 FROM chunks WHERE embed_hash = ?)",
            [(h, h) for h in hashes],
        )

    def update_metadata(self, doc_id: str, source: str, metadata: dict[str, Any]) -> None:
        self._check_writable()
        self.pending_erasure = True  # the old metadata (a title, a name in it) must leave the WAL too
        self.db.execute(
            "UPDATE documents SET metadata = ?, source = ? WHERE doc_id = ?",
            (json.dumps(metadata, ensure_ascii=False, sort_keys=True), source, doc_id),
        )

    def delete_document(self, doc_id: str) -> dict[str, int]:
        """Remove a document with its chunks, postings and the vectors no other chunk uses
        (call inside :meth:`transaction`). Returns what was removed, by kind."""
        self._check_writable()
        old_hashes = self._embed_hashes(doc_id)
        term_ids = self._term_ids_of(doc_id)
        chunks = self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,)).rowcount
        documents = self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount
        self.db.execute("DELETE FROM chunk_contexts WHERE doc_id = ?", (doc_id,))
        self.db.execute("DELETE FROM sentence_vectors WHERE doc_id = ?", (doc_id,))
        before = self.db.total_changes
        self._drop_orphan_vectors(old_hashes)
        vectors = self.db.total_changes - before
        self._orphan_term_candidates.update(term_ids)
        self.pending_erasure = True
        return {"documents": documents, "chunks": chunks, "vectors": vectors}

    def drop_orphan_terms(self) -> int:
        """Delete vocabulary entries no chunk uses any more, among the terms of documents deleted
        or replaced through this connection (call inside :meth:`transaction`; its commit calls
        it too). A name that occurred only in an erased or edited-away text must not survive in
        the term table."""
        candidates, self._orphan_term_candidates = self._orphan_term_candidates, set()
        if not candidates:
            return 0
        used: set[int] = set()
        for (blob,) in self.db.execute("SELECT term_ids FROM chunks"):
            used.update(np.frombuffer(blob, dtype=np.int32).tolist())
        orphans = sorted(candidates - used)
        self.db.executemany("DELETE FROM terms WHERE term_id = ?", [(t,) for t in orphans])
        return len(orphans)

    def cached_contexts(self, keys: Sequence[str]) -> dict[str, str]:
        """LLM-written chunk contexts by cache key (see beleg.ingest.contextual)."""
        out: dict[str, str] = {}
        for i in range(0, len(keys), 500):
            part = list(keys[i : i + 500])
            q = f"SELECT key, context FROM chunk_contexts WHERE key IN ({','.join('?' * len(part))})"
            out.update(self.db.execute(q, part).fetchall())
        return out

    def put_contexts(self, doc_id: str, items: Sequence[tuple[str, str]]) -> None:
        """Store LLM-written contexts; they are erased with their document."""
        with self.transaction():
            self.db.executemany("INSERT OR REPLACE INTO chunk_contexts(key, doc_id, context) VALUES(?,?,?)",
                                [(k, doc_id, c) for k, c in items])

    def copy_vectors_from(self, other: Catalog) -> None:
        """Copy every vector (and the model fingerprint) of another catalog built with the same
        embedder, so re-chunking only embeds texts that are new."""
        self.db.execute("ATTACH DATABASE ? AS other", (str(other.path),))
        try:
            with self.transaction():
                self.db.execute("INSERT OR IGNORE INTO embeddings SELECT embed_hash, vector FROM other.embeddings")
                self.db.execute("INSERT OR IGNORE INTO meta SELECT key, value FROM other.meta "
                                "WHERE key = 'embedder_fingerprint'")
        finally:
            self.db.execute("DETACH DATABASE other")

    def drop_unused_vectors(self) -> int:
        """Delete vectors no chunk refers to (call inside :meth:`transaction`)."""
        return self.db.execute(
            "DELETE FROM embeddings WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)").rowcount

    def checkpoint(self) -> bool:
        """Fold the write-ahead log into the database and truncate it, so old page images
        (which may hold deleted text) leave the WAL file. False when readers kept it busy."""
        busy, _, _ = self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy == 0:
            self.pending_erasure = False
        return busy == 0

    # ------------------------------------------------------------------ terms
    def term_ids(self, terms: Sequence[str], create: bool) -> dict[str, int]:
        """Ids of ``terms``; with ``create`` unknown terms get new ids (inside a transaction)."""
        unique = list(dict.fromkeys(terms))
        found: dict[str, int] = {}
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            q = f"SELECT term, term_id FROM terms WHERE term IN ({','.join('?' * len(part))})"
            found.update(self.db.execute(q, part).fetchall())
        if create:
            missing = [t for t in unique if t not in found]
            if missing:
                base = self.db.execute("SELECT COALESCE(MAX(term_id) + 1, 0) FROM terms").fetchone()[0]
                new = {t: base + i for i, t in enumerate(missing)}
                self.db.executemany("INSERT INTO terms(term_id, term) VALUES(?, ?)", [(v, k) for k, v in new.items()])
                found.update(new)
        return found

    def all_terms(self) -> dict[str, int]:
        return dict(self.db.execute("SELECT term, term_id FROM terms").fetchall())

    # ------------------------------------------------------------------ embeddings
    def cached_vectors(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return self._vectors_by_key("SELECT embed_hash, vector FROM embeddings WHERE embed_hash IN", hashes)

    def _vectors_by_key(self, select_in: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """``{key: float32 vector}`` for ``select_in`` (a constant ``SELECT key, vector ... IN``), in
        batches of 500 keys (SQLite's bound-parameter limit)."""
        out: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 500):
            part = unique[i : i + 500]
            for key, blob in self.db.execute(f"{select_in} ({','.join('?' * len(part))})", part):
                out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO embeddings(embed_hash, vector) VALUES(?, ?)",
            [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
        )

    # ------------------------------------------------------------------ sentence vectors
    def sentence_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored sentence vectors by key (see beleg.answer.sentence_vectors); keys not stored are left out."""
        return self._vectors_by_key("SELECT key, vector FROM sentence_vectors WHERE key IN", keys)

    def put_sentence_vectors(self, doc_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Store a document's sentence vectors by key (call inside :meth:`transaction`, after its upsert)."""
        self.db.executemany("INSERT OR IGNORE INTO sentence_vectors(key, doc_id, vector) VALUES(?, ?, ?)",
                            [(k, doc_id, np.asarray(v, dtype=np.float32).tobytes()) for k, v in vectors.items()])

    def add_sentence_vectors_lazily(self, rows: Sequence[tuple[str, str, str, np.ndarray]],
                                    wait_s: float = 0.01) -> int | None:
        """Store ``(doc_id, chunk_id, key, vector)`` rows computed by an answer, each only while its
        chunk still exists (a document deleted since the answer read it gets nothing back).

        Not a :meth:`transaction`: it changes no search result, so it must not bump the
        generation (every reader would rebuild its view). Waits at most ``wait_s`` for the
        write lock (an answer must not wait for an ingest's commit); returns the rows written,
        or None when the lock was busy or the index cannot be written (the caller keeps the
        vectors and tries again later)."""
        if self.read_only:
            self.note("sentence vectors computed for answers are kept in memory only, not stored for later "
                      "answers and processes")
            return None
        conn = self.db
        conn.execute(f"PRAGMA busy_timeout = {max(0, int(wait_s * 1000))}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # busy (an ingest is committing) or read-only
            return None
        finally:
            conn.execute("PRAGMA busy_timeout = 30000")
        try:
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO sentence_vectors(key, doc_id, vector) SELECT ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM chunks WHERE chunk_id = ? AND doc_id = ?)",
                [(key, doc_id, np.asarray(v, dtype=np.float32).tobytes(), chunk_id, doc_id)
                 for doc_id, chunk_id, key, v in rows])
            written = conn.total_changes - before
            conn.execute("COMMIT")
        except sqlite3.OperationalError:  # read-only file, full disk: nothing stored, nothing lost
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return written

    # ------------------------------------------------------------------ chunks
    def chunk_rows(self) -> sqlite3.Cursor:
        """Every chunk's search data, in row order (used to build a snapshot)."""
        return self.db.execute(
            "SELECT c.row, c.doc_id, c.term_ids, c.term_tfs, e.vector FROM chunks c "
            "LEFT JOIN embeddings e ON e.embed_hash = c.embed_hash ORDER BY c.row"
        )

    def chunks_by_row(self, rows: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """Display data of chunks: row → (chunk_id, doc_id, ordinal, start, end, heading_path, text, flags)."""
        out: dict[int, tuple[Any, ...]] = {}
        rows = [int(r) for r in rows]
        for i in range(0, len(rows), 500):
            part = rows[i : i + 500]
            q = ('SELECT row, chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags FROM chunks '
                 f"WHERE row IN ({','.join('?' * len(part))})")
            for r in self.db.execute(q, part):
                out[r[0]] = (r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])), r[7], tuple(json.loads(r[8])))
        return out

    def chunk_texts(self, offset: int = 0, limit: int | None = None) -> Iterator[tuple[int, str, str]]:
        """``(row, text, flags json)`` of the chunks in row order from ``offset`` (at most ``limit``),
        for re-running an ingest-time detector."""
        yield from self.db.execute("SELECT row, text, flags FROM chunks ORDER BY row LIMIT ? OFFSET ?",
                                   (-1 if limit is None else limit, offset)).fetchall()

    def set_chunk_flags(self, flags: Mapping[int, Sequence[str]]) -> None:
        """Replace the flags of chunks by row (call inside :meth:`transaction`)."""
        self.db.executemany("UPDATE chunks SET flags = ? WHERE row = ?",
                            [(json.dumps(list(f)), row) for row, f in flags.items()])

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self.db.execute(
            'SELECT chunk_id, doc_id, ordinal, start, "end", heading_path, text, flags FROM chunks WHERE chunk_id = ?',
            (chunk_id,),
        ).fetchone()
        if row is None:
            return None
        return Chunk(row[0], row[1], row[2], row[3], row[4], tuple(json.loads(row[5])), row[6], tuple(json.loads(row[7])))

    def counts(self) -> dict[str, int]:
        one = lambda q: int(self.db.execute(q).fetchone()[0])  # noqa: E731
        return {
            "documents": one("SELECT COUNT(*) FROM documents"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
            "terms": one("SELECT COUNT(*) FROM terms"),
            "embeddings": one("SELECT COUNT(*) FROM embeddings"),
        }
