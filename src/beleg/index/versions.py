"""Index versions side by side: build a new configuration beside the live one, switch atomically.

An index directory holds one or more *versions*, each a complete index (``beleg.json`` +
``catalog.sqlite``) named by its configuration hash (:attr:`IndexConfig.index_version`)::

    kb/
      beleg.json, catalog.sqlite     the first version (an index that was never reindexed)
      versions/3f2a9c1d07be/         a version built by `beleg reindex`
      LIVE                           which one readers open: "." or "versions/3f2a9c1d07be"

``reindex`` builds a new version from the live version's stored documents (no source
files needed); ``switch`` rewrites ``LIVE`` with one atomic rename, so a reader opens
either the old or the new version, never a mixture; ``gc`` deletes the versions that are
not live. Neither may lose a document silently: ``switch`` refuses a version whose build never
finished or that lacks documents of the live one, ``gc`` keeps a version holding documents
the live one lacks (both unless told ``allow_document_loss``), and an erasure interrupted
between versions is recorded (``ERASURE``) and finished before the next switch can bring
the erased documents back. An open :class:`KnowledgeBase` keeps the version it opened until reopened; one
that opened the live version refuses document writes once ``LIVE`` names another
(:class:`VersionNotLiveError`). A long-running process (``beleg serve``) registers the
version it holds open (:func:`hold_version`), and ``gc`` keeps a version so held.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beleg.durable import fsync_path
from beleg.errors import ConfigError, IndexStateError
from beleg.index.catalog import read_only_uri
from beleg.processes import pid_alive, process_started

LIVE_FILE = "LIVE"
VERSIONS_DIR = "versions"
CONFIG_FILE = "beleg.json"
CATALOG_FILE = "catalog.sqlite"
_FLAT = "."


@dataclass(frozen=True, slots=True)
class VersionInfo:
    version: str
    path: Path
    live: bool
    config: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "path": str(self.path), "live": self.live, "config": self.config}


def _read_config(folder: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def live_dir(root: Path) -> Path:
    """The folder of the live version (the root itself for an index never reindexed)."""
    marker = root / LIVE_FILE
    if not marker.exists():
        return root
    rel = marker.read_text(encoding="utf-8").strip() or _FLAT
    folder = (root / rel).resolve()
    if not folder.is_relative_to(root.resolve()) or not (folder / CONFIG_FILE).exists():
        raise IndexStateError(f"{marker} points at {rel!r}, which is not an index version of {root}")
    return folder


def list_versions(root: Path) -> list[VersionInfo]:
    """Every complete version in ``root``, the live one first."""
    live = live_dir(root).resolve() if (root / CONFIG_FILE).exists() or (root / LIVE_FILE).exists() else None
    folders = [root] if (root / CONFIG_FILE).exists() else []
    if (root / VERSIONS_DIR).is_dir():
        folders += sorted(p for p in (root / VERSIONS_DIR).iterdir() if (p / CONFIG_FILE).exists())
    out = []
    for folder in folders:
        config = _read_config(folder)
        if config is None:
            continue
        out.append(VersionInfo(str(config.get("index_version")), folder, folder.resolve() == live, config))
    return sorted(out, key=lambda v: not v.live)


def version_dir(root: Path, version: str | None) -> Path:
    """The folder of ``version`` (None: the live one); a clear error names the versions there are."""
    if version is None or version == "live":
        return live_dir(root)
    for info in list_versions(root):
        if info.version == version or info.version.startswith(version) and len(version) >= 4:
            return info.path
    known = ", ".join(v.version + (" (live)" if v.live else "") for v in list_versions(root)) or "none"
    raise ConfigError(f"index {root} has no version {version!r}; versions: {known}")


def new_version_dir(root: Path, version: str) -> Path:
    return root / VERSIONS_DIR / version


def switch(root: Path, version: str, *, allow_document_loss: bool = False) -> VersionInfo:
    """Make ``version`` live with one atomic rename of the ``LIVE`` file.

    Refused while a reindex builds, while an erasure is unfinished (:class:`ErasurePendingError`:
    the version may still hold the erased text), and, unless ``allow_document_loss``, when the
    version's build never finished or it lacks documents the live version has
    (:class:`VersionNotReadyError`): readers would lose them, and ``gc`` then their last copy."""
    with write_lock(root, "switch", version):
        refuse_while_erasing(root)
        folder = version_dir(root, version)
        if not allow_document_loss:
            ready = readiness(root, version)
            if ready.loses_documents:
                raise VersionNotReadyError(ready.describe(root))
        return _switch(root, folder, version)


def _switch(root: Path, folder: Path, version: str) -> VersionInfo:
    if not (folder / CATALOG_FILE).exists():
        raise IndexStateError(f"version {version} in {root} has no catalog; rebuild it with 'beleg reindex'")
    rel = _FLAT if folder.resolve() == root.resolve() else folder.resolve().relative_to(root.resolve()).as_posix()
    tmp = root / (LIVE_FILE + ".tmp")
    tmp.write_text(rel + "\n", encoding="utf-8")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    with _writes_paused(live_dir(root) / CATALOG_FILE):
        os.replace(tmp, root / LIVE_FILE)
    return next(v for v in list_versions(root) if v.live)


@contextmanager
def _writes_paused(catalog: Path) -> Iterator[None]:
    """Hold the write lock of the (outgoing) live catalog while ``LIVE`` is replaced. A writer
    checks that its version is live inside its write transaction (:func:`refuse_if_not_live`),
    so one that committed before has written to a version that was live then, and every
    later one sees the new ``LIVE`` and refuses: no write lands in a version that stopped
    being live between its check and its commit."""
    if not catalog.exists():
        yield
        return
    db = sqlite3.connect(catalog, timeout=SHORT_WAIT_S, isolation_level=None)
    try:
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise IndexBusyError(f"the live version's catalog {catalog} stayed locked by a writer for "
                                 f"{SHORT_WAIT_S:g} s ({exc}); run the switch again") from None
        try:
            yield
        finally:
            db.execute("ROLLBACK")
    finally:
        db.close()


class VersionNotLiveError(IndexStateError):
    """A document write through an index opened on the live version, after ``beleg switch``
    made another version live: it would land in a version nobody opens any more."""


def refuse_if_not_live(root: Path, folder: Path) -> None:
    """Raise :class:`VersionNotLiveError` when ``LIVE`` no longer names ``folder``."""
    try:
        live = live_dir(root).resolve()
    except IndexStateError:
        live = None  # LIVE names no version at all: not this one either
    if live != folder.resolve():
        raise VersionNotLiveError(
            f"the index {root} was switched to another live version ({(root / LIVE_FILE)} now names "
            f"{live or 'nothing usable'}) after this process opened {folder}; a change written now would be "
            f"lost to everyone who opens the index. Reopen the index (restart the server) and write again")


def gc(root: Path, *, allow_document_loss: bool = False) -> list[VersionInfo]:
    """Delete every version that is not live, that no running process holds open and that holds
    no document the live version lacks; returns what was removed (:func:`collect` also says
    what was kept and why)."""
    return collect(root, allow_document_loss=allow_document_loss).removed


@dataclass(frozen=True, slots=True)
class Collected:
    removed: list[VersionInfo]
    #: Versions not live but kept, each with the running processes that hold it open.
    kept: list[tuple[VersionInfo, list[dict[str, Any]]]]
    #: Versions not live but kept because they hold documents the live version lacks (id → source).
    kept_documents: list[tuple[VersionInfo, dict[str, str]]] = field(default_factory=list)


def collect(root: Path, *, allow_document_loss: bool = False) -> Collected:
    """Delete every version that is not live and that no running process holds open
    (:func:`hold_version`: a server that opened it before a switch still reads its files);
    refused while a reindex builds.

    A version holding documents the live version lacks (left behind by a switch with
    ``allow_document_loss``) is their last copy: it is kept unless ``allow_document_loss``.
    Documents an unfinished erasure is removing do not count (deleting a version only
    finishes their erasure there)."""
    with write_lock(root, "gc"):
        return _gc(root, allow_document_loss)


def _gc(root: Path, allow_document_loss: bool) -> Collected:
    removed: list[VersionInfo] = []
    kept: list[tuple[VersionInfo, list[dict[str, Any]]]] = []
    kept_documents: list[tuple[VersionInfo, dict[str, str]]] = []
    holders = version_holders(root)
    live = live_dir(root)
    erasing = set((pending_erasure(root) or {}).get("doc_ids", []))
    for info in list_versions(root):
        if info.live:
            continue
        held = holders.get(info.path.resolve(), [])
        if held:
            kept.append((info, held))
            continue
        only_here = {doc_id: source for doc_id, source in drift(live, info.path).extra.items()
                     if doc_id not in erasing} if (info.path / CATALOG_FILE).exists() else {}
        if only_here and not allow_document_loss:
            kept_documents.append((info, only_here))
            continue
        if info.path.resolve() == root.resolve():
            # The first version lives in the root itself: remove its files, keep the folder.
            for name in (CONFIG_FILE, CATALOG_FILE, CATALOG_FILE + "-wal", CATALOG_FILE + "-shm"):
                (root / name).unlink(missing_ok=True)
        else:
            shutil.rmtree(info.path)
        removed.append(info)
    return Collected(removed, kept, kept_documents)


# ---------------------------------------------------------------------------- versions held open
#
# ``gc`` deletes versions that are not live; a server that opened a version before a switch
# still reads (and holds the files of) it. A long-running process registers the version it
# holds in ``HOLDERS/`` in the root, one JSON file per process (pid, process start time,
# host), removed when it closes; a file whose process is gone (killed) counts for nothing
# and is removed by the next gc, as a stale ``LOCK`` is. A short command (search, ask)
# registers nothing.

HOLDERS_DIR = "HOLDERS"


@contextmanager
def hold_version(root: Path, folder: Path, purpose: str) -> Iterator[Path | None]:
    """Register that this process holds the version in ``folder`` open, for as long as the
    context lasts; yields the registration file, or None when the index folder cannot be
    written (a read-only copy: then no gc can run there either)."""
    pid = os.getpid()
    entry = {"purpose": purpose, "version_path": str(folder.resolve()), "pid": pid,
             "started": process_started(pid), "host": socket.gethostname(),
             "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path = root / HOLDERS_DIR / f"{pid}-{uuid.uuid4().hex}.json"
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    except OSError:
        yield None
        return
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def version_holders(root: Path) -> dict[Path, list[dict[str, Any]]]:
    """Resolved version folder → the running processes that hold it open (see :func:`hold_version`)."""
    out: dict[Path, list[dict[str, Any]]] = {}
    folder = root / HOLDERS_DIR
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.json")):
        try:
            entry = dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            entry = {}
        if entry and _alive(entry):
            out.setdefault(Path(str(entry.get("version_path"))).resolve(), []).append(entry)
        elif entry or time.time() - _mtime(path) > 5:  # an empty file may still be being written
            path.unlink(missing_ok=True)
    return out


def describe_holder(entry: dict[str, Any]) -> str:
    return (f"{entry.get('purpose', 'a process')} (pid {entry.get('pid', '?')} on {entry.get('host', '?')}, "
            f"since {entry.get('since', '?')})")


# ---------------------------------------------------------------------------- the write lock
#
# Operations that touch more than one version hold ``LOCK`` in the root: ``reindex`` (for
# the whole build), ``delete`` (it erases from every version), ``switch`` and ``gc``. While a
# *reindex* holds it, document writes (ingest, metadata edits, deletes) to the live version
# are refused: the new version is built from the live documents as they were when the build
# began, so a write during the build would be missing from it (an ingest lost, a deletion
# resurrected on switch). The other holders are short; they are waited for.

LOCK_FILE = "LOCK"
#: How long a short operation (delete, switch, gc) waits for another short one to finish.
SHORT_WAIT_S = 30.0


class IndexBusyError(IndexStateError):
    """Another process holds the index's write lock (a reindex is building)."""


