"""The index as the server holds it: one thread owns one open knowledge base.

A :class:`~beleg.index.catalog.Catalog` is one SQLite connection and not thread-safe, so
every call on an index goes through an :class:`IndexThread`: an executor whose threads each
open their own :class:`~beleg.service.Service` (own connection, own search view, one shared
model). The server keeps two: readers (search, ask, documents, status; ``read_threads`` of
them) and one writer (ingest, delete), so an ingest does not stop searches; readers pick up
each commit through the catalog generation. Over PostgreSQL the generation lives in the
database, so a reader also sees what another server process or host committed, at its next
query.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from beleg.index.postgres.config import is_postgres_url
from beleg.service import Service

T = TypeVar("T")
log = logging.getLogger(__name__)


class _Slot:
    """One thread's :class:`Service`, with the lock its calls and an idle release take."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        #: Whether a read view may be open (set by a call, cleared by a release).
        self.holding = False


class IndexThread:
    """Runs calls on ``threads`` threads, each owning one :class:`Service` (opened there on first use).

    With ``release_idle_s``, a thread's read view is ended once the thread has had no call for
    that long (:func:`release_snapshot`): a busy thread keeps reusing its view, an idle one
    holds no open transaction.
    """

    def __init__(self, name: str, open_service: Callable[[], Service], threads: int = 1,
                 release_idle_s: float | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"beleg-{name}")
        self._open = open_service
        self._local = threading.local()
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self.threads = threads
        self.release_idle_s = release_idle_s
        self._stop = threading.Event()
        self._janitor: threading.Thread | None = None
        if release_idle_s is not None:
            self._janitor = threading.Thread(target=self._release_idle, name=f"beleg-{name}-idle", daemon=True)
            self._janitor.start()

    def _slot(self) -> _Slot:
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            slot = self._local.slot = _Slot(self._open())
            with self._lock:
                self._slots.append(slot)
        return slot

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any], retry: bool = False) -> T:
        slot = self._slot()
        with slot.lock:
            try:
                return fn(slot.service, *args, **kwargs)
            except Exception as exc:
                if not connection_lost(exc):
                    raise
                self._drop(slot)  # a dead connection is never reused: the next call opens new ones
                if not retry:
                    raise
                log.warning("the database connection was lost during a read; retrying once on a new one")
            finally:
                slot.last_used, slot.holding = time.monotonic(), True
        return self._run(fn, args, kwargs)

    def _drop(self, slot: _Slot) -> None:
        with self._lock:
            if slot in self._slots:
                self._slots.remove(slot)
        self._local.slot = None
        try:
            slot.service.kb.close()
        except Exception:  # closing a connection the server already ended may fail: it is gone either way
            log.warning("closing a lost database connection failed", exc_info=True)

    def _release_idle(self) -> None:
        assert self.release_idle_s is not None
        while not self._stop.wait(self.release_idle_s / 4):
            with self._lock:
                slots = list(self._slots)
            for slot in slots:
                idle = time.monotonic() - slot.last_used >= self.release_idle_s
                if slot.holding and idle and slot.lock.acquire(blocking=False):  # never during a call
                    try:
                        release_snapshot(slot.service.kb)
                        slot.holding = False
                    except Exception:  # a failed release is retried at the next round, and logged
                        log.exception("could not end an idle read view")
                    finally:
                        slot.lock.release()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(service, *args, **kwargs)`` on an index thread, awaited without blocking the event loop."""
        return await asyncio.wrap_future(self._pool.submit(self._run, fn, args, kwargs))

    async def read(self, fn: Callable[[Service], T]) -> T:
        """:meth:`call` for a read, which is run once more on a new connection when the database
        connection was lost under it (a restarted server, a terminated session); a write is not."""
        return await asyncio.wrap_future(self._pool.submit(self._run, fn, (), {}, True))

    def call_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._pool.submit(self._run, fn, args, kwargs).result()

    def close(self) -> None:
        # Each connection is closed on the thread that opened it: submit one closer per thread
        # and keep them all busy at once, so every thread runs exactly one.
        self._stop.set()
        if self._janitor is not None:
            self._janitor.join(timeout=30)
        barrier = threading.Barrier(self.threads)

        def close_own() -> None:
            slot: _Slot | None = getattr(self._local, "slot", None)
            if slot is not None:
                slot.service.kb.close()
                self._local.slot = None
            barrier.wait(timeout=30)

        for future in [self._pool.submit(close_own) for _ in range(self.threads)]:
            future.result()
        self._pool.shutdown(wait=True)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's connection (or session) going away under a call."""
    psycopg = sys.modules.get("psycopg")  # not imported: no PostgreSQL index, so not its error
    return psycopg is not None and isinstance(exc, psycopg.OperationalError)


