"""Ingest files into a catalog: read → metadata → chunk → embed → commit, file by file.

Every file ends in exactly one state: ``added``, ``updated``, ``unchanged``, ``skipped``
(left out on purpose, with the reason: an intentionally empty file, a symlink out of the
folder) or ``failed`` (with the reason). Any exception while reading, parsing, chunking,
flagging or analysing one file, expected or not, becomes that file's ``failed`` entry; it
never stops the run and never touches what is already indexed. Everything that can fail
for one document happens in its own stage; the batch commit only embeds and writes.
Chunks of several documents are embedded together (the model is much faster per text in
batches), and each batch of documents is committed in one transaction, so a crash loses
at most the batch in flight and the index stays readable.

A re-ingest that would let more principals read a document (its tenant or ACL removed,
changed or widened) is refused for that file unless ``allow_widen``; a document id that
another file still present in the index holds, or that an earlier file of the same run
took, fails the later file. Files are told apart by their resolved location, recorded with
each document, never by the path as typed (``corpus/a.md`` and ``./corpus/a.md`` are one
file; ``corpus/a.md`` from two working directories are two).
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from beleg.errors import BelegError, IngestError, NoContent
from beleg.index.analyzer import analyze
from beleg.index.catalog import Catalog
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.ingest.claims import DEFAULT_STALE_AFTER_S, IngestClaims, await_vectors
from beleg.ingest.discover import Candidate, discover, glob_match, glob_root, printable
from beleg.ingest.identity import not_moved_here, same_place_below_root
from beleg.ingest.injection import chunk_flags_many
from beleg.ingest.metadata import MetadataRule, resolve, widening
from beleg.ingest.readers import reader_for, supported_suffixes
from beleg.ingest.readers.base import needs_encoding, normalize_newlines, text_codec
from beleg.progress import Progress, ProgressArg
from beleg.types import (
    ENCODING_KEY,
    Chunk,
    Document,
    Heading,
    ParsedDocument,
    stored_file_position,
    with_file_position,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_MAX_FILE_MB = 50.0
#: Embed once this many chunks are waiting (a few model batches).
_FLUSH_CHUNKS = 128
#: How often a file claimed by another ingest process is looked at again.
_CLAIM_POLL_S = 0.1


class IngestInterrupted(KeyboardInterrupt):
    """A stop was requested (``Ingestor.stop``: the CLI sets it on Ctrl-C or SIGTERM): the
    batch being embedded was committed, the files read since were left unstored, and a run
    of the same ingest resumes. A KeyboardInterrupt, as the Ctrl-C it stands for."""


@dataclass(slots=True)
class FileResult:
    source: str
    status: str  # added | updated | unchanged | skipped | failed | deleted
    doc_id: str | None = None
    chunks: int = 0
    reason: str | None = None
    #: Chunks with instruction-like text (possible prompt injection), flagged for answers.
    flagged: int = 0
    #: Title ("title"), heading ("section") or metadata keys with instruction-like values:
    #: answers withhold them from every hit of the document (beleg.answer.quarantine).
    flagged_fields: list[str] = field(default_factory=list)
    #: How this ingest widened who may read the document (only with ``allow_widen``).
    widened: list[str] = field(default_factory=list)
    #: The id the document had before (an index from before ids were relative to the ingest root).
    previous_id: str | None = None
    #: Stored documents of this file left as they were because it was skipped or failed (their ids).
    kept: list[str] = field(default_factory=list)
    #: Where the document's file was before (it moved; the status says whether anything else changed).
    moved_from: str | None = None
    #: The encoding a file that is not UTF-8 was read with, and whether it came from this run's
    #: ``encoding`` ("option") or from the file's earlier ingest ("index").
    encoding: str | None = None
    encoding_from: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in (("source", self.source), ("status", self.status), ("doc_id", self.doc_id),
                                 ("chunks", self.chunks), ("reason", self.reason),
                                 ("previous_id", self.previous_id), ("moved_from", self.moved_from),
                                 ("encoding", self.encoding), ("encoding_from", self.encoding_from))
                                 if v is not None}
        if self.flagged:
            out["flagged"] = self.flagged
        if self.flagged_fields:
            out["flagged_fields"] = self.flagged_fields
        if self.widened:
            out["widened"] = self.widened
        if self.kept:
            out["kept"] = self.kept
        return out


@dataclass(slots=True)
class IngestReport:
    files: list[FileResult] = field(default_factory=list)
    embedded: int = 0
    deleted: int = 0
    #: Sentence vectors embedded for the answerer (``sentence_vectors=True``; beleg.answer.sentence_vectors).
    sentence_vectors: int = 0

    def count(self, status: str) -> int:
        return sum(f.status == status for f in self.files)

    @property
    def failures(self) -> list[FileResult]:
        return [f for f in self.files if f.status == "failed"]

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.count("added"),
            "updated": self.count("updated"),
            "unchanged": self.count("unchanged"),
            "deleted": self.deleted,
            "skipped": self.count("skipped"),
            "failed": self.count("failed"),
            "embedded": self.embedded,
            "sentence_vectors": self.sentence_vectors,
            "failures": [{"source": f.source, "reason": f.reason} for f in self.failures],
            "skips": [{"source": f.source, "reason": f.reason} for f in self.files if f.status == "skipped"],
            "widened": [{"source": f.source, "widened": f.widened} for f in self.files if f.widened],
            "flagged": [{"source": f.source, "chunks": f.flagged, **({"fields": f.flagged_fields}
                                                                     if f.flagged_fields else {})}
                        for f in self.files if f.flagged or f.flagged_fields],
            "files": [f.to_json() for f in self.files],
        }


def in_scope(source: str, paths: Sequence[str]) -> bool:
    """Whether a stored source lies under one of the ingest arguments (folder, file or glob).

    ``source`` is a document's recorded location (absolute, resolved) or, for a row from before
    locations were recorded, its source as typed. A glob is matched the way discovery expands
    it: ``*`` and ``?`` stay within one folder, ``**`` spans folders. An absolute location is
    matched only against the pattern with its folder resolved: ``*.md`` typed in one corpus
    must not take in ``corpus/a.md`` of another (``fnmatch``'s ``*`` also matches ``/``)."""
    for arg in paths:
        arg = str(arg)
        if any(ch in arg for ch in "*?["):
            if os.path.isabs(source):
                folder = glob_root(arg)
                pattern = os.path.join(os.path.realpath(folder), os.path.relpath(arg, folder))
                if glob_match(source, pattern):
                    return True
            elif glob_match(source, arg):
                return True
            continue
        # realpath, not Path.resolve: it never raises on a symlink loop.
        root, here = Path(os.path.realpath(arg)), Path(os.path.realpath(source))
        if here == root or here.is_relative_to(root):
            return True
    return False


def index_text(title: str, chunk: Chunk, context: str = "") -> str:
    """What both retrieval legs see of a chunk: its situating context (contextual
    retrieval, when configured), its heading path, then its text."""
    path = " > ".join(chunk.heading_path) if chunk.heading_path else title
    return f"{context}\n{path}\n{chunk.text}" if context else f"{path}\n{chunk.text}"


@dataclass(frozen=True, slots=True)
class TextSource:
    """A document given as text rather than a file (datasets, other systems' exports)."""

    source: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    title: str | None = None
    doc_id: str | None = None


@dataclass(slots=True)
class _Pending:
    """A document ready to commit: everything per document is computed already."""

    doc: Document
    chunks: list[Chunk]
    result: FileResult
    headings: tuple[Heading, ...]
    #: What each retrieval leg sees of each chunk, its hash (the vector key) and its BM25 terms.
    texts: list[str]
    hashes: list[str]
    terms: list[list[str]]
    #: A stored document this one takes over (same file, id from before ids were relative).
    replaces: str | None = None
    #: Sentence vector key → passage, for the answerer (empty unless sentence vectors are on).
    sentences: dict[str, str] = field(default_factory=dict)
    #: The resolved absolute path of the file read (None for texts and stored documents).
    location: str | None = None


@dataclass(slots=True)
class _Batch:
    """Documents whose new chunk texts are being embedded; committed once the vectors are in."""

    pending: list[_Pending]
    hashes: list[str]
    cached: dict[str, np.ndarray]
    #: The hashes of the texts to embed, in the order they were handed to the model.
    todo: list[str]
    future: Future[np.ndarray] | None = None
    fresh: dict[str, np.ndarray] | None = None
    #: Texts another ingest worker claimed: their vectors are waited for, not embedded (beleg.ingest.claims).
    awaited: list[str] = field(default_factory=list)
    #: Sentence vectors already stored (a replaced document's unchanged sentences), put back after the upsert.
    stored_sentences: dict[str, np.ndarray] = field(default_factory=dict)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def legacy_id(path: Path) -> str:
    """The id documents had before ids derived from the path below the ingest root."""
    return hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]


