"""The index as the server holds it: one thread owns one open knowledge base.

A :class:`~beleg.index.catalog.Catalog` is one SQLite connection and not thread-safe, so
every call on an index goes through an :class:`IndexThread`: a single-thread executor that
opens its own :class:`~beleg.service.Service` on that thread. The server keeps two: one for
reads (search, ask, documents, status) and one for writes (ingest, delete), so an ingest
does not stop searches; the reader picks up each commit through the catalog generation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from beleg.service import Service

T = TypeVar("T")


class IndexThread:
    """Runs calls on one thread that owns one :class:`Service` (opened there on first use)."""

    def __init__(self, name: str, open_service: Callable[[], Service]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"beleg-{name}")
        self._open = open_service
        self._service: Service | None = None

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        if self._service is None:
            self._service = self._open()
        return fn(self._service, *args, **kwargs)

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(service, *args, **kwargs)`` on the index thread, awaited without blocking the event loop."""
        return await asyncio.wrap_future(self._pool.submit(self._run, fn, args, kwargs))

    def call_sync(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._pool.submit(self._run, fn, args, kwargs).result()

    def close(self) -> None:
        def close_service() -> None:
            if self._service is not None:
                self._service.kb.close()
                self._service = None

        self._pool.submit(close_service).result()
        self._pool.shutdown(wait=True)


def service_opener(source: Any) -> tuple[Callable[[], Service], Path]:
    """A function that opens a :class:`Service` like ``source`` on the calling thread, and the index root.

    ``source`` is an index folder, a :class:`~beleg.kb.KnowledgeBase` or a :class:`Service`;
    an open one is reopened (same folder, same embedder, LLM, reranker and Service class),
    since its connection belongs to the thread that opened it.
    """
    from beleg.errors import ConfigError
    from beleg.kb import KnowledgeBase

    if isinstance(source, Service):
        return _reopener(type(source), source.kb, source.llm, source.reranker)
    if isinstance(source, KnowledgeBase):
        return _reopener(Service, source, None, None)
    if isinstance(source, (str, Path)):
        text = str(source)
        if "://" in text:
            raise ConfigError(f"--index {text!r} is a URL; this build serves index folders only "
                              "(no PostgreSQL backend is installed); pass a folder made by 'beleg init'")
        with KnowledgeBase(Path(text), create=False) as probe:  # loads the model once, for both threads
            return _reopener(Service, probe, None, None)
    raise TypeError(f"create_app expects an index folder, a KnowledgeBase or a Service, got {type(source).__name__}")


def _reopener(cls: type[Service], kb: Any, llm: Any, reranker: Any) -> tuple[Callable[[], Service], Path]:
    from beleg.kb import KnowledgeBase

    embedder = kb.embedder  # loaded once, shared by the reopened copies
    root = kb.root

    def reopen() -> Service:
        return cls(KnowledgeBase(root, create=False, embedder=embedder), llm=llm, reranker=reranker)

    return reopen, root