def _alive(owner: dict[str, Any]) -> bool:
    """Whether the process that wrote a lock still runs; a lock from another host is assumed alive."""
    if owner.get("host") != socket.gethostname():
        return True
    return pid_alive(int(owner.get("pid") or 0), owner.get("started"))


def read_lock(root: Path) -> dict[str, Any] | None:
    """The owner of the root's write lock, or None when no live process holds it.

    A lock left by a process that is gone (a crashed or killed reindex) is removed here."""
    path = root / LOCK_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        owner = dict(json.loads(raw))
    except (ValueError, TypeError):
        owner = {}  # half-written by a process that died between create and write
    if owner and _alive(owner):
        return owner
    if not owner and time.time() - _mtime(path) < 5:
        return {"purpose": "starting", "pid": "?", "since": "just now", "version": None}  # still being written
    try:
        if path.read_bytes() == raw:  # not a fresh lock another process took meanwhile
            path.unlink()
    except FileNotFoundError:
        pass
    return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def describe_lock(root: Path, owner: dict[str, Any]) -> str:
    what = owner.get("purpose", "an operation")
    target = f" to version {owner['version']}" if owner.get("version") else ""
    return (f"a {what}{target} is running on {root} since {owner.get('since', '?')} (pid {owner.get('pid', '?')} "
            f"on {owner.get('host', '?')})")