def release_snapshot(kb: Any) -> None:
    """End a PostgreSQL index's read view, so an idle thread holds no open transaction: one
    would hold back VACUUM for the whole database (an erasure's dead rows would stay, every
    table would bloat) for as long as the server waits for requests. The next call opens a new
    view (a connection and a snapshot: ending it after every call made a bm25 search over HTTP
    take ~2x as long, hence only after an idle spell). An index folder's view is memory, not
    a transaction: nothing to end."""
    if is_postgres_url(str(kb.root)):
        kb.store.forget_view()


def service_opener(source: Any) -> tuple[Callable[[], Service], str | Path, Path | str]:
    """A function that opens a :class:`Service` like ``source`` on the calling thread, the
    index root, and the version it opens: its folder, or its schema for PostgreSQL.

    ``source`` is an index folder, a ``postgresql://`` URL, a :class:`~beleg.kb.KnowledgeBase`
    or a :class:`Service`; an open one is reopened (same index, same embedder, LLM, reranker
    and Service class), since its connection belongs to the thread that opened it. Every
    thread opens the version ``source`` opened, even after a ``beleg switch``: one server
    never answers from two versions (it refuses writes then, see
    :class:`~beleg.index.versions.VersionNotLiveError`). The root of a PostgreSQL index is
    its URL: each thread opens its own connection (and its own read view) to that schema.
    """
    from beleg.kb import KnowledgeBase

    if isinstance(source, Service):
        return _reopener(type(source), source.kb, source.llm, source.reranker)
    if isinstance(source, KnowledgeBase):
        return _reopener(Service, source, None, None)
    if isinstance(source, (str, Path)):
        # A postgresql:// URL stays a string: KnowledgeBase opens the PostgreSQL backend for it.
        location: str | Path = source if is_postgres_url(str(source)) else Path(source)
        with KnowledgeBase(location, create=False) as probe:  # loads the model once, for every thread
            return _reopener(Service, probe, None, None)
    raise TypeError(f"create_app expects an index folder, a postgresql:// URL, a KnowledgeBase or a Service, "
                    f"got {type(source).__name__}")


def shown_location(index: str) -> str:
    """An index as the server shows it (startup line, ``/v1/status``): a URL's password as ***."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(index)
    if "://" not in index or parts.password is None:
        return index
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def default_upload_dir(root: str | Path) -> Path:
    """Where uploads are kept without ``--upload-dir``: ``INDEX-uploads`` beside an index
    folder; for a PostgreSQL index (no folder) ``beleg-uploads/SCHEMA`` in the working directory."""
    if is_postgres_url(str(root)):
        from beleg.index.postgres.config import PostgresLocation

        return Path("beleg-uploads") / PostgresLocation.parse(str(root)).schema
    root = Path(root)
    return root.parent / f"{root.name}-uploads"


def _reopener(cls: type[Service], kb: Any, llm: Any, reranker: Any) -> tuple[Callable[[], Service], str | Path,
                                                                             Path | str]:
    from beleg.kb import KnowledgeBase

    embedder = kb.embedder  # loaded once, shared by the reopened copies
    root = kb.root
    # A PostgreSQL version is named by its schema (two schemas may hold one configuration).
    held: Path | str = kb.store.schema if is_postgres_url(str(root)) else Path(kb.path)
    version = held if isinstance(held, str) else kb.config.index_version
    opened_live = kb.opened_live

    def reopen_version() -> Service:
        copy = KnowledgeBase(root, create=False, embedder=embedder, version=version)
        # A thread that opens after a switch opens a version no longer live; its writes must
        # be refused like those of the threads that opened before.
        copy.opened_live = opened_live
        return cls(copy, llm=llm, reranker=reranker)

    return reopen_version, root, held


@contextmanager
def hold_version(root: str | Path, held: Path | str, purpose: str) -> Iterator[object]:
    """Register ``held`` (a version's folder, or a PostgreSQL index's schema) as open in this
    process while the context lasts, so ``beleg gc`` keeps it (beleg.index.versions,
    beleg.index.postgres.versions)."""
    if isinstance(held, Path):
        from beleg.index import versions

        with versions.hold_version(Path(root), held, purpose) as entry:
            yield entry
        return
    from beleg.index.postgres.config import PostgresLocation
    from beleg.index.postgres.versions import VersionHold

    with VersionHold(PostgresLocation.parse(str(root)), held, purpose) as hold:
        yield hold
