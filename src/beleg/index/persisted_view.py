"""The search view kept on disk beside the catalog, memory-mapped at open.

Building a :class:`~beleg.index.snapshot.Snapshot` from SQLite costs seconds at 100k chunks
(every vector blob and posting array read and stacked). This module writes the built arrays
to ``<version folder>/view/`` and opens them again with ``np.load(mmap_mode="r")``, so a new
process pays for page reads only, and only for the pages a search touches::

    view/
      CURRENT                    name of the live view folder (replaced atomically)
      LOCK                       flock: one writer at a time; readers share it while opening
      g000042-1f3a9c/            one complete view of catalog generation 42
        manifest.json            format, generation, sizes of every file, catalog max row
        rows.npy chunk_doc.npy   catalog row and document position of each chunk
        vectors.npy              float32 (chunks, dim): exact scores
        codes.npy code_scales.npy  int8 copy + per-row scale: the fast first pass
        row_indptr.npy row_terms.npy row_tfs.npy   per-chunk postings (for updates)
        post_*.npy idf.npy doc_lengths.npy          BM25 postings, weights precomputed
        docs.json                documents (id, source, metadata)
        terms_*.npy              the vocabulary, sorted (a :class:`~beleg.index.string_table.TermIds`)
        chunk_ids_*.npy          chunk id of each chunk (a :class:`~beleg.index.string_table.StringTable`)
        ivf_*.npy                from 50k chunks: the IVF lists of :mod:`beleg.index.ann`

Rules that keep it honest:

* A view is used only when its generation equals the catalog's and its recorded maximum
  chunk row matches; otherwise it is rebuilt, never silently used.
* A rebuild is incremental: chunk rows only grow (AUTOINCREMENT), so rows above the old
  view's maximum are read from SQLite, rows the catalog no longer has are dropped, and
  every other chunk's vector, codes and postings come from the old view's files. A kept
  row must still carry the chunk id the old view recorded (ids hash the chunk's content),
  so the files of another catalog (one restored from a backup) are never reused.
* Every file is written and fsynced in a new folder before ``CURRENT`` is replaced with one
  rename; a crash leaves the last good view. Older folders are deleted after the swap, so
  an erased chunk's vector or terms do not survive in them.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from beleg.durable import fsync_path
from beleg.index import ann
from beleg.index.bm25 import BM25Index
from beleg.index.catalog import Catalog
from beleg.index.filters import MetadataColumns
from beleg.index.snapshot import Snapshot
from beleg.index.string_table import StringTable, TermIds, encode, sorted_terms

log = logging.getLogger(__name__)

VIEW_DIR = "view"
FORMAT = 2  # 2: vocabulary and chunk ids as string tables (1: JSON, decoded whole at every open)
_CURRENT = "CURRENT"
_LOCK = "LOCK"
_ARRAYS = ("rows", "chunk_doc", "vectors", "codes", "code_scales", "row_indptr", "row_terms", "row_tfs",
           "post_indptr", "post_rows", "post_weights", "idf", "doc_lengths")
_STRING_ARRAYS = ("terms_blob", "terms_offsets", "terms_ids", "chunk_ids_blob", "chunk_ids_offsets")


class ViewError(Exception):
    """A view folder is missing, torn or of another format (it is rebuilt, never used)."""


@dataclass
class _Rows:
    """Rows of several matrices, concatenated only when written (block by block into the file),
    so an update does not hold a second copy of every vector in memory."""

    pieces: list[tuple[np.ndarray, np.ndarray | slice]]  # (matrix, which of its rows)
    width: int
    dtype: Any

    def __len__(self) -> int:
        return sum(len(range(*w.indices(len(m)))) if isinstance(w, slice) else len(w) for m, w in self.pieces)


@dataclass
class _Parts:
    """The per-chunk arrays a view is built from (in catalog row order)."""

    rows: np.ndarray  # int64
    chunk_ids: list[str]
    doc_ids: list[str]  # document of each chunk
    vectors: np.ndarray | _Rows  # float32 (n, dim)
    codes: np.ndarray | _Rows  # int8 (n, dim)
    code_scales: np.ndarray  # float32 (n,)
    row_indptr: np.ndarray  # int64 (n + 1,)
    row_terms: np.ndarray  # int32
    row_tfs: np.ndarray  # int32
    #: For an incremental rebuild: the base view's position of each kept chunk (new chunks follow).
    kept: np.ndarray | None = None


# ----------------------------------------------------------------------------- compact codes
def int8_codes(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8 quantisation: ``vectors ≈ codes * scales[:, None]``."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if len(vectors) else np.zeros(0, np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).clip(-127, 127).astype(np.int8)
    return codes, scales


# ----------------------------------------------------------------------------- public entry points
def open_view(catalog: Catalog, folder: Path, dim: int, k1: float = 1.5, b: float = 0.75) -> Snapshot:
    """The search view of the catalog's committed state, from disk when it is current.

    A missing or outdated view is rebuilt (incrementally from the last one when there is
    one) and persisted first. A folder that cannot be written (a read-only index) gets an
    in-memory snapshot and a warning: searching must not need write access.
    """
    root = folder / VIEW_DIR
    with _read_transaction(catalog):
        generation, max_row = _catalog_state(catalog)
        try:
            with _locked(root, shared=True):
                return _load(root / _current_name(root), generation, max_row)
        except ViewError:
            pass
        if catalog.read_only:
            catalog.note("the search view on disk is missing or older than the catalog, so this process builds it in memory")
            return Snapshot.build(catalog, dim, k1=k1, b=b)
        try:
            return _rebuild(catalog, root, dim, k1, b, generation, max_row)
        except PermissionError as exc:
            log.warning("cannot write the search view in %s (%s): searching from memory", root, exc)
            return Snapshot.build(catalog, dim, k1=k1, b=b)


def refresh(catalog: Catalog, folder: Path | None = None, dim: int = 384, *, create: bool = True) -> None:
    """Bring the view up to the catalog's state now (call after commits; a no-op when current).

    After an erasure call it with ``create=False``: a folder without a view holds nothing of
    the erased documents, and one with a view gets it rebuilt without them (older view
    folders are deleted).
    """
    folder = folder if folder is not None else Path(catalog.path).parent
    if not create and not (folder / VIEW_DIR / _CURRENT).exists():
        return
    manifest = _manifest_or_none(folder / VIEW_DIR)
    k1, b = (manifest["k1"], manifest["b"]) if manifest else (1.5, 0.75)
    open_view(catalog, folder, dim, k1, b)


def _manifest_or_none(root: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((root / _current_name(root) / "manifest.json").read_text(encoding="utf-8")))
    except (ViewError, OSError, ValueError):
        return None


def discard(folder: Path) -> None:
    """Delete the persisted view of a version folder (it is rebuilt on the next search)."""
    root = folder / VIEW_DIR
    if root.exists():
        with _locked(root, shared=False):
            for child in root.iterdir():
                if child.name != _LOCK:
                    _remove(child)


def view_files(folder: Path) -> list[Path]:
    """Every file of the live view of ``folder`` (for tests and size reports)."""
    root = folder / VIEW_DIR
    try:
        current = root / _current_name(root)
    except ViewError:
        return []
    return sorted(p for p in current.iterdir() if p.is_file())


# ----------------------------------------------------------------------------- catalog side
@contextmanager
def _read_transaction(catalog: Catalog) -> Iterator[None]:
    """One read transaction, so generation, documents, chunks and terms are of one commit."""
    own = not catalog.db.in_transaction
    if own:
        catalog.db.execute("BEGIN")
    try:
        yield
    finally:
        if own and catalog.db.in_transaction:
            catalog.db.execute("ROLLBACK")  # read-only: nothing to commit


def _catalog_state(catalog: Catalog) -> tuple[int, int]:
    max_row = catalog.db.execute("SELECT COALESCE(MAX(row), 0) FROM chunks").fetchone()[0]
    return catalog.generation, int(max_row)


def _chunks_after(catalog: Catalog, after_row: int, dim: int) -> _Parts:
    """Search data of the chunks with ``row > after_row``, read from SQLite."""
    rows, chunk_ids, doc_ids, vectors, ids, tfs = [], [], [], [], [], []
    cursor = catalog.db.execute(
        "SELECT c.row, c.chunk_id, c.doc_id, c.term_ids, c.term_tfs, e.vector FROM chunks c "
        "LEFT JOIN embeddings e ON e.embed_hash = c.embed_hash WHERE c.row > ? ORDER BY c.row", (after_row,))
    for row, chunk_id, doc_id, term_ids, term_tfs, vector in cursor:
        rows.append(row)
        chunk_ids.append(chunk_id)
        doc_ids.append(doc_id)
        ids.append(np.frombuffer(term_ids, dtype=np.int32))
        tfs.append(np.frombuffer(term_tfs, dtype=np.int32))
        vectors.append(vector)
    if vectors and any(v is not None for v in vectors):
        dim = len(next(v for v in vectors if v is not None)) // 4
    matrix = np.zeros((len(rows), dim), dtype=np.float32)
    for i, v in enumerate(vectors):
        if v is not None and len(v) == 4 * dim:  # a row without a vector (none should exist) stays zero
            matrix[i] = np.frombuffer(v, dtype=np.float32)
    codes, scales = int8_codes(matrix)
    lengths = np.fromiter((len(t) for t in ids), dtype=np.int64, count=len(ids))
    return _Parts(np.array(rows, dtype=np.int64), chunk_ids, doc_ids, matrix, codes, scales,
                  np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                  np.concatenate(ids).astype(np.int32) if ids else np.zeros(0, np.int32),
                  np.concatenate(tfs).astype(np.int32) if tfs else np.zeros(0, np.int32))


# ----------------------------------------------------------------------------- rebuild
def _rebuild(catalog: Catalog, root: Path, dim: int, k1: float, b: float, generation: int, max_row: int) -> Snapshot:
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, shared=False):
        try:  # another process may have written it while we waited for the lock
            return _load(root / _current_name(root), generation, max_row)
        except ViewError:
            pass
        base = _previous(root)
        docs = catalog.documents_meta()
        live = catalog.db.execute("SELECT row, chunk_id, doc_id FROM chunks ORDER BY row").fetchall()
        parts = _merge(catalog, base, live, dim)
        vocab = catalog.all_terms()
        name = _write(root, parts, docs, vocab, generation, max_row, k1, b, base.ann if base is not None else None)
        _swap(root, name)
        return _load(root / name, generation, max_row)


def _previous(root: Path) -> Snapshot | None:
    """The last complete view, whatever its generation (the base of an incremental rebuild)."""
    try:
        return _load(root / _current_name(root), None, None)
    except ViewError:
        return None


def _merge(catalog: Catalog, base: Snapshot | None, live: list[tuple[int, str, str]], dim: int) -> _Parts:
    """Chunks of the catalog now: those the base view holds come from its files, the rest from SQLite."""
    live_docs = [d for _, _, d in live]
    old_ids = None if base is None or base.chunk_ids is None else list(base.chunk_ids)  # one decode of the table
    kept = None if base is None or old_ids is None else _reusable(base.rows, old_ids, live)
    if base is None or old_ids is None or kept is None:
        return _chunks_after(catalog, 0, dim)
    old_max = int(base.rows[-1]) if len(base.rows) else 0
    fresh = _chunks_after(catalog, old_max, base.vectors.shape[1] if len(base.rows) else dim)
    arrays = _views_of(base)
    old_ptr = arrays["row_indptr"]
    starts, stops = old_ptr[kept], old_ptr[kept + 1]
    take = _ranges(starts, stops)
    kept_lengths = stops - starts
    # Only appended rows (the usual update): a slice, so rows are copied without a gather.
    contiguous = len(kept) == 0 or int(kept[-1]) - int(kept[0]) + 1 == len(kept)
    which: np.ndarray | slice = slice(int(kept[0]), int(kept[-1]) + 1) if contiguous and len(kept) else kept
    lengths = np.concatenate([kept_lengths, np.diff(fresh.row_indptr)])
    assert isinstance(fresh.vectors, np.ndarray) and isinstance(fresh.codes, np.ndarray)  # rows read just now
    assert isinstance(base.vectors, np.ndarray)
    return _Parts(
        rows=np.concatenate([base.rows[kept], fresh.rows]),
        chunk_ids=[old_ids[i] for i in kept.tolist()] + fresh.chunk_ids,
        doc_ids=live_docs,
        vectors=_Rows([(base.vectors, which), (fresh.vectors, slice(None))], fresh.vectors.shape[1], np.float32),
        codes=_Rows([(arrays["codes"], which), (fresh.codes, slice(None))], fresh.codes.shape[1], np.int8),
        code_scales=np.concatenate([arrays["code_scales"][kept], fresh.code_scales]),
        row_indptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        row_terms=np.concatenate([arrays["row_terms"][take], fresh.row_terms]).astype(np.int32),
        row_tfs=np.concatenate([arrays["row_tfs"][take], fresh.row_tfs]).astype(np.int32),
        kept=kept,
    )


def _reusable(base_rows: np.ndarray, base_ids: list[str], live: list[tuple[int, str, str]]) -> np.ndarray | None:
    """Positions of the base view's chunks the catalog still has, or None when the base
    cannot be trusted: a catalog row up to the base's maximum that the base lacks, or a kept
    row with another chunk id, means it belongs to another catalog (a restored backup, say).
    """
    old_max = int(base_rows[-1]) if len(base_rows) else 0
    position = {int(r): i for i, r in enumerate(base_rows.tolist())}
    kept = []
    for row, chunk_id, _ in live:
        if row > old_max:
            break
        i = position.get(row)
        if i is None or base_ids[i] != chunk_id:
            return None
        kept.append(i)
    return np.array(kept, dtype=np.int64)


def _save_rows(path: Path, rows: np.ndarray | _Rows) -> None:
    """Save a matrix, or the concatenation ``rows`` describes, as ``.npy`` (64k rows at a time)."""
    if isinstance(rows, np.ndarray):
        np.save(path, np.ascontiguousarray(rows))
        return
    out = np.lib.format.open_memmap(path, mode="w+", dtype=rows.dtype, shape=(len(rows), rows.width))
    at = 0
    for matrix, which in rows.pieces:
        index = np.arange(len(matrix))[which] if isinstance(which, slice) else which
        for a in range(0, len(index), 65536):
            part = index[a : a + 65536]
            if len(part) and isinstance(which, slice):
                out[at : at + len(part)] = matrix[int(part[0]) : int(part[-1]) + 1]
            elif len(part):
                out[at : at + len(part)] = matrix[part]
            at += len(part)
    out.flush()
    del out


def _bm25_postings(row_indptr: np.ndarray, row_terms: np.ndarray, row_tfs: np.ndarray, n_terms: int,
                   k1: float, b: float) -> dict[str, np.ndarray]:
    """BM25 postings from per-chunk (CSR) term arrays, vectorised.

    The same arithmetic, in the same order, as :class:`BM25Index`'s constructor (which
    takes one array per chunk and loops over them in Python); tests compare the scores of
    both exactly.
    """
    n_rows = len(row_indptr) - 1
    sums = np.concatenate([[0], np.cumsum(row_tfs, dtype=np.int64)])
    lengths = (sums[row_indptr[1:]] - sums[row_indptr[:-1]]).astype(np.float64)
    if n_rows == 0 or len(row_terms) == 0:
        return {"post_indptr": np.zeros(n_terms + 1, dtype=np.int64), "post_rows": np.zeros(0, dtype=np.int32),
                "post_weights": np.zeros(0, dtype=np.float32), "idf": np.zeros(n_terms, dtype=np.float64),
                "doc_lengths": lengths}
    rows = np.repeat(np.arange(n_rows, dtype=np.int32), np.diff(row_indptr))
    terms = row_terms.astype(np.int64)
    tfs = row_tfs.astype(np.float64)
    avgdl = lengths.mean()
    df = np.bincount(terms, minlength=n_terms).astype(np.float64)
    idf = np.log1p((n_rows - df + 0.5) / (df + 0.5))
    norm = k1 * (1.0 - b + b * lengths[rows] / avgdl)
    weights = idf[terms] * tfs / (tfs + norm)
    order = np.argsort(terms, kind="stable")
    return {"post_indptr": np.concatenate([[0], np.cumsum(df.astype(np.int64))]), "post_rows": rows[order],
            "post_weights": weights[order].astype(np.float32), "idf": idf, "doc_lengths": lengths}


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, e)`` for each pair, vectorised."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets


def _write(root: Path, parts: _Parts, docs: list[tuple[str, str, dict[str, Any]]], vocab: dict[str, int],
           generation: int, max_row: int, k1: float, b: float, base_ivf: ann.IVF | None = None) -> str:
    """Write a complete view into a new folder (fsynced) and return its name."""
    name = f"g{generation:08d}-{secrets.token_hex(4)}"
    tmp = root / f".tmp-{name}"
    tmp.mkdir()
    doc_pos = {doc_id: i for i, (doc_id, _, _) in enumerate(docs)}
    n = len(parts.rows)
    n_terms = (max(vocab.values()) + 1) if vocab else 0
    term_blob, term_offsets, term_ids = sorted_terms(vocab)
    id_blob, id_offsets = encode(parts.chunk_ids)
    arrays: dict[str, np.ndarray | _Rows] = {
        "terms_blob": term_blob, "terms_offsets": term_offsets, "terms_ids": term_ids,
        "chunk_ids_blob": id_blob, "chunk_ids_offsets": id_offsets,
        "rows": parts.rows, "chunk_doc": np.array([doc_pos[d] for d in parts.doc_ids], dtype=np.int32),
        "vectors": parts.vectors, "codes": parts.codes,
        "code_scales": parts.code_scales, "row_indptr": parts.row_indptr, "row_terms": parts.row_terms,
        "row_tfs": parts.row_tfs,
        **_bm25_postings(parts.row_indptr, parts.row_terms, parts.row_tfs, n_terms, k1, b),
    }
    sizes = {}
    for key, array in arrays.items():
        path = tmp / f"{key}.npy"
        _save_rows(path, array)
        sizes[path.name] = path.stat().st_size
    ivf = _write_ivf(tmp, parts.kept, base_ivf, sizes)
    path = tmp / "docs.json"
    path.write_text(json.dumps([list(d) for d in docs], ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    sizes[path.name] = path.stat().st_size
    manifest = {"format": FORMAT, "generation": generation, "max_row": max_row, "chunks": n,
                "dim": parts.vectors.width if isinstance(parts.vectors, _Rows) else int(parts.vectors.shape[1]),
                "k1": k1, "b": b, "n_terms": n_terms, "files": sizes}
    if ivf is not None:
        manifest["ivf"] = ivf.meta()
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    for path in tmp.iterdir():
        fsync_path(path)
    fsync_path(tmp)
    os.rename(tmp, root / name)
    return name


def _write_ivf(tmp: Path, kept: np.ndarray | None, base_ivf: ann.IVF | None, sizes: dict[str, int]) -> ann.IVF | None:
    """The IVF of the view just written to ``tmp`` (read back memory-mapped), saved beside it.

    The base view's IVF is remapped when only a few rows were added since it was built
    (:func:`ann.updated`); rows of erased chunks are left out of every file either way.
    """
    vectors, codes, scales = (np.load(tmp / f"{key}.npy", mmap_mode="r") for key in ("vectors", "codes", "code_scales"))
    ivf = ann.updated(base_ivf, kept, vectors, codes, scales)
    if ivf is not None and ivf.usable:
        for key, array in ivf.arrays().items():
            path = tmp / f"ivf_{key}.npy"
            ann.save_array(path, array)
            sizes[path.name] = path.stat().st_size
    del vectors, codes, scales
    return ivf


def _load_ivf(folder: Path, manifest: dict[str, Any]) -> ann.IVF | None:
    meta = manifest.get("ivf")
    if not meta:
        return None
    if not meta["usable"]:
        return ann.IVF.unusable(int(manifest["dim"]), int(meta["built_rows"]), float(meta["probe_share"]),
                                {k: v for k, v in meta.items() if k not in ("probe_share", "built_rows", "usable", "lists")})
    arrays = {key: np.asarray(np.load(folder / f"ivf_{key}.npy", mmap_mode="r")) for key in ann.FILES}
    return ann.IVF.from_arrays(arrays, meta)


def _swap(root: Path, name: str) -> None:
    """Point ``CURRENT`` at ``name`` with one rename, then delete every other view folder."""
    tmp = root / f"{_CURRENT}.tmp"
    tmp.write_text(name + "\n", encoding="utf-8")
    fsync_path(tmp)
    os.replace(tmp, root / _CURRENT)
    fsync_path(root)
    for child in root.iterdir():
        if child.is_dir() and child.name != name:
            _remove(child)


# ----------------------------------------------------------------------------- load
def _current_name(root: Path) -> str:
    try:
        name = (root / _CURRENT).read_text(encoding="utf-8").strip()
    except OSError:
        raise ViewError(f"no view in {root}") from None
    if not name or "/" in name or name.startswith("."):
        raise ViewError(f"{root / _CURRENT} names {name!r}, not a view folder")
    return name


def _load(folder: Path, generation: int | None, max_row: int | None) -> Snapshot:
    """Open a view folder; with ``generation``/``max_row`` it must be of exactly that catalog state."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ViewError(f"cannot read {folder / 'manifest.json'}: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise ViewError(f"{folder} is view format {manifest.get('format')}, expected {FORMAT}")
    if generation is not None and (manifest["generation"] != generation or manifest["max_row"] != max_row):
        raise ViewError(f"{folder} is of generation {manifest['generation']}, the catalog of {generation}")
    for file, size in manifest["files"].items():
        try:
            if (folder / file).stat().st_size != size:
                raise ViewError(f"{folder / file} is torn: {(folder / file).stat().st_size} bytes, expected {size}")
        except FileNotFoundError:
            raise ViewError(f"{folder / file} is missing") from None
    try:
        arrays = {key: np.asarray(np.load(folder / f"{key}.npy", mmap_mode="r")) for key in _ARRAYS + _STRING_ARRAYS}
        vocab = TermIds(StringTable(arrays["terms_blob"], arrays["terms_offsets"]), arrays["terms_ids"])
        chunk_ids = StringTable(arrays["chunk_ids_blob"], arrays["chunk_ids_offsets"])
        docs = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
        ivf = _load_ivf(folder, manifest)
    except (OSError, ValueError, KeyError) as exc:
        raise ViewError(f"cannot read the view in {folder}: {exc}") from None
    metadata = [d[2] for d in docs]
    snapshot = Snapshot(
        generation=int(manifest["generation"]),
        rows=arrays["rows"], chunk_doc=arrays["chunk_doc"],
        doc_ids=[d[0] for d in docs], doc_sources=[d[1] for d in docs], doc_metadata=metadata,
        columns=MetadataColumns(metadata), vectors=arrays["vectors"],
        bm25=_bm25_from_arrays(arrays, float(manifest["k1"]), float(manifest["b"])), vocab=vocab,
        codes=arrays["codes"], code_scales=arrays["code_scales"], chunk_ids=chunk_ids, ann=ivf, _arrays=arrays,
    )
    return snapshot


