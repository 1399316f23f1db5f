"""Claims in PostgreSQL, so several ``beleg ingest`` processes (on one machine or several)
work through one corpus into one index without embedding a file twice or losing one.

A claim is a row of ``{schema}.ingest_claims``: the hash of the source (no path stays in
the table after an erasure), the worker (``host pid started token``), when it was claimed and until
when its lease runs. Claiming is one ``INSERT … ON CONFLICT DO UPDATE … WHERE`` statement:
it creates the row, or takes over a row whose lease ran out (a worker that was killed, or
lost its machine) or whose worker is a process of this host that is gone; PostgreSQL
decides which of several racing workers wins. Leases are measured on the server's clock,
so machines with different clocks agree.

While a worker holds claims, a heartbeat thread (its own connection) extends their leases
every third of the lease, so a slow batch is never taken away from a live worker. The
claim is marked done by deleting its row in the transaction that commits the document:
whoever claims the source next sees the committed document (and finds it ``unchanged``),
and a crash before the commit leaves the row to expire, never a half-written document.
A worker whose lease ran out anyway (stalled longer than the lease) finds at its commit
that the row is no longer its own and writes nothing for that source.

Chunk texts are claimed the same way (``{schema}.embedding_claims``, by text hash): before
embedding a batch, a worker claims the texts no committed chunk has a vector for; a text
another worker holds is not embedded but waited for. The holder publishes each vector in
that row as soon as it is embedded (from the embedding thread, before its own commit, so
two workers waiting for each other's texts always get them), and deletes the rows in the
transaction that commits the chunks. So two workers that meet the same new text at the
same moment embed it once.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from beleg.errors import ConfigError
from beleg.index.postgres.config import PostgresLocation, connect
from beleg.index.postgres.writes import vector_literal
from beleg.ingest.claims import died_here, owner_id, source_key

log = logging.getLogger(__name__)

#: How long a claim outlives its worker's last heartbeat (another worker then takes it).
DEFAULT_LEASE_S = 60.0
#: The environment variable that sets the lease (seconds) for ``beleg ingest``.
LEASE_ENV = "BELEG_CLAIM_LEASE_S"


def lease_from_env(value: str | None) -> float:
    """The lease ``BELEG_CLAIM_LEASE_S`` asks for (unset: :data:`DEFAULT_LEASE_S`)."""
    if value in (None, ""):
        return DEFAULT_LEASE_S
    try:
        lease = float(value)
    except ValueError:
        lease = 0.0
    if not lease >= 1.0:  # also refuses nan
        raise ConfigError(f"{LEASE_ENV}={value!r}: expected a number of seconds of at least 1 "
                          f"(default {DEFAULT_LEASE_S:g}); unset it or give e.g. {LEASE_ENV}=120")
    return lease


class PostgresClaims:
    """The claims of one ingest run (one owner) in the schema of ``conn``
    (:class:`beleg.ingest.claims.IngestClaims`).

    Args:
        conn: The catalog's write connection (autocommit): ``commit`` must run inside the
            transaction that writes the documents.
        location: Where the heartbeat opens its own connection.
        lease_s: Seconds a claim stays valid after the last heartbeat.
    """

    def __init__(self, conn: Any, location: PostgresLocation, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.conn = conn
        self.location = location
        self.lease_s = lease_s
        self.token = uuid.uuid4().hex
        self.worker = owner_id(self.token)
        self._held: dict[str, str] = {}  # source -> key
        self._heartbeat: threading.Thread | None = None
        self._stop = threading.Event()
        #: For publishing vectors from the embedding thread (the write connection is the main thread's).
        self._publisher: Any = None
        self._publish_lock = threading.Lock()

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self.location.schema))

    # ------------------------------------------------------------------ the port
    def try_claim(self, key: str) -> bool:
        """Claim source ``key``; False while another live worker holds it."""
        if key in self._held:
            return True
        hashed = source_key(key)
        won = self._insert_or_take_over(hashed, None)
        if not won:
            holder = self.holder(key)
            if holder is None:  # released between the two statements
                won = self._insert_or_take_over(hashed, None)
            elif died_here(holder):
                won = self._insert_or_take_over(hashed, holder)
        if won:
            self._held[key] = hashed
            self._start_heartbeat()
        return won

    def release(self, key: str) -> None:
        hashed = self._held.pop(key, None)
        if hashed is not None:  # never removes a claim another worker took over
            self.conn.execute(self._q("DELETE FROM {s}.ingest_claims WHERE source_key = %s AND worker = %s"),
                              (hashed, self.worker))
        if not self._held:
            self._stop_heartbeat()

    def release_all(self) -> None:
        """Give up every claim (end of a run, or after an error), and the text claims of this
        worker and of workers whose lease ran out. A connection that is gone cannot delete
        them: their leases then run out and other workers take the files."""
        try:
            for key in list(self._held):
                self.release(key)
            self.conn.execute(self._q("DELETE FROM {s}.embedding_claims WHERE worker = %s OR lease_until < now()"),
                              (self.worker,))
        except Exception as exc:  # noqa: BLE001 - called while another error may be propagating
            log.warning("could not release %d ingest claims (%s); they expire after %g s",
                        len(self._held), exc, self.lease_s)
            self._held.clear()
        self._stop_heartbeat()
        with self._publish_lock:
            if self._publisher is not None:
                self._publisher.close()
                self._publisher = None

    def held(self, key: str) -> bool:
        return key in self._held

    def claim_texts(self, hashes: Sequence[str]) -> set[str]:
        """Claim chunk texts (by hash) to embed; returns those now this worker's. A text held
        by a live worker stays its own (wait for its vector: :meth:`IngestClaims.claim_texts`)."""
        wanted = sorted(set(hashes))  # one lock order for every worker: no deadlock between batches
        if not wanted:
            return set()
        won = self._claim_texts(wanted, [])
        rest = [h for h in wanted if h not in won]
        if rest:
            dead = sorted({w for (w,) in self.conn.execute(self._q(
                "SELECT DISTINCT worker FROM {s}.embedding_claims WHERE embed_hash = ANY(%s)"), (rest,))
                           if died_here(w)})
            won |= self._claim_texts(rest, dead) if dead else set()
        if won:
            # Another worker may have committed one of these between the caller's look-up and
            # this claim (its row went with that commit): the caller finds it stored, not ours.
            stored = {r[0] for r in self.conn.execute(self._q(
                "SELECT DISTINCT embed_hash FROM {s}.chunks WHERE embed_hash = ANY(%s) AND embedding IS NOT NULL"),
                (sorted(won),))}
            if stored:
                self.conn.execute(self._q("DELETE FROM {s}.embedding_claims WHERE worker = %s AND "
                                          "embed_hash = ANY(%s)"), (self.worker, sorted(stored)))
                won -= stored
            self._start_heartbeat()
        return won

    def publish(self, vectors: dict[str, Any]) -> None:
        """Hand the vectors of texts this worker claimed to the workers waiting for them (its
        own connection: this runs on the embedding thread, while the main thread reads files)."""
        if not vectors:
            return
        with self._publish_lock:
            if self._publisher is None:
                self._publisher = connect(self.location)
            with self._publisher.cursor() as cur:
                cur.executemany(self._q("UPDATE {s}.embedding_claims SET embedding = %s::vector "
                                        "WHERE embed_hash = %s AND worker = %s"),
                                [(vector_literal(v), h, self.worker) for h, v in vectors.items()])

    def commit(self, sources: Sequence[str], embedded: Sequence[str] = ()) -> set[str]:
        """Inside the commit transaction: delete these claims (done), and the claims of the
        texts embedded for them (their vectors are on the chunks now). Returns the sources
        whose row is no longer this worker's (its lease ran out and another took it)."""
        if embedded:
            self.conn.execute(self._q("DELETE FROM {s}.embedding_claims WHERE worker = %s AND embed_hash = ANY(%s)"),
                              (self.worker, sorted(embedded)))
        # Still held until the pipeline releases them after the commit: if this transaction
        # rolls back, the rows come back and release_all must still delete them.
        keys = {source: self._held[source] for source in sources if source in self._held}
        rows = self.conn.execute(self._q("DELETE FROM {s}.ingest_claims WHERE worker = %s AND source_key = ANY(%s) "
                                         "RETURNING source_key"), (self.worker, list(keys.values()))).fetchall()
        done = {r[0] for r in rows}
        lost = {source for source, hashed in keys.items() if hashed not in done}
        for source in lost:
            del self._held[source]
        if lost:
            log.warning("%d ingest claims were taken over after their lease ran out; their files are left "
                        "to the worker that took them", len(lost))
        return lost

    # ------------------------------------------------------------------ inspection
    def holder(self, key: str) -> str | None:
        """The worker holding source ``key`` now (its lease may have run out), or None."""
        row = self.conn.execute(self._q("SELECT worker FROM {s}.ingest_claims WHERE source_key = %s"),
                                (source_key(key),)).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------------ internals
    def _insert_or_take_over(self, hashed: str, dead_worker: str | None) -> bool:
        """One statement: a new claim, or this worker in place of an expired (or dead) one."""
        row = self.conn.execute(self._q(
            "INSERT INTO {s}.ingest_claims AS c (source_key, worker, claimed_at, lease_until) "
            "VALUES (%(key)s, %(worker)s, now(), now() + %(lease)s * interval '1 second') "
            "ON CONFLICT (source_key) DO UPDATE SET worker = EXCLUDED.worker, claimed_at = EXCLUDED.claimed_at, "
            "lease_until = EXCLUDED.lease_until WHERE c.lease_until < now() OR c.worker = %(dead)s "
            "RETURNING c.worker"), {"key": hashed, "worker": self.worker, "lease": self.lease_s,
                                    "dead": dead_worker}).fetchone()
        return row is not None

    def _claim_texts(self, hashes: list[str], dead_workers: list[str]) -> set[str]:
        rows = self.conn.execute(self._q(
            "INSERT INTO {s}.embedding_claims AS c (embed_hash, worker, lease_until) "
            "SELECT h, %(worker)s, now() + %(lease)s * interval '1 second' FROM unnest(%(hashes)s::text[]) AS h "
            "ON CONFLICT (embed_hash) DO UPDATE SET worker = EXCLUDED.worker, lease_until = EXCLUDED.lease_until "
            "WHERE c.embedding IS NULL AND (c.lease_until < now() OR c.worker = ANY(%(dead)s)) "
            "RETURNING c.embed_hash"), {"worker": self.worker, "lease": self.lease_s, "hashes": hashes,
                                        "dead": dead_workers}).fetchall()
        return {r[0] for r in rows}

    def _start_heartbeat(self) -> None:
        if self._heartbeat is not None:
            return
        self._stop.clear()
        self._heartbeat = threading.Thread(target=self._beat, name="beleg-claims-heartbeat", daemon=True)
        self._heartbeat.start()

    def _stop_heartbeat(self) -> None:
        thread, self._heartbeat = self._heartbeat, None
        if thread is not None:
            self._stop.set()
            thread.join()

    def _beat(self) -> None:
        """Extend this worker's leases until stopped. Rows the commit is deleting are locked:
        SKIP LOCKED passes them by instead of waiting (or deadlocking with the commit)."""
        conn = None
        try:
            conn = connect(self.location)
            while not self._stop.wait(self.lease_s / 3):
                for table, key in (("ingest_claims", "source_key"), ("embedding_claims", "embed_hash")):
                    conn.execute(sql.SQL(
                        "UPDATE {s}.{t} SET lease_until = now() + %(lease)s * interval '1 second' "
                        "WHERE {k} IN (SELECT {k} FROM {s}.{t} WHERE worker = %(worker)s FOR UPDATE SKIP LOCKED)"
                    ).format(s=sql.Identifier(self.location.schema), t=sql.Identifier(table), k=sql.Identifier(key)),
                        {"lease": self.lease_s, "worker": self.worker})
        except Exception as exc:  # noqa: BLE001 - a thread's error would vanish; say it
            log.warning("ingest claims heartbeat stopped (%s); claims held now expire after %g s", exc, self.lease_s)
        finally:
            if conn is not None:
                conn.close()