#: A stored document's ``(content_hash, metadata, source)`` (:meth:`Catalog.document_state`).
_StoredState = tuple[str, dict[str, Any], str]


def _whose(stored_source: str, location: str | None, path: Path) -> str:
    """Whether a stored document is the file at ``path``: ``"this"``, ``"other"`` (another
    file, still there), ``"gone"`` (nothing is at its recorded absolute location any more:
    the file was moved or deleted) or ``"unknown"``.

    The recorded location is checked, never ``stored_source`` resolved against the current
    directory: a relative source names another file from another working directory. A row
    from before locations were recorded, with a relative source, can be confirmed as this
    file (from the directory it was ingested from) but never declared gone."""
    recorded = location or (stored_source if os.path.isabs(stored_source) else None)
    try:
        if recorded is None:
            return "this" if os.path.lexists(stored_source) and os.path.samefile(stored_source, path) else "unknown"
        try:
            os.lstat(recorded)
        except (FileNotFoundError, NotADirectoryError):
            return "gone"
        return "this" if os.path.samefile(recorded, path) else "other"
    except (OSError, ValueError):
        return "unknown"  # cannot tell: do not let a file take over another's document


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


class Ingestor:
    """Runs one ingest over a catalog with a given chunking config and embedder."""

    def __init__(self, catalog: Catalog, chunking: ChunkingConfig, embed: Callable[[list[str]], np.ndarray],
                 *, rules: Sequence[MetadataRule] = (), encoding: str | None = None,
                 max_file_mb: float = DEFAULT_MAX_FILE_MB, progress: ProgressArg = None,
                 contextualize: Callable[[Document, Sequence[Chunk]], list[str]] | None = None,
                 statuses: dict[str, str] | None = None, allow_widen: bool = False,
                 follow_symlinks: bool = False, claims: IngestClaims | None = None,
                 sentence_fingerprint: Callable[[], str] | None = None, reuse_vectors: bool = True,
                 stop: threading.Event | None = None) -> None:
        self.catalog = catalog
        #: Once set, the run takes no new file: it commits the batch being embedded and raises
        #: IngestInterrupted (see :meth:`_stop_if_requested`).
        self.stop = stop
        #: Take the stored vector of a chunk text the index holds already (any document's) instead
        #: of embedding it; False for an ingest on behalf of someone who may not read the whole
        #: index (kb.ingest's reuse_vectors).
        self.reuse_vectors = reuse_vectors
        #: The embedder fingerprint, when each document's sentence vectors are embedded at ingest
        #: and committed with its chunks (None: the answerer embeds them lazily; see
        #: beleg.answer.sentence_vectors).
        self.sentence_fingerprint = sentence_fingerprint
        #: Per-source claims shared with other ingest processes on the same index (None: alone).
        self.claims = claims
        #: Written status → current/historical/draft (None: the defaults of beleg.ingest.metadata).
        self.statuses = statuses
        self.allow_widen = allow_widen
        self.follow_symlinks = follow_symlinks
        #: Contextual retrieval (beleg.ingest.contextual): a context per chunk, or None.
        self.contextualize = contextualize
        self.chunking = chunking
        self.embed = embed
        self.rules = list(rules)
        self.encoding = encoding
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        #: auto | bar | lines | none (or the older True/False/None), see beleg.progress.
        self.progress = progress
        self.progress_label = "ingest"
        self._shown = Progress(0, progress="none")
        self._pending: list[_Pending] = []
        #: The batch being embedded in the background while the next files are read and chunked.
        self._inflight: _Batch | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._embed_lock = threading.Lock()
        self._embedded_once = False
        self.report = IngestReport()
        #: Document ids taken in this run, with the source that took them first.
        self._claimed: dict[str, str] = {}
        #: What the file being handled is going through, for "internal error in <stage>".
        self._stage = "read"
        #: File name → ids of stored documents without, and with, a recorded location (read once, when first needed).
        self._names: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        #: doc_id → recorded location, as read with ``_names``.
        self._recorded_at: dict[str, str] = {}

    def run(self, paths: Sequence[str], *, sync: bool = False, allow_delete_all: bool = False) -> IngestReport:
        """Ingest files, folders and globs. With ``sync``, documents that were ingested from
        these folders/files/globs and whose file no longer exists, or is empty now, are deleted
        afterwards; unless ``allow_delete_all``, not when that would delete every document
        ingested from one of ``paths`` (an unmounted share, a moved folder), which is reported
        ``failed`` instead."""

        def handle(cand: Candidate, result: FileResult) -> None:
            if cand.problem:
                raise IngestError(cand.problem)
            if cand.skip:
                raise NoContent(cand.skip)
            try:
                self._one(cand.path, cand.source, cand.key or cand.source, result)
            except Exception:
                # Re-raised for the report; what the index keeps of the file is said with it.
                result.kept = self.catalog.doc_ids_at(os.path.realpath(cand.path))
                raise

        self._stage = "discover"
        # Asked now, not at import: a reader registered since (a plugin, a test) counts too.
        candidates = discover([str(p) for p in paths], supported_suffixes(), follow_symlinks=self.follow_symlinks)
        self._drive(candidates, [c.source for c in candidates], handle, "file")
        if sync:
            self._remove_vanished(paths, candidates, allow_delete_all)
        for result in self.report.files:
            if result.kept and result.status in ("skipped", "failed"):
                result.reason = f"{result.reason}; {self._kept_note(result)}"
        return self.report

    @staticmethod
    def _kept_note(result: FileResult) -> str:
        """What a skipped or failed file leaves in the index: its document as indexed before."""
        ids = ", ".join(result.kept)
        if result.status == "failed":
            return f"the previously indexed version is kept (document {ids})"
        # A file with nothing to index may be caught mid-copy, so a plain ingest keeps its
        # document; an operator who blanked it to remove its text must be told it is still there.
        return (f"the previously indexed version is kept (document {ids}); delete it with "
                f"'beleg delete --doc {result.kept[0]}', or ingest with --sync, which deletes the documents "
                "of files that are gone or empty")

    def _remove_vanished(self, paths: Sequence[str], candidates: Sequence[Candidate], allow_delete_all: bool) -> None:
        """Delete stored documents in the scope of ``paths`` whose source file is gone, and those
        of files that have nothing to index now (emptied: their ``skipped`` entry becomes ``deleted``).

        A document whose file location was recorded is judged by that location, not by its
        source resolved against the current directory (from elsewhere, ``corpus/a.md`` names
        another corpus's file). A document under a folder that could not be listed, or whose
        file cannot be checked, is kept and reported: not seeing a file is not knowing it is gone.
        Nothing is deleted under a path all of whose earlier documents would go, unless
        ``allow_delete_all`` (see :meth:`_whole_paths_held`)."""
        found = {c.source for c in candidates if not c.problem}
        found_at = {os.path.realpath(c.path) for c in candidates if not c.problem}
        unlisted = [str(c.path) for c in candidates if c.unlisted_folder]
        locations = self.catalog.locations()
        stale = []
        for doc_id, source in self.catalog.sources().items():
            where = locations.get(doc_id, source)
            if source in found or where in found_at or not in_scope(where, paths):
                continue
            if unlisted and in_scope(where, unlisted):
                continue  # reported as the folder's failure already
            try:
                gone = not os.path.lexists(where)
            except (OSError, ValueError) as exc:
                self.report.files.append(FileResult(source, "failed", doc_id, reason=(
                    f"--sync cannot tell whether the file still exists ({_one_line(exc)}); the document was kept")))
                continue
            if gone:
                stale.append((doc_id, source))
        emptied = {doc_id: r for r in self.report.files if r.status == "skipped" for doc_id in r.kept}
        doomed = {doc_id for doc_id, _ in stale} | set(emptied)
        if doomed and not allow_delete_all:
            doomed -= self._whole_paths_held(paths, doomed, locations)
        stale = [(doc_id, source) for doc_id, source in stale if doc_id in doomed]
        emptied = {doc_id: r for doc_id, r in emptied.items() if doc_id in doomed}
        if not doomed:
            return
        with self.catalog.transaction():
            for doc_id in doomed:
                self.catalog.delete_document(doc_id)
            self.catalog.drop_orphan_terms()
        self.catalog.checkpoint()  # deleted text must not linger in the write-ahead log
        for doc_id, result in emptied.items():
            if result.status == "deleted":  # a second stored document of the same file
                self.report.files.append(FileResult(result.source, "deleted", doc_id, reason=result.reason))
                continue
            result.status, result.doc_id, result.kept = "deleted", doc_id, []
            result.reason = f"{result.reason}; --sync deleted the previously indexed version"
        for doc_id, source in sorted(stale, key=lambda d: d[1]):
            self.report.files.append(FileResult(source, "deleted", doc_id))
        self.report.deleted += len(doomed)

    def _whole_paths_held(self, paths: Sequence[str], doomed: set[str], locations: dict[str, str]) -> set[str]:
        """The documents of ``doomed`` kept because deleting them would delete every document
        that was ingested from one of ``paths`` before this run; one ``failed`` entry per such path.

        A folder that shows no file at all is more often an unmounted share or a folder moved
        away than a corpus deleted on purpose: --sync would otherwise erase the whole corpus and
        exit 0. Documents added by this run do not count: they are not what was there before."""
        added = {r.doc_id for r in self.report.files if r.status == "added"}
        earlier = [(doc_id, locations.get(doc_id, source)) for doc_id, source in self.catalog.sources().items()
                   if doc_id not in added]
        held: set[str] = set()
        for arg in paths:
            under = {doc_id for doc_id, where in earlier if in_scope(where, [str(arg)])}
            if not under or not under <= doomed:
                continue
            held |= under
            many = f"all {len(under)} documents" if len(under) > 1 else "the only document"
            self.report.files.append(FileResult(printable(str(arg)), "failed", reason=(
                f"--sync would delete {many} ingested from here: none of their files is there any more "
                "(or each is empty now). Is a share unmounted or the folder moved? Nothing under it was "
                "deleted; if the files were removed on purpose, run again with --allow-delete-all")))
        return held

    def run_texts(self, items: Sequence[TextSource]) -> IngestReport:
        """Ingest documents given as text (one ``TextSource`` each), with the same report."""

        def handle(item: TextSource, result: FileResult) -> None:
            text = normalize_newlines(item.text)
            if not text.strip():
                raise NoContent("empty text")
            parsed = ParsedDocument(text, (), dict(item.metadata), item.title)
            fallback_id = item.doc_id or hashlib.sha256(item.source.encode()).hexdigest()[:16]
            self._add(parsed, item.source, text.encode(), fallback_id, result, text=True)

        return self._drive(list(items), [i.source for i in items], handle, "doc")

    def run_documents(self, items: Sequence[tuple[Document, tuple[Heading, ...]]]) -> IngestReport:
        """Re-chunk stored documents (``reindex``): same ids, sources, metadata and content hashes."""

        def handle(item: tuple[Document, tuple[Heading, ...]], result: FileResult) -> None:
            doc, headings = item
            parsed = ParsedDocument(doc.text, headings, dict(doc.metadata), doc.metadata.get("title"),
                                    stored_file_position(doc.metadata))
            self._add(parsed, doc.source, doc.text.encode(), doc.doc_id, result, content_hash=doc.content_hash,
                      encoding=doc.metadata.get(ENCODING_KEY))

        return self._drive(list(items), [d.source for d, _ in items], handle, "doc")

    def _drive(self, items: Sequence[T], sources: Sequence[str], handle: Callable[[T, FileResult], None],
               unit: str) -> IngestReport:
        """Handle each item into its own result; flush batches of chunks as they fill up.

        A full batch is embedded on a background thread while the next files are read,
        parsed, chunked and analysed here; it is committed here before the next batch goes."""
        try:
            self._drive_items(items, sources, handle, unit)
        finally:
            if self._pool is not None:  # after an error the batch in flight is dropped, as in a crash
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            self._inflight = None
            if self.claims is not None:  # what was not committed is free for others again
                self.claims.release_all()
        return self.report

    def _drive_items(self, items: Sequence[T], sources: Sequence[str], handle: Callable[[T, FileResult], None],
                     unit: str) -> None:
        with Progress(len(items), desc=self.progress_label, unit=unit, progress=self.progress) as bar:
            self._shown = bar
            bar.committed = 0  # an interrupted run says how much it kept
            # Items another ingest process has claimed are handled last, once it let go of them.
            deferred = []
            for item, source in zip(items, sources):
                self._stop_if_requested()
                if not self._handle_one(item, source, handle, bar):
                    deferred.append((item, source))
            if deferred:  # the wait may be long: say why the run seems to stall
                log.warning("%d file(s) are claimed by another ingest process; they are handled once it lets go "
                            "of them (a claim of a process that is gone is taken over at once, any other after "
                            "%.0f minutes)", len(deferred), DEFAULT_STALE_AFTER_S / 60)
            for item, source in deferred:
                self._stop_if_requested()
                self._wait_for_claim(source)
                self._handle_one(item, source, handle, bar)
            self._flush()
            self._finish()
            if self._pending:  # the flush above was refused: a stop came while the last batch embedded
                self._stop_if_requested()

    def _stop_requested(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def _stop_if_requested(self) -> None:
        """After a stop request, commit the batch the model is embedding (its work is done or
        under way; throwing it away would cost a rerun as much), leave the files read since
        (not embedded yet: a rerun takes them up) and raise IngestInterrupted."""
        if not self._stop_requested():
            return
        self._finish()
        self._pending = []  # their claims are released by _drive
        raise IngestInterrupted()

    def _handle_one(self, item: T, source: str, handle: Callable[[T, FileResult], None], bar: Progress) -> bool:
        """Handle one item into its own result; False (and nothing done) when another
        process holds its claim."""
        if self.claims is not None and not self.claims.try_claim(source):
            return False
        result = FileResult(source, "failed")
        self.report.files.append(result)
        self._stage = "read"
        try:
            handle(item, result)
        except NoContent as exc:
            result.status, result.reason = "skipped", str(exc)
        except BelegError as exc:
            result.status, result.reason = "failed", str(exc)
        except OSError as exc:
            result.status, result.reason = "failed", f"cannot read: {exc.strerror or exc}"
        except Exception as exc:  # noqa: BLE001 - one file's parser bug must not end the run
            log.debug("internal error in %s for %s", self._stage, source, exc_info=True)
            result.status, result.reason = "failed", f"internal error in {self._stage}: {_one_line(exc)}"
        if result.status in ("failed", "skipped"):
            result.chunks, result.flagged, result.flagged_fields, result.widened = 0, 0, [], []
            result.moved_from = None
        queued = bool(self._pending) and self._pending[-1].result is result
        if self.claims is not None and not queued:
            self.claims.release(source)  # nothing of it waits for a commit
        bar.add_chunks(result.chunks)
        bar.advance(waiting=1 if queued else 0)  # a queued document is final once its batch is committed
        if sum(len(p.chunks) for p in self._pending) >= _FLUSH_CHUNKS:
            self._flush()
        return True

    def _wait_for_claim(self, source: str) -> None:
        """Block until ``source``'s claim is ours. Commits first: the other process may be
        waiting for a claim of ours, and a claim is released only when its document is."""
        assert self.claims is not None
        self._flush()
        self._finish()
        while not self.claims.try_claim(source):
            self._stop_if_requested()
            time.sleep(_CLAIM_POLL_S)

    def _one(self, path: Path, source: str, key: str, result: FileResult) -> None:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read; a device never ends
            raise NoContent(f"not a regular file ({_file_kind(st.st_mode)}); nothing to read")
        reader = reader_for(path)
        size = st.st_size
        if size == 0:
            raise NoContent("empty file")
        if size > self.max_bytes:
            raise BelegError(
                f"file is {size / 2**20:.1f} MB, over the {self.max_bytes / 2**20:.0f} MB limit; "
                "raise it with --max-file-mb if this is intended"
            )
        data = path.read_bytes()
        encoding = None
        if getattr(reader, "decodes_text", False) and needs_encoding(data):
            # Not UTF-8: read it as this run says, else as it was read the last time (a --sync
            # after an edit need not repeat --encoding; without either it fails as before).
            remembered = None if self.encoding else self._remembered_encoding(path)
            encoding = self.encoding or remembered
            if encoding:
                result.encoding, result.encoding_from = text_codec(encoding), "index" if remembered else "option"
        parsed = reader.read(data, path, encoding)
        if not parsed.text.strip():
            raise IngestError("no text content after parsing")
        doc_id = hashlib.sha256(key.encode()).hexdigest()[:16]
        self._add(parsed, source, data, doc_id, result, path=path, key=key, encoding=result.encoding)

    def _remembered_encoding(self, path: Path) -> str | None:
        """The encoding the file's stored document was read with (beleg.types.ENCODING_KEY), or None."""
        for (_, meta, _), _ in self._ids_of_file(path, os.path.realpath(path)).values():
            encoding = meta.get(ENCODING_KEY)
            if isinstance(encoding, str) and encoding:
                return encoding
        return None

    def _add(self, parsed: ParsedDocument, source: str, data: bytes, fallback_id: str, result: FileResult,
             content_hash: str | None = None, *, path: Path | None = None, key: str | None = None,
             text: bool = False, encoding: str | None = None) -> None:
        """Decide added/updated/unchanged for one parsed document and queue its chunks.

        ``path`` is the file read (None for texts and stored documents): it lets a file keep
        the document it had under an older id or another ingest root, or follow its own move,
        and stops it taking another file's document. ``key`` is its id key (its path below the
        ingest root, see beleg.ingest.discover). ``text`` marks a caller's text (``ingest_texts``),
        which may not replace a file's document; a stored document being re-chunked (reindex) may.
        ``encoding`` is the one a file that is not UTF-8 was read with, remembered with it."""
        self._stage = "metadata"
        meta = resolve(source, parsed.metadata, parsed.text, parsed.title, self.rules, self.statuses)
        meta = with_file_position(meta, parsed.file_position)  # reserved keys come from the reader only
        if encoding:
            meta[ENCODING_KEY] = encoding
        declared_id = meta.pop("id", None)
        declared = declared_id not in (None, "")
        doc_id = printable(str(declared_id)) if declared else fallback_id
        location = os.path.realpath(path) if path is not None else None
        # The hash covers the content only, so a metadata-only change (an ACL edit) is
        # recognised below and never re-embeds; it also tells a moved file from another one.
        content_hash = content_hash or hashlib.sha256(data).hexdigest()
        result.doc_id = doc_id  # a refusal below is about this id (the server hides ids the uploader may not read)
        doc_id, stored, replaces, recorded = self._stored(doc_id, source, location, path, declared, text,
                                                          key=None if declared else key, content_hash=content_hash)
        result.doc_id = doc_id
        self._claimed[doc_id] = source
        if stored is not None and location is not None and recorded is not None and recorded != location:
            result.moved_from = recorded  # reported: after a folder move, "updated" alone says too little
        if stored is not None:
            self._check_widening(stored[1], meta, result)
        result.flagged_fields = self._flagged_fields(meta, parsed)
        if stored and replaces is None and stored[0] == content_hash and not self._changes_text(stored[1], meta):
            if stored[1] == meta and stored[2] == source:
                if location is not None and recorded != location:
                    with self.catalog.transaction():  # an older row, or a moved file: record where it is
                        self.catalog.set_location(doc_id, location)
                result.status = "unchanged"
                return
            # Same content, new metadata (say an ACL edit): no re-chunking, no re-embedding.
            with self.catalog.transaction():
                self.catalog.update_metadata(doc_id, source, meta)
                if location is not None:
                    self.catalog.set_location(doc_id, location)
            self._shown.add_committed(1)
            result.status = "updated"
            return
        doc = Document(doc_id, source, parsed.text, meta, content_hash)
        self._stage = "chunking"
        # Semantic chunking embeds sentence groups to find topic shifts; the others ignore embed.
        chunks = chunk_document(doc_id, parsed, doc.title, self.chunking, embed=self._locked_embed)
        if not chunks:
            raise IngestError("no text content after chunking")
        self._stage = "flag detection"
        # One encoder pass for the document's chunks (detect_many), not one per chunk.
        chunks = [replace(c, flags=f) for c, f in zip(chunks, chunk_flags_many([c.text for c in chunks]), strict=True)]
        texts, hashes, terms = self._analyse(doc, chunks)
        result.flagged = sum(bool(c.flags) for c in chunks)
        result.status = "updated" if stored else "added"
        result.chunks = len(chunks)
        result.previous_id = replaces
        self._pending.append(_Pending(doc, chunks, result, parsed.headings, texts, hashes, terms, replaces,
                                      self._sentence_passages(doc, chunks), location))

    def _changes_text(self, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Whether a metadata change alters what chunks and the index hold, so the document
        must be re-chunked like a content change: the title heads every heading path and
        indexed text, the language picks the BM25 analyser, and a contextualiser may write
        any metadata value into the indexed text. Otherwise an old title would stay
        searchable (and in the index's bytes) after it was changed away."""
        if self.contextualize is not None and old != new:
            return True
        return any(old.get(key) != new.get(key) for key in ("title", "language"))

    @staticmethod
    def _flagged_fields(meta: dict[str, Any], parsed: ParsedDocument) -> list[str]:
        """The title, heading ("section") or metadata keys whose values are instruction-like:
        what answers withhold of every hit of this document (beleg.answer.quarantine)."""
        from beleg.answer.quarantine import withheld_fields  # answer imports ingest at import time

        return list(withheld_fields(str(meta.get("title") or ""), [h.title for h in parsed.headings], meta))

    def _sentence_passages(self, doc: Document, chunks: list[Chunk]) -> dict[str, str]:
        """Key → passage of every sentence the answerer may score, when sentence vectors are on."""
        if self.sentence_fingerprint is None:
            return {}
        from beleg.answer.sentence_vectors import chunk_passages, passage_key

        fingerprint = self.sentence_fingerprint()
        return {passage_key(fingerprint, t): t for c in chunks for t in chunk_passages(c.text, c.heading_path,
                                                                                       doc.title)}

    def _stored(self, doc_id: str, source: str, location: str | None, path: Path | None,
                declared: bool = False, text: bool = False, *, key: str | None = None,
                content_hash: str = "") -> tuple[str, Any, str | None, str | None]:
        """The id the document gets, the stored state it replaces, the older id it is stored
        under and leaves (if any), and the location recorded for the stored document (None
        when there is none, or when no file was read). ``location`` is ``path`` resolved;
        ``key`` its id key (None for a declared ``id:``), ``content_hash`` its content's hash.

        A file is known by where it is, not by how its path was spelled: the same file
        ingested through another argument (another root, ``./corpus`` for ``corpus``, an
        absolute path, another working directory) keeps its document and id, so the widening
        check applies and no second copy is made. A file whose recorded location is gone is
        followed to where it is now only when it is plausibly the same file (same content,
        same path below the same root folder name: beleg.ingest.identity), whichever root it
        was first ingested through and so whichever id it has. Raises IngestError when the id
        is another file's: taken earlier in this run, held by a stored document whose file
        still exists, held by one whose file is gone and is not this one, or held by one this
        ingest cannot locate."""
        # Each stored document's state and recorded location is read once per file: the checks
        # below and the caller's "record where it is" take them from here.
        mine = self._ids_of_file(path, location) if path is not None and location is not None else {}
        # An id from before ids were relative to the ingest root is re-keyed (below), not kept.
        keep = [i for i in mine if path is not None and i != legacy_id(path)]
        if keep and not declared:
            doc_id = doc_id if doc_id in keep else keep[0]
        if doc_id in self._claimed:
            raise IngestError(f"document id {doc_id!r} is taken by {self._claimed[doc_id]} earlier in this run; "
                              "give this file its own 'id:' (or remove the repeated one)")
        stored: _StoredState | None
        if doc_id in mine:
            stored, recorded = mine[doc_id]
        else:
            stored = self.catalog.document_state(doc_id)
            recorded = self.catalog.location(doc_id) if stored is not None and (path is not None or text) else None
        if stored is not None and path is not None and doc_id not in mine:
            whose = _whose(stored[2], recorded, path)
            if whose == "other":
                raise IngestError(f"document id {doc_id!r} belongs to {stored[2]}, another file in the index; "
                                  "give this file its own 'id:', or ingest both from their common folder")
            if whose == "unknown":
                raise IngestError(f"document id {doc_id!r} belongs to {stored[2]}, which cannot be found from "
                                  "here (the index did not record where it is); give this file its own 'id:', "
                                  f"or re-ingest {stored[2]} once from the folder it was ingested from")
            was_at = recorded or (stored[2] if os.path.isabs(stored[2]) else None)  # as _whose reads it
            why = (not_moved_here(was_at, stored[0], location, key, content_hash)
                   if whose == "gone" and was_at is not None and location is not None else None)
            if why is not None:
                raise IngestError(f"document id {doc_id!r} belongs to {stored[2]}: {why}, so it is not taken for "
                                  "that file moved here and the stored document is kept. If that file was "
                                  f"deleted, or this is it moved and edited, run 'beleg delete --doc {doc_id}' "
                                  "and ingest again; otherwise give this file its own 'id:' (or ingest it "
                                  "from a folder above, which gives it another id)")
        if stored is not None and text and recorded is not None:
            # A text (ingest_texts) has no location to prove it is the same file; it would
            # replace the file's text and lock the file out of its own document.
            raise IngestError(f"document id {doc_id!r} belongs to the file {stored[2]}; a text cannot replace "
                              "a file's document: give the text its own id")
        if stored is not None or path is None:
            return doc_id, stored, None, recorded
        # Not stored under its id: maybe under the id an older Beleg gave it (absolute path),
        # or under another id of the same file (its declared 'id:' changed).
        state: _StoredState | None
        for old in dict.fromkeys([legacy_id(path), *mine]):
            if old != doc_id and old not in self._claimed:
                if old in mine:
                    state, recorded = mine[old]
                else:
                    state = self.catalog.document_state(old)
                    recorded = self.catalog.location(old) if state is not None else None
                if state is not None and (old in mine or _whose(state[2], recorded, path) == "this"):
                    self._claimed[old] = source
                    return doc_id, state, old, recorded
        if key is not None and location is not None:
            moved = self._moved_from(location, key, content_hash)
            if moved is not None:
                # It keeps the id it has: ids do not change with the root a file is ingested through.
                return moved[0], moved[1], None, moved[2]
        return doc_id, None, None, None

    def _moved_from(self, location: str, key: str, content_hash: str) -> tuple[str, _StoredState, str] | None:
        """The stored document (id, state, recorded location) whose file was moved to
        ``location``: nothing is at its recorded location any more, and that location ends in
        the same path below the same root folder name, with the same content. A document first
        ingested through another root (a subfolder, the file named directly) has an id from that
        root's key, so it is looked up by where it was, not by the id this file would get.

        Raises IngestError when several stored documents fit: which one moved cannot be told."""
        by_name = self._by_file_name()[1]
        fits = []
        for doc_id in by_name.get(os.path.basename(location), []):
            recorded = self._recorded_at[doc_id]
            if doc_id in self._claimed or not same_place_below_root(recorded, location, key):
                continue
            state = self.catalog.document_state(doc_id)
            # Recorded at the start of the run; a document moved earlier in this run has a new one.
            recorded = self.catalog.location(doc_id) or recorded
            if (state is not None and not os.path.lexists(recorded)
                    and not_moved_here(recorded, state[0], location, key, content_hash) is None):
                fits.append((doc_id, state, recorded))
        if len(fits) > 1:
            raise IngestError(f"this file could be any of {len(fits)} stored documents whose files are gone "
                              f"({', '.join(f'{d} from {r}' for d, _, r in fits)}); delete the ones that are not it "
                              "with 'beleg delete --doc ID' and ingest again")
        return fits[0] if fits else None

    def _ids_of_file(self, path: Path, location: str) -> dict[str, tuple[_StoredState, str | None]]:
        """The stored documents read from the file at ``path`` (resolved: ``location``), however
        its path was spelled then, each with its stored state and recorded location: by recorded
        location, then rows from before locations were recorded whose source is this file from here."""
        unlocated = self._by_file_name()[0]
        at_location = self.catalog.doc_ids_at(location)
        out = {}
        for doc_id in dict.fromkeys([*at_location, *unlocated.get(path.name, [])]):
            state = self.catalog.document_state(doc_id)
            # Found by its recorded location, a row's location is known without reading it again.
            recorded = location if doc_id in at_location else self.catalog.location(doc_id)
            if state is not None and _whose(state[2], recorded, path) == "this":
                out[doc_id] = (state, recorded)
        return out

    def _by_file_name(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """File name → ids of the stored documents without a recorded location (by their source's
        name), and file name → ids of those with one (by their location's name), read once per run."""
        if self._names is None:
            self._recorded_at = self.catalog.locations()
            unlocated: dict[str, list[str]] = {}
            located: dict[str, list[str]] = {}
            for doc_id, stored in self.catalog.sources().items():
                recorded = self._recorded_at.get(doc_id)
                names = located if recorded is not None else unlocated
                names.setdefault(os.path.basename(recorded or stored), []).append(doc_id)
            self._names = unlocated, located
        return self._names

    def _check_widening(self, old: dict[str, Any], new: dict[str, Any], result: FileResult) -> None:
        wider = widening(old, new)
        if wider and not self.allow_widen:
            raise IngestError(f"re-ingest would widen access ({'; '.join(wider)}); nothing changed. "
                              "Pass the original --meta/--rules, or --allow-widen if this is intended")
        result.widened = wider

    def _analyse(self, doc: Document, chunks: list[Chunk]) -> tuple[list[str], list[str], list[list[str]]]:
        """Per chunk: the text both retrieval legs see, its hash (the vector key) and its BM25 terms."""
        self._stage = "contextualisation"
        contexts = self.contextualize(doc, chunks) if self.contextualize else [""] * len(chunks)
        self._stage = "analysis"
        texts = [index_text(doc.title, c, context) for c, context in zip(chunks, contexts)]
        hashes = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        language = doc.metadata.get("language", "en")
        return texts, hashes, [analyze(t, language) for t in texts]

    def _flush(self) -> None:
        """Hand the pending documents to the embedding thread, after committing the batch
        that was there before (so this batch sees its vectors as cached)."""
        self._finish()
        if not self._pending or self._stop_requested():  # after a stop, nothing new goes to the model
            return
        pending, self._pending = self._pending, []
        hashes = [h for p in pending for h in p.hashes]
        cached = self.catalog.cached_vectors(hashes) if self.reuse_vectors else {}
        todo = {h: t for p in pending for h, t in zip(p.hashes, p.texts) if h not in cached}
        awaited = self._claim_texts(todo) if self.reuse_vectors else []  # waiting would tell as much
        # Sentence vectors (when on) are embedded in the same model calls; stored ones are reused.
        sentences = {k: t for p in pending for k, t in p.sentences.items()}
        stored_sentences = self.catalog.sentence_vectors(list(sentences)) if sentences else {}
        todo.update((k, t) for k, t in sentences.items() if k not in stored_sentences)
        batch = _Batch(pending, hashes, cached, list(todo), stored_sentences=stored_sentences)
        batch.awaited = awaited
        texts = list(todo.values())
        if not texts:
            batch.fresh = {}
        elif self._embedded_once:
            batch.future = self._embedder_thread().submit(self._embed_published, batch.todo, texts, set(hashes))
        else:
            # The first batch is embedded here: it loads the model and records its fingerprint
            # in the index, which must happen on the thread that owns the catalog.
            batch.fresh = dict(zip(batch.todo, self._embed_published(batch.todo, texts, set(hashes))))
            self._embedded_once = True
        self._inflight = batch

    def _finish(self) -> None:
        """Wait for the batch being embedded, if any, and commit it."""
        batch, self._inflight = self._inflight, None
        if batch is None:
            return
        if batch.future is not None:
            batch.fresh = dict(zip(batch.todo, batch.future.result()))
        if batch.awaited:
            self._await_vectors(batch)
        fresh = batch.fresh or {}
        sentence_keys = {k for p in batch.pending for k in p.sentences}
        fresh_sentences = {k: fresh.pop(k) for k in list(fresh) if k in sentence_keys}
        self._commit(batch.pending, batch.hashes, batch.cached, fresh, {**batch.stored_sentences, **fresh_sentences})
        self.report.sentence_vectors += len(fresh_sentences)

    @staticmethod
    def _give_up(result: FileResult) -> None:
        result.status, result.chunks, result.flagged, result.flagged_fields, result.widened = "skipped", 0, 0, [], []
        result.reason = ("another ingest worker took this file over after this worker's claim expired "
                         "(stalled longer than the lease); that worker ingests it")

    def _claim_texts(self, todo: dict[str, str]) -> list[str]:
        """Leave in ``todo`` the texts this run claims to embed; returns the hashes of those
        another ingest worker is embedding now, to be waited for instead."""
        if self.claims is None or not todo:
            return []
        mine = self.claims.claim_texts(list(todo))
        awaited = [h for h in todo if h not in mine]
        for h in awaited:
            del todo[h]
        return awaited

    def _await_vectors(self, batch: _Batch) -> None:
        assert self.claims is not None
        wanted = set(batch.awaited)
        texts = {h: t for p in batch.pending for h, t in zip(p.hashes, p.texts) if h in wanted}
        borrowed, embedded = await_vectors(self.claims, self.catalog.cached_vectors, texts, self._embed_sorted,
                                           _CLAIM_POLL_S)
        batch.cached.update(borrowed)
        batch.fresh = {**(batch.fresh or {}), **embedded}
        # Held for this batch's upserts: the other worker's commit may move them out of its table first.
        self.catalog.put_vectors(borrowed)

    def _embed_published(self, keys: list[str], texts: list[str], chunk_hashes: set[str]) -> np.ndarray:
        """Embed, then hand the chunk vectors at once to ingest workers waiting for them."""
        vectors = self._embed_sorted(texts)
        if self.claims is not None:
            self.claims.publish({k: v for k, v in zip(keys, vectors) if k in chunk_hashes})
        return vectors

    def _embedder_thread(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="beleg-ingest-embed")
        return self._pool

    def _embed_sorted(self, texts: list[str]) -> np.ndarray:
        """Embed longest first: a model that pads each batch to its longest text then pads
        little. The vectors come back in the order of ``texts``."""
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        with self._embed_lock:
            vectors = np.asarray(self.embed([texts[i] for i in order]))
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _locked_embed(self, texts: list[str]) -> np.ndarray:
        """``embed`` for chunking (semantic chunking embeds sentence groups) while a batch may be
        embedding in the background: one call into the model at a time."""
        with self._embed_lock:
            return self.embed(texts)

    def _commit(self, pending: list[_Pending], hashes: list[str], cached: dict[str, np.ndarray],
                fresh: dict[str, np.ndarray], sentence_vectors: dict[str, np.ndarray] | None = None) -> None:
        """Write whole documents of one batch in one transaction (a crash loses the batch, never
        part of a document); a document's sentence vectors, when on, are written with its chunks."""
        analysed = [terms for p in pending for terms in p.terms]
        with self.catalog.transaction():
            # Claims are marked done in this transaction where the backend can (PostgreSQL);
            # a file another worker took over meanwhile is its to write, not ours.
            lost = (self.claims.commit([p.result.source for p in pending], list(fresh)) if self.claims is not None
                    else set())
            self.catalog.put_vectors(fresh)
            vocab = self.catalog.term_ids([t for terms in analysed for t in terms], create=True)
            i = 0
            for p in pending:
                if p.result.source in lost:
                    self._give_up(p.result)
                    i += len(p.chunks)
                    continue
                postings = []
                for terms in analysed[i : i + len(p.chunks)]:
                    ids, tfs = np.unique(np.array([vocab[t] for t in terms], dtype=np.int64), return_counts=True)
                    postings.append((ids, tfs))
                self.catalog.upsert_document(p.doc, p.chunks, hashes[i : i + len(p.chunks)], postings, p.headings)
                self.catalog.set_location(p.doc.doc_id, p.location)
                if p.sentences and sentence_vectors:
                    self.catalog.put_sentence_vectors(p.doc.doc_id, {k: sentence_vectors[k] for k in p.sentences
                                                                     if k in sentence_vectors})
                if p.replaces is not None:  # re-keyed: the old id's rows go, its vectors stay in use
                    self.catalog.move_contexts(p.replaces, p.doc.doc_id)
                    self.catalog.delete_document(p.replaces)
                i += len(p.chunks)
            if any(p.replaces for p in pending):
                self.catalog.drop_orphan_terms()
            # An upsert above may have dropped a vector as unused that a later document of this
            # batch reuses (a paragraph moving between documents): put such vectors back. Without
            # reuse, such a vector was embedded afresh (the stored one was not looked at).
            self.catalog.put_vectors(cached if self.reuse_vectors else {**cached, **fresh})
        self.report.embedded += len(fresh)
        self._shown.add_committed(len(pending) - len(lost), settled=len(pending))
        self._shown.add_embedded(len(fresh))  # may write a line: the commit is counted first
        if self.claims is not None:
            for p in pending:
                self.claims.release(p.result.source)
        log.debug("committed %d documents, embedded %d chunks", len(pending), len(fresh))