def _views_of(snapshot: Snapshot) -> dict[str, np.ndarray]:
    return snapshot._arrays  # noqa: SLF001


def _bm25_from_arrays(arrays: dict[str, np.ndarray], k1: float, b: float) -> BM25Index:
    """A :class:`BM25Index` over stored postings, without recomputing them.

    The constructor computes these same fields from per-row term arrays (that is how they were
    written, see ``_write``); here they are set from the memory-mapped files instead.
    """
    index = BM25Index.__new__(BM25Index)
    index.k1, index.b = k1, b
    index.n_rows = len(arrays["rows"])
    index.doc_lengths = arrays["doc_lengths"]
    index.idf = arrays["idf"]
    index._indptr = arrays["post_indptr"]  # noqa: SLF001
    index._rows = arrays["post_rows"]  # noqa: SLF001
    index._weights = arrays["post_weights"]  # noqa: SLF001
    return index


# ----------------------------------------------------------------------------- files
@contextmanager
def _locked(root: Path, shared: bool) -> Iterator[None]:
    """flock on ``root/LOCK``: writers exclusive, readers shared while they open the files."""
    if not root.exists():
        if shared:
            raise ViewError(f"no view in {root}")
        root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root / _LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except PermissionError:
        if shared:  # a read-only index: open without the lock (no writer can be at work)
            yield
            return
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)



def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