def refuse_while_building(root: Path, holder_token: str | None = None) -> None:
    """Raise :class:`IndexBusyError` when a reindex other than ``holder_token``'s holds the lock."""
    owner = read_lock(root)
    if owner is None or owner.get("purpose") != "reindex" or owner.get("token") == holder_token:
        return
    raise IndexBusyError(
        f"{describe_lock(root, owner)}; documents cannot change until it finishes, or the new version would "
        f"miss the change. Wait for it to finish and run this again (a reindex that was killed frees the "
        f"lock by itself; resume it with the same 'beleg reindex' command)")


@contextmanager
def write_lock(root: Path, purpose: str, version: str | None = None) -> Iterator[str]:
    """Hold the root's write lock for ``purpose``; yields the holder's token.

    A reindex holding it refuses at once (it can take minutes); a short holder is waited
    for up to :data:`SHORT_WAIT_S`. A lock whose process is gone is taken over."""
    if not root.is_dir():
        raise IndexStateError(f"no Beleg index at {root}; create one with 'beleg init --index {root}'")
    token = uuid.uuid4().hex
    pid = os.getpid()
    owner = {"purpose": purpose, "version": version, "pid": pid, "started": process_started(pid),
             "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "token": token}
    path = root / LOCK_FILE
    deadline = time.monotonic() + SHORT_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            break
        except FileExistsError:
            held = read_lock(root)
            if held is None:
                continue  # a stale lock was removed: try again
            if held.get("purpose") == "reindex" or time.monotonic() > deadline:
                raise IndexBusyError(f"{describe_lock(root, held)}; wait for it to finish and run this again "
                                     f"(a killed process frees the lock by itself)") from None
            time.sleep(0.1)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(owner) + "\n")
        yield token
    finally:
        path.unlink(missing_ok=True)


