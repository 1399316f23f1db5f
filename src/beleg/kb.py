"""The knowledge base: one index directory, and the calls the CLI and service make on it.

Example:
    >>> import beleg
    >>> kb = beleg.open("./kb")                                   # doctest: +SKIP
    >>> kb.ingest(["demo/corpus"])                                # doctest: +SKIP
    >>> kb.search("What does E-4012 mean?", where="version >= 3.0")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from beleg.backends.embedders import Embedder, load_embedder
from beleg.backends.rerankers.base import Reranker
from beleg.errors import BelegError, ConfigError, IndexStateError, IndexVersionError
from beleg.index import persisted_view, versions
from beleg.index.catalog import Catalog
from beleg.index.config import IndexConfig
from beleg.index.embedded import EmbeddedSearchIndex, EmbeddedStore
from beleg.index.filters import FilterLike, combine
from beleg.ingest.claims import Claims, IngestClaims
from beleg.ingest.metadata import MetadataRule, normalize
from beleg.retrieve.retriever import SearchOptions, StaleSnapshot
from beleg.retrieve.techniques import Techniques, finish, search_k, searcher_for
from beleg.types import ANONYMOUS, Chunk, Document, Hit, Principal

if TYPE_CHECKING:  # the ingest pipeline (readers, progress bars) is imported by the first ingest, not by a search
    from beleg.ingest.pipeline import Ingestor, IngestReport, TextSource
    from beleg.query.conversation import Conversation
    from beleg.query.self_query import Inferred

log = logging.getLogger(__name__)


#: Chunks the injection detector re-reads per transaction after an upgrade (KnowledgeBase._refresh_flags).
REFRESH_BATCH = 64
#: Meta key: "<detector version> <chunks done>" while a refresh is under way, in row order.
REFRESH_MARK = "injection_detector_refresh"


def refreshed_count(mark: str | None, version: str) -> int:
    """How many chunks (in row order) a refresh for detector ``version`` already committed.

    Nothing writes chunks between an interrupted refresh and the next open's (every open
    refreshes before it does anything else), so the count still names the same chunks. Were
    it off, the harm is bounded: a chunk left with an older detector's flags is still read
    with the current detector whenever it is retrieved (quarantine), so only its stored flag
    lags, never what reaches a prompt.
    """
    if mark is None:
        return 0
    mark_version, _, count = mark.rpartition(" ")
    return int(count) if mark_version == version and count.isdigit() else 0


CONFIG_FILE = "beleg.json"
CATALOG_FILE = "catalog.sqlite"


def default_index_dir() -> Path:
    """``$BELEG_INDEX``, else ``./.beleg`` (a ``postgresql://`` URL stays a string)."""
    # Imported in the functions: beleg.index.postgres builds on this module (its knowledge
    # base subclasses KnowledgeBase), so a module-level import would make the two a cycle.
    from beleg.index.postgres.config import is_postgres_url

    value = os.environ.get("BELEG_INDEX") or ".beleg"
    return value if is_postgres_url(value) else Path(value)  # type: ignore[return-value]


class KnowledgeBase:
    """An index directory opened for ingesting and searching."""

    def __new__(cls, path: str | Path | None = None, *args: Any, **kwargs: Any) -> KnowledgeBase:
        # A postgresql:// URL opens the PostgreSQL backend (beleg.index.postgres) wherever a
        # KnowledgeBase is made: the CLI, beleg.open, the service.
        from beleg.index.postgres.config import is_postgres_url  # see default_index_dir

        if cls is KnowledgeBase and is_postgres_url(str(path)):
            from beleg.index.postgres.knowledge_base import PostgresKnowledgeBase

            return super().__new__(PostgresKnowledgeBase)
        return super().__new__(cls)

    def __init__(self, path: str | Path, config: IndexConfig | None = None, *, create: bool = True,
                 embedder: Embedder | None = None, version: str | None = None) -> None:
        #: The index directory; ``path`` is the folder of the version opened (see beleg.index.versions).
        self.root = Path(path)
        if self.root.is_file():  # e.g. a gold set given as --index: "no index here, create one" would mislead
            raise IndexStateError(f"{self.root} is a file, not an index; give --index the index folder "
                                  "(default ./.beleg), or a new folder to create one there")
        self.path = versions.version_dir(self.root, version) if version else (
            versions.live_dir(self.root) if self.root.exists() else self.root)
        cfg_file = self.path / CONFIG_FILE
        if cfg_file.exists():
            try:
                stored = IndexConfig.from_json(json.loads(cfg_file.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise IndexStateError(f"cannot read {cfg_file}: {exc}") from None
            if config is not None and config.index_version != stored.index_version:
                raise IndexVersionError(
                    f"index {self.path} was built with {stored.versioned()} (version {stored.index_version}), "
                    f"not {config.versioned()} (version {config.index_version}); open it without a config, "
                    f"or build the new configuration beside it with 'beleg reindex --index {self.root}'"
                )
            self.config = stored
        elif create:
            self.config = config or IndexConfig()
            self.path.mkdir(parents=True, exist_ok=True)
            tmp = cfg_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.config.to_json(), indent=2) + "\n", encoding="utf-8")
            os.replace(tmp, cfg_file)  # atomic: a reader never sees half a config
        else:
            raise IndexStateError(f"no Beleg index at {self.path}; create one with 'beleg init --index {self.path}'")
        self.catalog = Catalog(self.path / CATALOG_FILE)
        #: The index's storage port (:class:`beleg.index.ports.Store`); searches read its views.
        self.store = EmbeddedStore(self.catalog)
        #: Per-thread state: the token of the root's write lock while this thread holds it.
        self._thread = threading.local()
        #: Whether this object opened the version that was live: its document writes are then
        #: refused once ``LIVE`` names another (a switch), or they would be lost to every reader.
        #: A copy reopened on the same version later (a server's thread) takes the original's.
        self.opened_live = self.path.resolve() == versions.live_dir(self.root).resolve()
        self.catalog.write_guard = self._refuse_while_building
        self._refresh_flags()
        self._embedder = embedder
        self._embedder_checked = False
        self._sentence_vectors: Any = None
        #: Retrieval techniques every search of this object uses unless given (beleg.retrieve.techniques).
        self.techniques = Techniques()

    @property
    def _lock_token(self) -> str | None:
        """The token of the root's write lock while this thread holds it (see beleg.index.versions).

        Per thread: another thread ingesting through this object while one reindexes must be
        refused like any other writer, not pass as the lock's holder.
        """
        return getattr(self._thread, "lock_token", None)

    @_lock_token.setter
    def _lock_token(self, token: str | None) -> None:
        self._thread.lock_token = token

    def _refresh_flags(self) -> None:
        """Re-run the injection detector over stored chunks when it changed (or never ran).

        Flags are derived data like vectors; a newer detector must not leave chunks an
        older one missed unflagged. Since detector v12 reads every paragraph with a small
        encoder, this takes tens of milliseconds per chunk: minutes for a large index, once,
        on the first open after an upgrade. So it shows progress (``beleg.progress``: a bar on
        a terminal, a line every few seconds in a log) and commits every ``REFRESH_BATCH``
        chunks with how far it got: an open interrupted (Ctrl-C, a crash) resumes there.
        """
        # The version lives apart from the detector so this check, run at every open,
        # does not import the detector and its patterns (start-up time of every search).
        from beleg.ingest.injection_version import DETECTOR_VERSION

        if self.catalog.get_meta("injection_detector") == DETECTOR_VERSION:
            return
        if self.catalog.read_only:
            # Withholding does not depend on the stored flags (see the IndexBusyError case below).
            self.catalog.note(f"the stored injection flags were not re-read with detector {DETECTOR_VERSION}; "
                              "answers still withhold what the current detector finds in each retrieved chunk")
            return
        from beleg.ingest.injection import chunk_flags_many
        from beleg.progress import Progress

        done = refreshed_count(self.catalog.get_meta(REFRESH_MARK), DETECTOR_VERSION)
        total = self.catalog.counts()["chunks"]
        # A new or empty index has nothing to re-read: no progress for it (not even a "0/0" line).
        quiet = "none" if total <= done else None
        try:
            with Progress(total, desc=f"injection detector {DETECTOR_VERSION}: re-reading stored chunks",
                          unit="chunk", progress=quiet) as shown:
                shown.advance(min(done, total))
                while batch := list(self.catalog.chunk_texts(done, REFRESH_BATCH)):
                    flags = chunk_flags_many([text for _, text, _ in batch])
                    changed = {row: f for (row, _, stored), f in zip(batch, flags, strict=True)
                               if list(f) != json.loads(stored)}
                    done += len(batch)
                    with self.catalog.transaction():
                        self.catalog.set_chunk_flags(changed)
                        self.catalog.set_meta(REFRESH_MARK, f"{DETECTOR_VERSION} {done}")
                    shown.advance(len(batch))
                with self.catalog.transaction():
                    self.catalog.set_meta("injection_detector", DETECTOR_VERSION)
        except versions.IndexBusyError as exc:
            # A reindex is building and writes wait for it: the open goes on with the older
            # detector's flags, and the next open refreshes them. Withholding does not wait:
            # quarantine reads each retrieved chunk's text with the current detector (a stale
            # flag only withholds more), so searches and answers stay as safe meanwhile.
            log.warning("injection flags not refreshed for detector %s while a reindex builds (%s); "
                        "the next open refreshes them", DETECTOR_VERSION, exc)

    @property
    def notes(self) -> list[str]:
        """One line for each write skipped because the index is read-only to this process
        (:meth:`beleg.index.catalog.Catalog.note`); PostgreSQL has none."""
        return list(self.catalog.notes)

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self.catalog.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder:
        """The index's embedder, loaded on first use (BM25-only work never loads a model).

        The first use records the model's fingerprint in the index; a later use with other
        weights is refused, since vectors from two models are not comparable.
        """
        if self._embedder is None:
            self._embedder = load_embedder(self.config.embedder)
        if not self._embedder_checked:
            recorded = self.catalog.get_meta("embedder_fingerprint")
            if recorded is None and self.catalog.read_only:
                self.catalog.note(f"the embedder's fingerprint ({self._embedder.fingerprint}) is not recorded, "
                                  "so nothing checks later that vectors come from the same model")
            elif recorded is None:
                with self.catalog.transaction():
                    self.catalog.set_meta("embedder_fingerprint", self._embedder.fingerprint)
            elif recorded != self._embedder.fingerprint:
                raise IndexVersionError(
                    f"index {self.path} holds vectors from {recorded!r} but the embedder is "
                    f"{self._embedder.fingerprint!r}; reinstall the matching version or re-ingest into a new index"
                )
            self._embedder_checked = True
        return self._embedder

    @property
    def sentence_vectors(self) -> Any:
        """Sentence vectors for answering: in memory, then stored in the catalog (an index
        folder; PostgreSQL keeps them in memory only), see :mod:`beleg.answer.sentence_vectors`."""
        if self._sentence_vectors is None:
            from beleg.answer.sentence_vectors import SentenceVectors

            catalog = self.catalog if isinstance(self.catalog, Catalog) else None
            self._sentence_vectors = SentenceVectors(catalog, lambda: self.embedder.fingerprint)
        return self._sentence_vectors

    def search_index(self) -> EmbeddedSearchIndex:
        """The search view (:class:`beleg.index.ports.SearchIndex`) of the latest commit,
        taken anew when the catalog changed."""
        if self._embedder is not None and self._embedder.dim:
            self.store.dim = self._embedder.dim
        return self.store.read_view()

    def snapshot(self) -> Any:
        """The embedded backend's in-memory arrays behind :meth:`search_index` (for warming
        it up; search, strategies and answering use :meth:`search_index`)."""
        return self.search_index().snapshot

    # ------------------------------------------------------------------ ingest
    def ingest(self, paths: str | Path | Sequence[str | Path], *, rules: Sequence[MetadataRule] = (),
               metadata: dict[str, Any] | None = None, encoding: str | None = None,
               max_file_mb: float | None = None, progress: bool | str | None = None,
               sync: bool = False, allow_delete_all: bool = False, allow_widen: bool = False,
               follow_symlinks: bool = False,
               statuses: dict[str, str] | None = None, sentence_vectors: bool = False,
               reuse_vectors: bool = True, stop: threading.Event | None = None) -> IngestReport:
        """Ingest files, folders and globs. Returns a per-file report; bad files are reported, not raised.

        Args:
            paths: Files, folders (recursive) or glob patterns.
            rules: Metadata rules (glob → metadata) for files without front matter.
            metadata: Metadata for every file in this run (lowest-precedence rule).
            encoding: Text encoding of txt/md files when not UTF-8.
            max_file_mb: Files larger than this are rejected with a clear reason (None: 50 MB,
                ``beleg.ingest.pipeline.DEFAULT_MAX_FILE_MB``).
            progress: ``auto`` (None: a bar on a terminal, lines every few seconds otherwise),
                ``bar``, ``lines`` or ``none`` (False); see :mod:`beleg.progress`.
            sync: Afterwards delete documents ingested from these paths whose files are gone
                or empty now. A path all of whose earlier documents would go (a share not
                mounted, a folder moved away) keeps them and is reported ``failed``.
            allow_delete_all: With ``sync``, delete them even then (the files were removed on purpose).
            allow_widen: Accept re-ingests that let more principals read a document (tenant or
                ACL removed, changed or extended); without it such a file fails and keeps its access.
            follow_symlinks: Ingest files in a folder or glob that are symlinks to outside it
                (otherwise they are reported ``skipped``).
            statuses: Written status → ``current``/``historical``/``draft``
                (see :func:`beleg.ingest.metadata.status_vocabulary`; None: the defaults).
            sentence_vectors: Also embed every sentence the offline answerer may score and store
                it with the document (about twice the embedding time; without it the first
                answer that needs a sentence embeds and stores it), see beleg.answer.sentence_vectors.
            reuse_vectors: Take the stored vector (and LLM chunk context) of a text the index
                holds already, in any document, instead of computing it. False for an ingest
                on behalf of someone who may not read every document (an HTTP upload): reuse
                made such an ingest measurably faster exactly when its text was stored, which
                confirms a guessed passage of a document it may not read. The cost: every
                changed document is embedded whole (unchanged files still embed nothing).
            stop: Set it (from a signal handler, another thread) to end the run early: it takes
                no new file, commits the batch being embedded and raises
                :class:`beleg.ingest.pipeline.IngestInterrupted` (a KeyboardInterrupt); running
                it again resumes. The CLI sets it on Ctrl-C and SIGTERM.
        """
        if isinstance(paths, (str, Path)):
            paths = [paths]
        all_rules = ([MetadataRule("*", normalize(metadata))] if metadata else []) + list(rules)
        self._refuse_while_building()  # at once, not file by file
        self.finish_erasure()  # before this ingest can write a document the erasure would then remove
        from beleg.ingest.pipeline import DEFAULT_MAX_FILE_MB

        max_file_mb = DEFAULT_MAX_FILE_MB if max_file_mb is None else max_file_mb
        ingestor = self._ingestor(rules=all_rules, encoding=encoding, max_file_mb=max_file_mb, progress=progress,
                                  allow_widen=allow_widen, follow_symlinks=follow_symlinks, statuses=statuses,
                                  claims=self._ingest_claims(), reuse_vectors=reuse_vectors, stop=stop,
                                  **self._sentence_option(sentence_vectors))
        report = ingestor.run([str(p) for p in paths], sync=sync, allow_delete_all=allow_delete_all)
        if sync:  # an erasure covers every version, as kb.delete does
            self._erase_elsewhere([f.doc_id for f in report.files if f.status == "deleted" and f.doc_id])
        self._flush_replaced_text()
        return report

    def _refuse_while_building(self) -> None:
        """Raise IndexBusyError while a reindex holds the root's write lock, and
        VersionNotLiveError when this object opened the live version and a switch has made
        another live since (the PostgreSQL backend, which has no index folder, overrides it).
        A holder of the write lock (a delete, which reaches every version) is not refused."""
        versions.refuse_while_building(self.root, self._lock_token)
        if self.opened_live and self._lock_token is None:
            versions.refuse_if_not_live(self.root, self.path)

    def _flush_replaced_text(self) -> None:
        """Text an update replaced (a name edited out of a file) leaves the write-ahead log too,
        and the persisted search view is brought up to the last commit (without the replaced
        chunks), so the next search process opens it instead of rebuilding it."""
        if self.catalog.pending_erasure:
            self.catalog.checkpoint()
        persisted_view.refresh(self.catalog, self.path)

    def ingest_texts(self, items: Sequence[TextSource], *, progress: bool | str | None = None,
                     allow_widen: bool = False, sentence_vectors: bool = False,
                     stop: threading.Event | None = None) -> IngestReport:
        """Ingest documents given as text (``TextSource(source, text, metadata, title, doc_id)``);
        ``stop`` as for :meth:`ingest`."""
        self._refuse_while_building()
        self.finish_erasure()
        report = self._ingestor(progress=progress, allow_widen=allow_widen, claims=self._ingest_claims(), stop=stop,
                                **self._sentence_option(sentence_vectors)).run_texts(list(items))
        self._flush_replaced_text()
        return report

    def _ingest_claims(self) -> IngestClaims | None:
        """Per-source claims in the index folder, so that several ingest processes share one
        corpus without embedding a file twice (beleg.ingest.claims). The PostgreSQL backend,
        whose path is a URL, keeps them in a table (it overrides this)."""
        return Claims(self.path / "claims") if isinstance(self.path, Path) else None

    def _sentence_option(self, on: bool) -> dict[str, Any]:
        """The Ingestor option that embeds sentence vectors at ingest (only an index folder stores them)."""
        if not on:
            return {}
        if not isinstance(self.catalog, Catalog):
            raise ConfigError("sentence vectors at ingest need an index folder; over PostgreSQL the answerer "
                              "computes them at the first answer that needs them (drop --sentence-vectors)")
        return {"sentence_fingerprint": lambda: self.embedder.fingerprint}

    def _ingestor(self, **options: Any) -> Ingestor:
        from beleg.ingest.contextual import LLMContexts
        from beleg.ingest.pipeline import Ingestor

        # The embedder is looked up per call, so an ingest of unchanged files never loads it.
        contextualize = self._contextualizer()
        if not options.get("reuse_vectors", True) and isinstance(contextualize, LLMContexts):
            contextualize.reuse_cached = False  # a cached context would time like a cached vector
        return Ingestor(self.catalog, self.config.chunking, lambda texts: self.embedder.embed_documents(texts),
                        contextualize=contextualize, **options)

    def _contextualizer(self) -> Any:
        """The chunk-context writer the index configuration asks for (contextual retrieval)."""
        mode = self.config.chunking.context
        if mode == "none":
            return None
        from beleg.ingest import contextual

        if mode == "offline":
            return contextual.offline_contexts
        from beleg.backends.llms import load_llm, resolve_llm_config

        # The model is part of the index version; endpoint and key come from env/config.
        config = resolve_llm_config({"spec": mode.removeprefix("llm:")})
        assert config is not None
        return contextual.LLMContexts(load_llm(config), self.catalog.cached_contexts, self.catalog.put_contexts)

    # ------------------------------------------------------------------ versions
    def reindex(self, config: IndexConfig, *, progress: bool | str | None = None,
                embedder: Embedder | None = None, stop: threading.Event | None = None) -> dict[str, Any]:
        """Build ``config`` as a new version beside this one from the stored documents (blue/green).

        Nothing changes for readers until :func:`beleg.index.versions.switch`. With the same
        embedder, vectors of unchanged chunk texts are copied instead of recomputed. An
        interrupted reindex resumes where it stopped when run again; ``stop`` ends it early
        as it ends an :meth:`ingest`.
        """
        version = config.index_version
        if version == self.config.index_version:
            raise ConfigError(f"version {version} is this index's live configuration already; nothing to build")
        # Document writes are refused while the lock is held, so the new version cannot miss
        # an ingest or a deletion made during the build (see docs/index-lifecycle.md).
        with versions.write_lock(self.root, "reindex", version) as token:
            self._lock_token = token
            try:
                self._wait_for_writers()
                self._finish_erasure_locked()
                return self._build_version(config, progress=progress, embedder=embedder, stop=stop)
            finally:
                self._lock_token = None

    def _wait_for_writers(self) -> None:
        """Return once no write transaction that began before the lock is still open: a writer
        checks the lock inside its transaction, so every later one refuses."""
        self.catalog.db.execute("BEGIN IMMEDIATE")
        self.catalog.db.execute("ROLLBACK")

    def _build_version(self, config: IndexConfig, *, progress: bool | str | None,
                       embedder: Embedder | None, stop: threading.Event | None = None) -> dict[str, Any]:
        version = config.index_version
        folder = versions.new_version_dir(self.root, version)
        same_model = config.embedder == self.config.embedder
        target = KnowledgeBase(folder, config, embedder=embedder or (self._embedder if same_model else None))
        try:
            # Unfinished until the last document is written (a resumed build too: it catches up),
            # so an interrupted build is never taken for a complete version (versions.switch).
            with target.catalog.transaction():
                target.catalog.set_meta(versions.BUILD_STATE_KEY, versions.BUILD_UNFINISHED)
            if same_model:
                target.catalog.copy_vectors_from(self.catalog)
            items = [(doc, headings or _reread_headings(doc)) for doc, headings in self.catalog.documents_with_headings()]
            ingestor = target._ingestor(progress=progress, stop=stop)
            ingestor.progress_label = "reindex"
            report = ingestor.run_documents(items)
            # Stored documents carry no file: where each was read from comes from the live version,
            # or the new one could no longer tell its files from others (beleg.ingest.pipeline._whose).
            target.catalog.copy_locations_from(self.catalog)
            # A resumed build catches up: documents gone from the live version go from it too.
            gone = {d for d, _, _ in target.catalog.documents_meta()} - {doc.doc_id for doc, _ in items}
            with target.catalog.transaction():
                for doc_id in sorted(gone):
                    target.catalog.delete_document(doc_id)
                pruned = target.catalog.drop_unused_vectors()
                target.catalog.set_meta(versions.BUILD_STATE_KEY, versions.BUILD_FINISHED)
            status = target.status()
        finally:
            target.close()
        return {"version": version, "path": str(folder), "live": self.config.index_version,
                "documents": status["documents"], "chunks": status["chunks"], "embedded": report.embedded,
                "copied_vectors_unused": pruned, "failed": report.to_json()["failures"]}

    # ------------------------------------------------------------------ deletion
    def delete(self, doc_ids: Sequence[str] = (), *, where: FilterLike = None) -> dict[str, Any]:
        """Erase documents by id and/or by a metadata filter from every version of the index,
        leaving nothing of them behind.

        In each version (live or not, see :mod:`beleg.index.versions`), chunks, BM25
        postings, vectors no other chunk shares and vocabulary terms no other document uses
        are deleted in one transaction by the version's store (:meth:`beleg.index.ports.Store.erase`;
        the embedded one has SQLite overwrite the freed pages and truncates the write-ahead
        log), so the text is gone from every file of the index directory. A document the filter matches in any version is erased
        from all of them, so switching to an older version cannot bring it back. Refused while
        a reindex is building (:class:`beleg.index.versions.IndexBusyError`). In-memory caches
        are keyed by the index generation and drop the erased content on the next call.
        Returns what was erased, the same for every backend: ``documents``, ``chunks``,
        ``vectors``, ``terms`` (summed over versions), ``deleted``/``not_found`` ids,
        ``versions`` (each version's counts) and ``complete``: False if a version could not
        yet remove every trace (embedded: a concurrent reader kept old pages in the
        write-ahead log; rerun ``beleg delete`` or ``beleg gc`` when it has finished).

        The ids are recorded in the index root before the first version is touched and the
        record is removed when every version is done, so a delete killed between versions
        leaves an unfinished erasure that :meth:`finish_erasure` (run by the next delete,
        ingest or reindex) completes and that ``switch`` refuses to pass; ``resumed`` lists
        the ids of such an erasure this call finished.
        """
        expr = combine(where)
        if not doc_ids and expr is None:
            raise ConfigError("name documents to delete: doc ids, or a filter (--where)")
        return self._delete(doc_ids, expr)

    def finish_erasure(self) -> dict[str, Any] | None:
        """Complete an erasure that was interrupted before it reached every version (what
        :meth:`delete` returns), or None when there is none."""
        if self._pending_erasure() is None:
            return None
        return self._delete((), None)

    def _delete(self, doc_ids: Sequence[str], expr: Any) -> dict[str, Any]:
        with versions.write_lock(self.root, "delete") as token:
            self._lock_token = token
            try:
                return self._erase_locked(doc_ids, expr)
            finally:
                self._lock_token = None

    def _erase_locked(self, doc_ids: Sequence[str], expr: Any) -> dict[str, Any]:
        """:meth:`_erase` over every version, the root's write lock held by the caller."""
        try:
            with self._version_stores() as stores:
                return self._erase(stores, doc_ids, expr)
        finally:
            self.store.forget_view()

    def _finish_erasure_locked(self) -> None:
        """Before a reindex copies the live documents: else the new version would copy erased ones."""
        if self._pending_erasure() is not None:
            self._erase_locked((), None)

    def _pending_erasure(self) -> dict[str, Any] | None:
        """The erasure recorded in the index root and not finished (``doc_ids``, ``since``), or None."""
        return versions.pending_erasure(self.root)

    def _record_erasure(self, doc_ids: list[str], since: str | None) -> None:
        versions.record_erasure(self.root, doc_ids, since)

    def _clear_erasure(self) -> None:
        versions.clear_erasure(self.root)

    @contextmanager
    def _version_stores(self) -> Iterator[list[tuple[versions.VersionInfo | None, EmbeddedStore]]]:
        """The store of every version under the root, the live one first (this object's own
        store for its version): an erasure reaches what readers see before the others."""
        own = self.path.resolve()
        out: list[tuple[versions.VersionInfo | None, EmbeddedStore]] = []
        opened: list[EmbeddedStore] = []
        try:
            for info in versions.list_versions(self.root):
                if info.path.resolve() == own:
                    out.append((info, self.store))
                elif (info.path / CATALOG_FILE).exists():
                    opened.append(EmbeddedStore(Catalog(info.path / CATALOG_FILE)))
                    out.append((info, opened[-1]))
            if not any(store is self.store for _, store in out):
                out.insert(0, (None, self.store))  # a version folder opened as an index of its own
            yield out
        finally:
            for store in opened:
                store.close()

    def _erase(self, stores: Sequence[tuple[versions.VersionInfo | None, EmbeddedStore]], doc_ids: Sequence[str],
               expr: Any) -> dict[str, Any]:
        from beleg.index.filters import matches

        pending = self._pending_erasure()
        resumed = set(pending["doc_ids"]) if pending else set()
        targets, known, matched = set(doc_ids) | resumed, set(), set()
        for _, store in stores:
            for record in store.document_records():
                known.add(record.doc_id)
                if expr is not None and matches(expr, record.metadata):
                    matched.add(record.doc_id)
        targets |= matched
        totals = {"documents": 0, "chunks": 0, "vectors": 0, "terms": 0}
        per_version, complete = [], True
        deleted = sorted(targets & known)
        if deleted:  # before the first version is touched: see delete()
            self._record_erasure(deleted, pending["since"] if pending else None)
        for info, store in stores:
            summary = store.erase(deleted)
            for key in ("chunks", "vectors", "terms"):
                totals[key] += getattr(summary, key)
            complete = complete and summary.complete
            per_version.append({"version": info.version if info else self.config.index_version,
                                "live": info.live if info else True, **summary.to_json()})
        if pending or deleted:
            self._clear_erasure()
        totals["documents"] = len(deleted)
        return {**totals, "deleted": deleted, "not_found": sorted(set(doc_ids) - known),
                "matched": len(matched) if expr is not None else None, "resumed": sorted(resumed & known),
                "complete": complete, "versions": per_version}

    def _erase_elsewhere(self, doc_ids: Sequence[str]) -> None:
        """Erase documents this version no longer has (``ingest --sync``) from the other versions too."""
        if doc_ids:
            self.delete(doc_ids)

    # ------------------------------------------------------------------ search
    def search(self, query: str, *, mode: str = "hybrid", k: int = 10, filters: FilterLike = None,
               where: str | None = None, fusion: str = "rrf", rrf_k: int = 60,
               weights: tuple[float, float] = (1.0, 1.0), mmr_lambda: float | None = None,
               candidates: int | None = None, reranker: Reranker | None = None,
               rerank_top: int | None = None, coverage_power: float | None = 2.0,
               principal: Principal | None = None, self_query: bool | str | Inferred = True,
               techniques: Techniques | None = None) -> list[Hit]:
        """Search the index.

        Args:
            query: The question or keywords.
            mode: ``dense``, ``bm25`` or ``hybrid`` (both legs fused).
            k: Number of hits.
            filters: A dict (``{"status": "current", "version": {">=": "2.4"}}``) or expression.
            where: A filter expression string (``"version >= 2.4 and status = current"``);
                ANDed with ``filters``.
            fusion: ``rrf`` (reciprocal rank fusion, k=``rrf_k``) or ``weighted`` (min-max
                normalised scores, ``weights`` = (bm25, dense)).
            mmr_lambda: Diversify the final list with MMR (None: off).
            candidates: Depth of each leg before fusion.
            reranker: Re-score the top ``rerank_top`` fused candidates with this model
                (see :func:`beleg.backends.rerankers.load_reranker`).
            coverage_power: Hybrid only: scale the BM25 weight by the share of query terms the
                index knows, to this power (None: fixed weights); see
                :func:`beleg.retrieve.retriever.bm25_weight`.
            principal: Who is asking; hits are limited to documents they may read.
                None means anonymous: public documents only.
            self_query: Apply the constraints the query states in words (product, status,
                language and date range as filters, the version as a boost; see
                :mod:`beleg.query.self_query`); False: search the words only; an
                :class:`~beleg.query.self_query.Inferred` (from :meth:`infer_constraints`,
                which takes an LLM) is applied as given; "rules"/"off" as True/False.
                ``filters``/``where`` on a key win over an inferred one.
            techniques: Ensemble, reranking depth, neighbours, compression
                (:class:`~beleg.retrieve.techniques.Techniques`; None: ``self.techniques``).
                A ``parent-child`` index always returns parents.
        """
        if not query or not query.strip():
            raise ConfigError("the query is empty; pass the words to search for")
        used = techniques if techniques is not None else self.techniques
        reranker = reranker if reranker is not None else used.reranker
        rerank_top = rerank_top if rerank_top is not None else used.candidates
        if rerank_top is not None and candidates is None and rerank_top > max(4 * k, 50):
            candidates = rerank_top  # the legs must reach as deep as the reranker reads
        search = searcher_for(used)
        final_k, k = k, search_k(self, k)
        options = SearchOptions(mode=mode, k=k, fusion=fusion, rrf_k=rrf_k, weights=weights,  # type: ignore[arg-type]
                                mmr_lambda=mmr_lambda, candidates=candidates, rerank_top=rerank_top,
                                coverage_power=coverage_power)
        expr = combine(filters, where)
        vectors: dict[str, np.ndarray] = {}

        def embed(text: str) -> np.ndarray:  # embedded once even when the search is repeated
            if text not in vectors:
                vectors[text] = self._embed_query(text)
            return vectors[text]

        def run(narrowed: Any) -> list[Hit]:  # one permission-checked search
            try:
                return search(self.search_index(), query, options, embed, narrowed, reranker,
                              principal or ANONYMOUS, strict=True)
            except StaleSnapshot:
                # A commit replaced some of the chunks found: search the new state once more rather
                # than return fewer hits (a second race just drops the vanished chunks).
                return search(self.search_index(), query, options, embed, narrowed, reranker,
                              principal or ANONYMOUS)

        if self_query is False or self_query == "off":
            hits = run(expr)
        else:
            # Imported here: ~0.07 s at start-up that a search with self_query=False never needs.
            from beleg.query.self_query import Inferred, apply_constraints, self_query_mode

            if not isinstance(self_query, Inferred):
                self_query_mode(self_query, has_llm=False)  # "llm" needs infer_constraints(llm=...) first
            inferred = self_query if isinstance(self_query, Inferred) else self.infer_constraints(query, principal)
            hits = apply_constraints(run, expr, inferred, options.k)
        return finish(self, query, hits, final_k, used, principal or ANONYMOUS)

    def infer_constraints(self, question: str, principal: Principal | None = None, *, filters: FilterLike = None,
                          where: str | None = None, context: Conversation = (), llm: Any = None) -> Inferred:
        """The constraints ``question`` states (self-query), from values ``principal`` may see.

        ``context`` holds the conversation's earlier questions, or their judgement for this
        question (:func:`beleg.query.conversation.judged`) when the caller made it already.

        Constraints on keys that ``filters``/``where`` name are marked overridden. Pass the
        result to :meth:`search` (``self_query=``) to apply it; its ``to_json()`` is the trace.
        With ``llm``, the model proposes constraints too, offered and accepted only among
        the values ``principal`` may see, the rules winning where they decided
        (:mod:`beleg.query.self_query_llm`).
        """
        from beleg.query.conversation import judged
        from beleg.query.self_query import infer_constraints

        # The model, too, sees earlier questions only for a follow-up (as the rules do).
        conversation = judged(question, context)
        context = conversation.context
        inferred = infer_constraints(question, lambda key: self.metadata_values(key, principal),
                                     context=conversation)
        if llm is not None:
            from beleg.query.self_query_llm import infer_with_llm

            who = principal or ANONYMOUS
            inferred = infer_with_llm(question, inferred,
                                      lambda: (d.metadata for d in self.search_index().documents(who)), llm,
                                      context=context)
        return inferred.overridden_by(combine(filters, where))

    def ask(self, question: str, *, principal: Principal | None = None, filters: FilterLike = None,
            where: str | None = None, context: Sequence[str] = (), llm: Any = None, options: Any = None,
            on_token: Any = None) -> Any:
        """Answer a question with verified citations (see :func:`beleg.answer.answer_question`).

        Without ``llm`` the answer is extractive: the governing source's best sentence,
        quoted with exact offsets, or a refusal. ``context`` holds earlier questions of
        a conversation (oldest first) for resolving follow-ups.
        """
        from beleg.answer.answerer import answer_question

        if not question or not question.strip():
            raise ConfigError("the question is empty")
        return answer_question(self, question, principal=principal, filters=filters, where=where, context=context,
                               llm=llm, options=options, on_token=on_token)

    def answer_json(self, answer: Any) -> dict[str, Any]:
        """``answer.to_json()`` with where each citation and source lies in its file: the ``ask
        --json`` and HTTP object. ``to_json()`` alone counts ``start``/``end`` in the document
        text after front matter (``"offsets": "document-text"``); this adds ``file_start``/
        ``file_end`` and ``line_start``/``line_end`` (:func:`beleg.types.file_position`)."""
        from beleg.types import add_file_positions

        out: dict[str, Any] = answer.to_json()
        add_file_positions(out["citations"] + out["sources"], self.catalog.document)
        return out

    def _embed_query(self, query: str) -> np.ndarray:
        return self.embedder.embed_queries([query])[0]

    # ------------------------------------------------------------------ inspection
    def document(self, doc_id: str, principal: Principal | None = None) -> Document | None:
        """A stored document by id, or None when it does not exist or ``principal`` may not read it."""
        doc = self.catalog.document(doc_id)
        if doc is None or not (principal or ANONYMOUS).may_read(doc.metadata):
            return None
        return doc

    def metadata_values(self, key: str, principal: Principal | None = None) -> set[str]:
        """Distinct values of a metadata key (``product``, ``version``) among the documents
        ``principal`` may read: what a question can be about, never what is hidden from it."""
        return self.search_index().metadata_values(key, principal or ANONYMOUS)

    def metadata_keys(self, principal: Principal | None = None) -> set[str]:
        """The metadata keys of every document, or with ``principal`` of those it may read;
        internal keys (``_`` first) left out."""
        return {key for _, _, meta in self.catalog.documents_meta()
                if principal is None or principal.may_read(meta) for key in meta if not key.startswith("_")}

    def chunk(self, chunk_id: str, principal: Principal | None = None) -> Chunk | None:
        """A stored chunk by id, or None when it does not exist or ``principal`` may not read its document.

        "Not found" and "not yours" look the same, so an id cannot be probed for existence.
        """
        view = self.search_index()
        record = view.chunks([chunk_id]).get(chunk_id)
        if record is None or not view.documents(principal or ANONYMOUS, [record.doc_id]):
            return None
        return record.to_chunk()

    def _documents_by_facet(self, principal: Principal | None = None) -> dict[str, dict[str, int]]:
        """How many documents have each language, status, version and authority ("-": none),
        counting every document, or with ``principal`` only those it may read."""
        by: dict[str, dict[str, int]] = {}
        for _, _, meta in self.catalog.documents_meta():
            if principal is not None and not principal.may_read(meta):
                continue
            for key in ("language", "status", "version", "authority"):
                value = str(meta.get(key, "-"))
                by.setdefault(key, {})[value] = by.setdefault(key, {}).get(value, 0) + 1
        return by

    def readable_status(self, principal: Principal) -> dict[str, Any]:
        """What :meth:`status` says that concerns only what ``principal`` may read: how many
        documents, and how many by facet (index-wide counts, paths and the generation would
        tell a reader about documents it may not read)."""
        by = self._documents_by_facet(principal)
        return {"index_version": self.config.index_version,
                "documents": sum(by.get("language", {}).values()),  # each document once per facet
                "documents_by": {k: dict(sorted(v.items())) for k, v in by.items()}}

    def status(self) -> dict[str, Any]:
        counts = self.catalog.counts()
        by = self._documents_by_facet()
        return {
            "index": str(self.root),
            "version_path": str(self.path),
            "versions": versions.summaries(self.root),
            "erasure_pending": self._pending_erasure(),
            "index_version": self.config.index_version,
            "config": self.config.versioned(),
            "embedder_fingerprint": self.catalog.get_meta("embedder_fingerprint"),
            "generation": self.catalog.generation,
            **counts,
            "documents_by": {k: dict(sorted(v.items())) for k, v in by.items()},
            "dense_scan": _dense_scan_status(),
        }


def _dense_scan_status() -> dict[str, Any]:
    """How the embedded dense search reads vectors on this machine (the kernel is chosen per CPU)."""
    from beleg.index import int8_pass, snapshot

    return {"int8_kernel": int8_pass.describe(), "int8_from_chunks": snapshot.COMPACT_FROM,
            "threads": snapshot.SCAN_THREADS, "threads_from_chunks": snapshot.PARALLEL_FROM}


def _reread_headings(doc: Document) -> tuple[Any, ...]:
    """Headings of a document stored before headings were kept: re-read its file if unchanged."""
    from beleg.ingest.readers import reader_for

    path = Path(doc.source)
    try:
        parsed = reader_for(path).read(path.read_bytes(), path, None)
    except (OSError, BelegError):
        return ()
    return tuple(parsed.headings) if parsed.text == doc.text else ()


def open(path: str | Path | None = None, config: IndexConfig | None = None, *, create: bool = True,  # noqa: A001
         embedder: Embedder | None = None, version: str | None = None) -> KnowledgeBase:
    """Open (or create) the index at ``path`` (default: ``$BELEG_INDEX`` or ``./.beleg``).

    ``version`` opens a version other than the live one (see :mod:`beleg.index.versions`)."""
    return KnowledgeBase(path if path is not None else default_index_dir(), config, create=create, embedder=embedder,
                         version=version)
