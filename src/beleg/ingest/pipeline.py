"""Ingest files into a catalog: read → metadata → chunk → embed → commit, file by file.

Every file ends in exactly one state: ``added``, ``updated``, ``unchanged`` or ``failed``
(with the reason). A bad file never stops the run and never touches what is already
indexed. Chunks of several documents are embedded together (the model is much faster
per text in batches), and each batch of documents is committed in one transaction, so
a crash loses at most the batch in flight and the index stays readable.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from tqdm import tqdm

from beleg.errors import BelegError
from beleg.index.analyzer import analyze
from beleg.index.catalog import Catalog
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.ingest.discover import Candidate, discover
from beleg.ingest.injection import chunk_flags
from beleg.ingest.metadata import MetadataRule, resolve
from beleg.ingest.readers import SUPPORTED_SUFFIXES, reader_for
from beleg.ingest.readers.base import normalize_newlines
from beleg.types import Chunk, Document, Heading, ParsedDocument

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_MAX_FILE_MB = 50.0
#: Embed once this many chunks are waiting (a few model batches).
_FLUSH_CHUNKS = 128


@dataclass(slots=True)
class FileResult:
    source: str
    status: str  # added | updated | unchanged | failed
    doc_id: str | None = None
    chunks: int = 0
    reason: str | None = None
    #: Chunks with instruction-like text (possible prompt injection), flagged for answers.
    flagged: int = 0

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in (("source", self.source), ("status", self.status), ("doc_id", self.doc_id),
                                 ("chunks", self.chunks), ("reason", self.reason)) if v is not None}
        if self.flagged:
            out["flagged"] = self.flagged
        return out


@dataclass(slots=True)
class IngestReport:
    files: list[FileResult] = field(default_factory=list)
    embedded: int = 0
    deleted: int = 0

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
            "failed": self.count("failed"),
            "embedded": self.embedded,
            "failures": [{"source": f.source, "reason": f.reason} for f in self.failures],
            "flagged": [{"source": f.source, "chunks": f.flagged} for f in self.files if f.flagged],
            "files": [f.to_json() for f in self.files],
        }


def in_scope(source: str, paths: Sequence[str]) -> bool:
    """Whether a stored source lies under one of the ingest arguments (folder, file or glob)."""
    for arg in paths:
        arg = str(arg)
        if any(ch in arg for ch in "*?["):
            if fnmatch.fnmatch(source, arg) or fnmatch.fnmatch(Path(source).as_posix(), arg):
                return True
            continue
        root, here = Path(arg).resolve(), Path(source).resolve()
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
    doc: Document
    chunks: list[Chunk]
    result: FileResult
    headings: tuple[Heading, ...] = ()


class Ingestor:
    """Runs one ingest over a catalog with a given chunking config and embedder."""

    def __init__(self, catalog: Catalog, chunking: ChunkingConfig, embed: Callable[[list[str]], np.ndarray],
                 *, rules: Sequence[MetadataRule] = (), encoding: str | None = None,
                 max_file_mb: float = DEFAULT_MAX_FILE_MB, progress: bool | None = None,
                 contextualize: Callable[[Document, Sequence[Chunk]], list[str]] | None = None) -> None:
        self.catalog = catalog
        #: Contextual retrieval (beleg.ingest.contextual): a context per chunk, or None.
        self.contextualize = contextualize
        self.chunking = chunking
        self.embed = embed
        self.rules = list(rules)
        self.encoding = encoding
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        self.progress = progress
        self._pending: list[_Pending] = []
        self.report = IngestReport()

    def run(self, paths: Sequence[str], *, sync: bool = False) -> IngestReport:
        """Ingest files, folders and globs. With ``sync``, documents that were ingested from
        these folders/files/globs and whose file no longer exists are deleted afterwards."""

        def handle(cand: Candidate, result: FileResult) -> None:
            if cand.problem:
                raise BelegError(cand.problem)
            self._one(cand.path, cand.source, result)

        candidates = discover(list(paths), SUPPORTED_SUFFIXES)
        self._drive(candidates, [c.source for c in candidates], handle, "file")
        if sync:
            self._remove_vanished(paths)
        return self.report

    def _remove_vanished(self, paths: Sequence[str]) -> None:
        """Delete stored documents in the scope of ``paths`` whose source file is gone."""
        stale = [(doc_id, source) for doc_id, source in self.catalog.sources().items()
                 if in_scope(source, paths) and not Path(source).exists()]
        if not stale:
            return
        with self.catalog.transaction():
            for doc_id, _ in stale:
                self.catalog.delete_document(doc_id)
            self.catalog.drop_orphan_terms()
        self.catalog.checkpoint()  # deleted text must not linger in the write-ahead log
        for doc_id, source in sorted(stale, key=lambda d: d[1]):
            self.report.files.append(FileResult(source, "deleted", doc_id))
        self.report.deleted += len(stale)

    def run_texts(self, items: Sequence[TextSource]) -> IngestReport:
        """Ingest documents given as text (one ``TextSource`` each), with the same report."""

        def handle(item: TextSource, result: FileResult) -> None:
            text = normalize_newlines(item.text)
            if not text.strip():
                raise BelegError("empty text")
            parsed = ParsedDocument(text, (), dict(item.metadata), item.title)
            fallback_id = item.doc_id or hashlib.sha256(item.source.encode()).hexdigest()[:16]
            self._add(parsed, item.source, text.encode(), fallback_id, result)

        return self._drive(list(items), [i.source for i in items], handle, "doc")

    def run_documents(self, items: Sequence[tuple[Document, tuple[Heading, ...]]]) -> IngestReport:
        """Re-chunk stored documents (``reindex``): same ids, sources, metadata and content hashes."""

        def handle(item: tuple[Document, tuple[Heading, ...]], result: FileResult) -> None:
            doc, headings = item
            parsed = ParsedDocument(doc.text, headings, dict(doc.metadata), doc.metadata.get("title"))
            self._add(parsed, doc.source, doc.text.encode(), doc.doc_id, result, content_hash=doc.content_hash)

        return self._drive(list(items), [d.source for d, _ in items], handle, "doc")

    def _drive(self, items: Sequence[T], sources: Sequence[str], handle: Callable[[T, FileResult], None],
               unit: str) -> IngestReport:
        """Handle each item into its own result; flush batches of chunks as they fill up."""
        disable = (self.progress is False) if self.progress is not None else None
        bar = tqdm(total=len(items), desc="ingest", unit=unit, disable=disable, leave=False, dynamic_ncols=True)
        for item, source in zip(items, sources):
            result = FileResult(source, "failed")
            self.report.files.append(result)
            try:
                handle(item, result)
            except BelegError as exc:
                result.status, result.reason = "failed", str(exc)
            except OSError as exc:
                result.status, result.reason = "failed", f"cannot read: {exc.strerror or exc}"
            if sum(len(p.chunks) for p in self._pending) >= _FLUSH_CHUNKS:
                self._flush()
                bar.set_postfix(embedded=self.report.embedded)
            bar.update()
        self._flush()
        bar.close()
        return self.report

    def _one(self, path: Path, source: str, result: FileResult) -> None:
        reader = reader_for(path)
        size = path.stat().st_size
        if size == 0:
            raise BelegError("empty file")
        if size > self.max_bytes:
            raise BelegError(
                f"file is {size / 2**20:.1f} MB, over the {self.max_bytes / 2**20:.0f} MB limit; "
                "raise it with --max-file-mb if this is intended"
            )
        data = path.read_bytes()
        parsed = reader.read(data, path, self.encoding)
        if not parsed.text.strip():
            raise BelegError("no text content after parsing")
        self._add(parsed, source, data, hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16], result)

    def _add(self, parsed: ParsedDocument, source: str, data: bytes, fallback_id: str, result: FileResult,
             content_hash: str | None = None) -> None:
        """Decide added/updated/unchanged for one parsed document and queue its chunks."""
        meta = resolve(source, parsed.metadata, parsed.text, parsed.title, self.rules)
        doc_id = str(meta.pop("id", None) or fallback_id)
        # The hash covers the content only, so a metadata-only change (an ACL edit) is
        # recognised below and never re-embeds.
        content_hash = content_hash or hashlib.sha256(data).hexdigest()
        result.doc_id = doc_id
        stored = self.catalog.document_state(doc_id)
        if stored and stored[0] == content_hash:
            if stored[1] == meta and stored[2] == source:
                result.status = "unchanged"
                return
            # Same content, new metadata (say an ACL edit): no re-chunking, no re-embedding.
            with self.catalog.transaction():
                self.catalog.update_metadata(doc_id, source, meta)
            result.status = "updated"
            return
        doc = Document(doc_id, source, parsed.text, meta, content_hash)
        chunks = chunk_document(doc_id, parsed, doc.title, self.chunking)
        if not chunks:
            raise BelegError("no text content after chunking")
        chunks = [replace(c, flags=chunk_flags(c.text)) for c in chunks]
        result.flagged = sum(bool(c.flags) for c in chunks)
        result.status = "updated" if stored else "added"
        result.chunks = len(chunks)
        self._pending.append(_Pending(doc, chunks, result, parsed.headings))

    def _flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        texts, hashes, analysed = [], [], []
        for p in pending:
            contexts = self.contextualize(p.doc, p.chunks) if self.contextualize else [""] * len(p.chunks)
            for c, context in zip(p.chunks, contexts):
                t = index_text(p.doc.title, c, context)
                texts.append(t)
                hashes.append(hashlib.sha256(t.encode()).hexdigest())
                analysed.append(analyze(t, p.doc.metadata.get("language", "en")))
        cached = self.catalog.cached_vectors(hashes)
        todo = {h: t for h, t in zip(hashes, texts) if h not in cached}
        fresh: dict[str, np.ndarray] = {}
        if todo:
            vectors = self.embed(list(todo.values()))
            fresh = dict(zip(todo.keys(), vectors))
        with self.catalog.transaction():
            self.catalog.put_vectors(fresh)
            vocab = self.catalog.term_ids([t for terms in analysed for t in terms], create=True)
            i = 0
            for p in pending:
                postings = []
                for terms in analysed[i : i + len(p.chunks)]:
                    ids, tfs = np.unique(np.array([vocab[t] for t in terms], dtype=np.int64), return_counts=True)
                    postings.append((ids, tfs))
                self.catalog.upsert_document(p.doc, p.chunks, hashes[i : i + len(p.chunks)], postings, p.headings)
                i += len(p.chunks)
            # An upsert above may have dropped a vector as unused that a later document of this
            # batch reuses (a paragraph moving between documents): put such vectors back.
            self.catalog.put_vectors(cached)
        self.report.embedded += len(fresh)
        log.debug("committed %d documents, embedded %d chunks", len(pending), len(fresh))