# ---------------------------------------------------------------------------- drift and readiness


@dataclass(frozen=True, slots=True)
class Drift:
    """How another version's documents differ from the live version's, each as doc id → source:
    ``missing`` (in the live version only), ``changed`` (other content or metadata) and
    ``extra`` (not in the live version)."""

    missing: dict[str, str]
    changed: dict[str, str]
    extra: dict[str, str]

    def counts(self) -> dict[str, int]:
        return {"missing": len(self.missing), "changed": len(self.changed), "extra": len(self.extra)}


def _catalog_rows(folder: Path, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of a read-only query on the catalog in ``folder`` (nothing is written, no lock taken;
    in a folder this process may not write, as the catalog itself opens: ``read_only_uri``)."""
    db = sqlite3.connect(read_only_uri(folder / CATALOG_FILE), uri=True)
    try:
        return db.execute(query, params).fetchall()
    finally:
        db.close()


def drift(live: Path, other: Path) -> Drift:
    """How ``other``'s documents differ from ``live``'s (see :class:`Drift`). Read-only."""
    def state(folder: Path) -> dict[str, tuple[str, str, str]]:
        rows = _catalog_rows(folder, "SELECT doc_id, source, content_hash, metadata FROM documents")
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    a, b = state(live), state(other)
    return Drift(missing={k: a[k][0] for k in sorted(a.keys() - b.keys())},
                 changed={k: a[k][0] for k in sorted(a.keys() & b.keys()) if a[k][1:] != b[k][1:]},
                 extra={k: b[k][0] for k in sorted(b.keys() - a.keys())})


#: Catalog meta key of a version built by ``beleg reindex``: BUILD_UNFINISHED from the start of
#: the build until its last document is written, then BUILD_FINISHED. A version without it (the
#: first one, or one built by an older Beleg) counts as finished.
BUILD_STATE_KEY = "reindex_build"
BUILD_UNFINISHED = "unfinished"
BUILD_FINISHED = "finished"


class VersionNotReadyError(IndexStateError):
    """``switch`` to a version whose build never finished or that lacks documents of the live
    version (readers would lose them, and ``gc`` their last copy)."""


@dataclass(frozen=True, slots=True)
class Readiness:
    """What making ``version`` live would cost against the live version ``live``."""

    version: str
    live: str
    unfinished: bool
    drift: Drift

    @property
    def loses_documents(self) -> bool:
        return self.unfinished or bool(self.drift.missing)

    def describe(self, index: Any) -> str:
        """Why switching to the version is refused, and what to do: one line."""
        problems = []
        if self.unfinished:
            problems.append("its build never finished (the 'beleg reindex' that built it was interrupted)")
        if self.drift.missing:
            problems.append(f"it lacks {len(self.drift.missing)} document(s) of the live version {self.live} "
                            f"({name_some(self.drift.missing)})")
        if self.drift.changed:
            problems.append(f"{len(self.drift.changed)} differ ({name_some(self.drift.changed)})")
        return (f"version {self.version} of {index} is not ready to go live: {'; '.join(problems)}. Run the same "
                f"'beleg reindex' that built it again (it resumes and catches up: unchanged documents are skipped), "
                f"or switch anyway with --allow-document-loss")


def name_some(documents: dict[str, str], shown: int = 3) -> str:
    """A few documents by source, and how many more."""
    names = list(documents.values())
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def build_finished(folder: Path) -> bool:
    """Whether the version in ``folder`` is complete (see :data:`BUILD_STATE_KEY`)."""
    rows = _catalog_rows(folder, "SELECT value FROM meta WHERE key = ?", (BUILD_STATE_KEY,))
    return not rows or rows[0][0] != BUILD_UNFINISHED


def readiness(root: Path, version: str) -> Readiness:
    """Whether ``version`` can go live without losing documents (read-only)."""
    live, folder = live_dir(root), version_dir(root, version)
    live_version = next((v.version for v in list_versions(root) if v.live), "?")
    if not (folder / CATALOG_FILE).exists():
        raise IndexStateError(f"version {version} in {root} has no catalog; rebuild it with 'beleg reindex'")
    return Readiness(str((_read_config(folder) or {}).get("index_version", version)), live_version,
                     not build_finished(folder), drift(live, folder))


def summaries(root: Path) -> list[dict[str, Any]]:
    """Every version (live first) with its document count and whether its build finished:
    one count query per version's catalog."""
    out = []
    for info in list_versions(root):
        has_catalog = (info.path / CATALOG_FILE).exists()
        count = _catalog_rows(info.path, "SELECT COUNT(*) FROM documents")[0][0] if has_catalog else 0
        out.append({**info.to_json(), "documents": count,
                    "complete": has_catalog and build_finished(info.path)})
    return out


# ---------------------------------------------------------------------------- the erasure journal
#
# An erasure runs one transaction per version. Killed between two, some versions still hold
# the text, and a switch to one of them would bring the document back. So the ids are
# recorded in ``ERASURE`` in the root (written and fsynced) before the first version is
# touched, and the file is removed once every version is done. While it exists, ``switch``
# is refused, ``status`` says so, and the next delete, ingest or reindex finishes the
# erasure before it writes anything.

ERASURE_FILE = "ERASURE"


class ErasurePendingError(IndexStateError):
    """An erasure was interrupted before it reached every version."""


def pending_erasure(root: Path) -> dict[str, Any] | None:
    """The unfinished erasure recorded in the root (``doc_ids``, ``since``), or None."""
    try:
        return dict(json.loads((root / ERASURE_FILE).read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise IndexStateError(f"cannot read {root / ERASURE_FILE} ({exc}); it records an erasure that did not "
                              "finish: rerun the 'beleg delete' that was interrupted, then remove the file") from None


def erasure_entry(doc_ids: list[str], since: str | None = None) -> dict[str, Any]:
    """What the journal records of an erasure (both backends): its ids, and when it began."""
    return {"doc_ids": sorted(doc_ids), "since": since or time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def record_erasure(root: Path, doc_ids: list[str], since: str | None = None) -> None:
    """Record, durably, that ``doc_ids`` are being erased from every version."""
    path, tmp = root / ERASURE_FILE, root / (ERASURE_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(erasure_entry(doc_ids, since)) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_path(root)


def clear_erasure(root: Path) -> None:
    (root / ERASURE_FILE).unlink(missing_ok=True)
    fsync_path(root)


def erasure_pending_error(index: Any, pending: dict[str, Any]) -> ErasurePendingError:
    """The refusal of a switch while the erasure ``pending`` of ``index`` (a folder or URL) is unfinished."""
    return ErasurePendingError(
        f"an erasure of {len(pending.get('doc_ids', []))} document(s) begun on {index} at {pending.get('since', '?')} "
        "was interrupted before it reached every version; a version it has not reached would bring them back. "
        f"Finish it with 'beleg delete --finish --index {index}' (the next delete, ingest or reindex finishes it "
        "too), then run this again")


def refuse_while_erasing(root: Path) -> None:
    """Raise :class:`ErasurePendingError` while an erasure is unfinished: a version it has not
    reached yet would bring the erased documents back."""
    pending = pending_erasure(root)
    if pending is not None:
        raise erasure_pending_error(root, pending)
