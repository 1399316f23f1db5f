"""Claims that let several ``beleg ingest`` processes share one corpus and one index.

Without them every process reads, chunks and embeds every file: the work is done once
per process, and the last commit wins. With a claim per file, a process works only on
the files it claimed; a file another process holds is put off to the end of the run and
then handled once the claim is gone (by then it is usually stored already, so it comes
out ``unchanged`` and nothing is embedded twice). A claim whose process died (same host,
pid gone) or that is older than ``stale_after_s`` is taken over, so a crash never loses
a file for the others.

A claim is a file ``<index>/claims/<hash of the source>.claim`` created with
``O_CREAT | O_EXCL`` (atomic on local filesystems) holding ``host pid started token``. It is
held from before the file is read until the batch holding its document is committed, so
whoever claims a file next sees the committed state. Taking over a stale claim renames
it away first (only one process's rename succeeds), then creates a fresh one.

The PostgreSQL backend has no index folder; there a claims table takes the place of these
files (:mod:`beleg.index.postgres.claims`, with leases, and the claim is marked done in the
transaction that commits its document). Both implement :class:`IngestClaims`, the port the
pipeline calls.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from beleg.processes import pid_alive, process_started

#: A claim older than this is taken over even if its owner cannot be checked (another host).
DEFAULT_STALE_AFTER_S = 1800.0
_HOST = socket.gethostname()


def source_key(source: str) -> str:
    """The name of a source's claim (a hash: claims never hold a path)."""
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()[:32]


class IngestClaims(Protocol):
    """What the ingest pipeline asks of the claims of one run (one owner).

    A claim is taken before a source is read and held until its document is committed or
    the source is given up; ``commit`` is called inside the transaction that writes the
    documents of ``sources``, so a backend that can, marks the claims done in it."""

    def try_claim(self, key: str) -> bool:
        """Claim ``key`` (a source); False when another live ingest holds it."""
        ...

    def release(self, key: str) -> None: ...

    def release_all(self) -> None: ...

    def held(self, key: str) -> bool: ...

    def claim_texts(self, hashes: Sequence[str]) -> set[str]:
        """Claim chunk texts (by hash) before embedding them; returns those this run may
        embed. The others are being embedded by another ingest: wait for their vectors
        (:func:`await_vectors`) instead of embedding them twice."""
        ...

    def publish(self, vectors: dict[str, np.ndarray]) -> None:
        """Hand the vectors of claimed texts to other ingests, as soon as they are embedded."""
        ...

    def commit(self, sources: Sequence[str], embedded: Sequence[str] = ()) -> set[str]:
        """Inside the commit transaction: mark these claims done (and the claims of the texts
        ``embedded`` for them); returns the sources whose claim another ingest took over
        meanwhile (their documents must not be written)."""
        ...


def await_vectors(claims: IngestClaims, stored: Callable[[Sequence[str]], dict[str, np.ndarray]],
                  texts: dict[str, str], embed: Callable[[list[str]], np.ndarray],
                  poll_s: float) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The vectors of ``texts`` (hash -> text) that other ingests claimed: each is waited for
    until it is published or committed (``stored``); one whose holder gave it up or died is
    claimed and embedded here. Returns ``(borrowed, embedded here)``.

    It cannot wait forever on a live holder: a text is claimed only right before its batch
    is embedded, and published from the embedding thread, whatever the holder waits for."""
    borrowed: dict[str, np.ndarray] = {}
    embedded: dict[str, np.ndarray] = {}
    waiting = sorted(texts)
    while waiting:
        borrowed.update(stored(waiting))
        waiting = [h for h in waiting if h not in borrowed]
        mine = sorted(claims.claim_texts(waiting)) if waiting else []
        if mine:
            vectors = embed([texts[h] for h in mine])
            embedded.update(zip(mine, vectors))
            claims.publish(dict(zip(mine, vectors)))
            waiting = [h for h in waiting if h not in embedded]
        if waiting:
            time.sleep(poll_s)
    return borrowed, embedded


def owner_id(token: str) -> str:
    """Who holds a claim: ``host pid started token`` (the process's start time tells a reused pid
    from its owner; the token tells two runs of one process apart)."""
    return f"{_HOST} {os.getpid()} {process_started(os.getpid()) or '-'} {token}"


def died_here(owner: str) -> bool:
    """Whether ``owner`` (an :func:`owner_id`; or ``host pid token`` as written before start times
    were) was a process on this host that is gone, or whose pid another process now has."""
    parts = owner.split()
    if len(parts) not in (3, 4) or parts[0] != _HOST or not parts[1].isdigit():
        return False
    started = parts[2] if len(parts) == 4 and parts[2] != "-" else None
    return not pid_alive(int(parts[1]), started)


class Claims:
    """The claims of one ingest run (one owner) in ``folder``."""

    def __init__(self, folder: Path, *, stale_after_s: float = DEFAULT_STALE_AFTER_S) -> None:
        self.folder = folder
        self.stale_after_s = stale_after_s
        self.token = uuid.uuid4().hex
        self._owner = owner_id(self.token) + "\n"
        self._held: set[str] = set()

    def _path(self, key: str) -> Path:
        return self.folder / f"{source_key(key)}.claim"

    def try_claim(self, key: str) -> bool:
        """Claim ``key`` (a source); False when another live process holds it."""
        if key in self._held:
            return True
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        for _ in range(3):  # a lost race for a stale claim: look again
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            except FileExistsError:
                if not self._stale(path) or not self._take_away(path):
                    if not path.exists():
                        continue  # released meanwhile
                    return False
                continue
            with os.fdopen(fd, "w") as f:
                f.write(self._owner)
            self._held.add(key)
            return True
        return False

    def release(self, key: str) -> None:
        if key not in self._held:
            return
        self._held.discard(key)
        path = self._path(key)
        try:
            if path.read_text() == self._owner:  # never remove a claim someone took over
                path.unlink()
        except OSError:
            pass

    def release_all(self) -> None:
        for key in list(self._held):
            self.release(key)

    def held(self, key: str) -> bool:
        return key in self._held

    def claim_texts(self, hashes: Sequence[str]) -> set[str]:
        """Every text is this run's to embed: two runs on one folder index that meet the same
        new text in batches in flight at the same moment both embed it (the race the
        PostgreSQL claims close; here it costs time, never correctness)."""
        return set(hashes)

    def publish(self, vectors: dict[str, np.ndarray]) -> None:
        return None

    def commit(self, sources: Sequence[str], embedded: Sequence[str] = ()) -> set[str]:
        """A file cannot join the catalog's transaction: the pipeline releases the claims
        right after the commit instead (a crash in between leaves claims of a dead pid)."""
        return set()

    def _stale(self, path: Path) -> bool:
        try:
            text = path.read_text()
            age = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return True
        except OSError:
            return False
        parts = text.split()
        if len(parts) not in (3, 4):  # half-written by a process that died between create and write
            return age > 5.0
        if died_here(text):
            return True
        return age > self.stale_after_s

    def _take_away(self, path: Path) -> bool:
        """Move a stale claim aside; True for the one process whose rename succeeded."""
        aside = path.with_name(f"{path.name}.stale-{self.token}")
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return False
        if not self._stale(aside):  # another process took it over between our look and the rename
            try:
                os.link(aside, path)  # put it back (fails only if yet another claim exists)
            except OSError:
                pass
            aside.unlink(missing_ok=True)
            return False
        aside.unlink(missing_ok=True)
        return True
