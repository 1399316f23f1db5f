"""An inverted-file (IVF) index over a view's int8 codes: dense search that reads a few lists.

At 1M chunks the exact first pass reads every eligible int8 code (384 MiB). An IVF groups
the rows by their nearest of ~sqrt(N) centroids (spherical k-means on a sample); a query
scores the centroids, reads only the codes of the nearest lists until it has seen enough
*eligible* rows, and re-scores the best candidates exactly in float32 (as the exact path does).

How many rows are "enough" is not guessed: when the IVF is built, stored vectors are used as
queries and their exact top 10 (themselves left out) is compared with what the lists in
centroid order reach; ``probe_share`` is the smallest share of the rows that finds
``TARGET_RECALL`` of those neighbours. Data without cluster structure (near-random vectors)
needs most of the rows; such an IVF is recorded as unusable and search stays exact.

A filter that leaves a share ``e`` of the rows makes the eligible top 10 lie, on average,
as deep as the unfiltered top ``10 / e``. So the calibration also records the share of rows
needed for the top 40, 160 and 640 (``depth_shares``), and a filtered query reads the share
of its depth (log-interpolated). A filter so selective that its depth is beyond 640, or
whose rows cost less to scan than that share, is searched exactly: the IVF is never trusted
beyond what was measured. (A filter whose rows gather away from the query's neighbourhood,
a tenant's few documents, say, is the case this guards against: probing "until enough
eligible rows are seen" found 0.67 of their exact top 10 at 1M chunks.)

Rows added after the build are not assigned to lists: they are kept in ``unassigned`` and
scanned in full by every query, and the IVF is rebuilt once they exceed ``REBUILD_SHARE`` of
the rows, so one ingest never re-clusters the index. Rows the catalog no longer has are
dropped from every array, and the centroid of a list that lost rows is recomputed from the
rows it still has, so nothing of an erased chunk stays in the IVF (see ``remap``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beleg.blas import one_blas_thread
from beleg.index import int8_pass

#: Views from this many chunks on get an IVF; below it the exact scan is cheap.
ANN_FROM = 50_000
#: Rows added since the last build may reach this share of all rows before it is rebuilt.
REBUILD_SHARE = 0.10
#: Share of the sampled queries' exact top-10 the probe depth must reach (the benchmark
#: measures recall on other queries; this leaves a margin above 0.99).
TARGET_RECALL = 0.995
#: An IVF that has to read more than this share of the rows is not faster than the exact scan.
MAX_PROBE_SHARE = 0.30
#: Neighbour depths the probe share is calibrated at (a filter of share e needs depth 10 / e).
DEPTHS = (10, 40, 160, 640)
#: A gathered row (a selective filter's exact scan) costs about this many rows read in order.
_GATHER_COST = 2.0
_CALIBRATION_QUERIES = 64
_TRAIN_PER_LIST = 40
_ITERATIONS = 8
_BLOCK = 16384
#: Candidates re-scored exactly: at least this many, and this many per hit (as the exact path).
RESCORE_MIN = 256
RESCORE_PER_HIT = 8

#: Arrays of a usable IVF, saved as ``ivf_<name>.npy`` beside the view.
FILES = ("centroids", "offsets", "members", "codes", "scales", "unassigned")


@dataclass
class IVF:
    centroids: np.ndarray  # float32 (lists, dim), unit length
    offsets: np.ndarray  # int64 (lists + 1,): list l holds members[offsets[l]:offsets[l+1]]
    members: np.ndarray  # int64 view positions grouped by list, ascending within a list
    codes: np.ndarray  # int8 (members, dim): the view's codes, in member order
    scales: np.ndarray  # float32 (members,)
    unassigned: np.ndarray  # int64 view positions added since the build (scanned in full)
    probe_share: float  # share of the eligible rows a query sees (calibrated at build)
    built_rows: int  # rows when the lists were built
    usable: bool = True
    stats: dict[str, Any] = field(default_factory=dict)

    def meta(self) -> dict[str, Any]:
        return {"probe_share": self.probe_share, "built_rows": self.built_rows, "usable": self.usable,
                "lists": len(self.centroids), **self.stats}

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in FILES}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> IVF:
        stats = {k: v for k, v in meta.items() if k not in ("probe_share", "built_rows", "usable", "lists")}
        return cls(**{name: arrays[name] for name in FILES}, probe_share=float(meta["probe_share"]),
                   built_rows=int(meta["built_rows"]), usable=bool(meta["usable"]), stats=stats)

    @classmethod
    def unusable(cls, dim: int, built_rows: int, probe_share: float, stats: dict[str, Any]) -> IVF:
        """An IVF that was built and found no faster than exact search (only its meta is kept)."""
        none = np.zeros(0, dtype=np.int64)
        return cls(np.zeros((0, dim), np.float32), np.zeros(1, np.int64), none, np.zeros((0, dim), np.int8),
                   np.zeros(0, np.float32), none, probe_share, built_rows, usable=False, stats=stats)

    def share_for_depth(self, depth: float) -> float | None:
        """Share of the rows to read for the top ``depth`` (None: beyond the calibrated depths)."""
        measured = self.stats.get("depth_shares") or [[DEPTHS[0], self.probe_share]]
        depths = [float(d) for d, _ in measured]
        shares = [float(v) for _, v in measured]
        if depth > depths[-1] * 1.0001:
            return None
        if depth <= depths[0]:
            return shares[0]
        return float(np.interp(math.log(depth), np.log(depths), shares))

    # ------------------------------------------------------------------ search
    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None, n_rows: int, vectors: np.ndarray,
               codes: np.ndarray, code_scales: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Top-k view positions among the eligible rows, or None when the exact scan is cheaper."""
        if not self.usable or k <= 0:
            return None
        eligible = n_rows if mask is None else int(np.count_nonzero(mask))
        share = self.share_for_depth(10 * n_rows / max(eligible, 1))
        if share is None:
            return None  # deeper than calibrated: exact
        exact_cost = n_rows if eligible >= 0.25 * n_rows else _GATHER_COST * eligible
        assigned = n_rows - len(self.unassigned)
        if share * assigned + _GATHER_COST * len(self.unassigned) >= 0.5 * exact_cost:
            return None
        query = np.asarray(query, dtype=np.float32)
        keep = max(RESCORE_MIN, RESCORE_PER_HIT * k)
        to_read = math.ceil(share * assigned)  # rows, eligible or not
        want = min(keep, eligible)  # and at least this many eligible candidates
        positions, coarse = [], []
        read = 0
        prepared = int8_pass.prepare(query)
        with one_blas_thread():
            order = np.argsort(-(self.centroids @ query))
            seen = 0
            for lst in order.tolist():
                a, b = int(self.offsets[lst]), int(self.offsets[lst + 1])
                if a == b:
                    continue
                rows = self.members[a:b]
                scores = np.empty(b - a, dtype=np.float32)
                int8_pass.score(self.codes[a:b], self.scales[a:b], prepared, scores)
                if mask is not None:
                    ok = mask[rows]
                    rows, scores = rows[ok], scores[ok]
                positions.append(rows)
                coarse.append(scores)
                seen += len(rows)
                read += b - a
                if read >= to_read and seen >= want:
                    break
            extra = self.unassigned if mask is None else self.unassigned[mask[self.unassigned]]
            if len(extra):
                positions.append(extra)
                for e in range(0, len(extra), int8_pass.BLOCK):
                    part = extra[e: e + int8_pass.BLOCK]
                    scores = np.empty(len(part), dtype=np.float32)
                    int8_pass.score(codes, code_scales, prepared, scores, rows=part)
                    coarse.append(scores)
        if not positions:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows, scores = np.concatenate(positions), np.concatenate(coarse)
        if len(rows) > keep:
            rows = rows[np.argpartition(-scores, keep - 1)[:keep]]
        candidates = np.sort(rows)
        exact = np.asarray(vectors[candidates], dtype=np.float32) @ query
        from beleg.index.bm25 import top_k

        idx, vals = top_k(exact, k)
        return candidates[idx], vals


# ----------------------------------------------------------------------------- build
def n_lists_for(n_rows: int) -> int:
    return max(16, int(round(math.sqrt(n_rows))))


def spherical_kmeans(sample: np.ndarray, n_lists: int, rng: np.random.Generator) -> np.ndarray:
    """Unit centroids of ``sample`` (k-means on cosine); an empty cluster takes a random row."""
    centroids = np.array(sample[rng.choice(len(sample), n_lists, replace=False)], dtype=np.float32)
    for _ in range(_ITERATIONS):
        labels = assign(sample, centroids)
        sums = np.zeros_like(centroids)
        np.add.at(sums, labels, sample)
        empty = np.flatnonzero(~sums.any(axis=1))
        sums[empty] = sample[rng.choice(len(sample), len(empty), replace=False)]
        centroids = _unit(sums)
    return centroids


def assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid (largest dot product) of every row, block by block."""
    out = np.empty(len(vectors), dtype=np.int64)
    for a in range(0, len(vectors), _BLOCK):
        block = np.asarray(vectors[a : a + _BLOCK], dtype=np.float32)
        out[a : a + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return out


def build(vectors: np.ndarray, codes: np.ndarray, scales: np.ndarray, seed: int = 0) -> IVF:
    """Cluster every row, calibrate the probe depth, and lay the codes out by list."""
    n, dim = vectors.shape
    rng = np.random.default_rng(seed)
    n_lists = min(n, n_lists_for(n))
    sample = np.asarray(vectors[np.sort(rng.choice(n, min(n, _TRAIN_PER_LIST * n_lists), replace=False))],
                        dtype=np.float32)
    labels = assign(vectors, spherical_kmeans(sample, n_lists, rng))
    # Centroids become the means of all their members: then they depend only on rows the
    # view holds (an erasure recomputes the lists it touches, see ``remap``).
    members = np.argsort(labels, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(labels, minlength=n_lists))]).astype(np.int64)
    centroids = _list_means(vectors, members, offsets, range(n_lists), np.zeros((n_lists, dim), np.float32))
    share, stats = calibrate(vectors, centroids, offsets, labels, rng)
    if share > MAX_PROBE_SHARE:
        return IVF.unusable(dim, n, share, stats)
    return IVF(centroids, offsets, members.astype(np.int64), _Gather(codes, members),  # type: ignore[arg-type]
               np.asarray(scales)[members], np.zeros(0, np.int64), share, n, stats=stats)


def calibrate(vectors: np.ndarray, centroids: np.ndarray, offsets: np.ndarray, labels: np.ndarray,
              rng: np.random.Generator) -> tuple[float, dict[str, Any]]:
    """The smallest share of rows read in centroid order that reaches ``TARGET_RECALL`` of the
    exact top 10 of sampled stored vectors (each one's own row left out), and the same for the
    top 40, 160 and 640 (``depth_shares``, for filtered queries)."""
    n = len(vectors)
    queries_at = rng.choice(n, min(n, _CALIBRATION_QUERIES), replace=False)
    queries = np.asarray(vectors[queries_at], dtype=np.float32)
    depth = min(n - 1, DEPTHS[-1]) + 1
    best = np.full((len(queries), depth), -np.inf, dtype=np.float32)
    best_at = np.zeros((len(queries), depth), dtype=np.int64)
    for a in range(0, n, _BLOCK):  # exact top `depth` of every query, one pass over the vectors
        scores = queries @ np.asarray(vectors[a : a + _BLOCK], dtype=np.float32).T
        both = np.concatenate([best, scores], axis=1)
        at = np.concatenate([best_at, np.arange(a, a + scores.shape[1])[None, :].repeat(len(queries), 0)], axis=1)
        top = np.argpartition(-both, depth - 1, axis=1)[:, :depth]
        best, best_at = np.take_along_axis(both, top, 1), np.take_along_axis(at, top, 1)
    sizes = np.diff(offsets)
    needs: dict[int, list[float]] = {d: [] for d in DEPTHS if d < n or d == DEPTHS[0]}
    for q, query in enumerate(queries):
        order = np.argsort(-(centroids @ query))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        read = np.cumsum(sizes[order])  # rows read once the list of rank r is done
        by_score = best_at[q][np.argsort(-best[q], kind="stable")]
        neighbours = [int(i) for i in by_score if int(i) != int(queries_at[q])]
        for d in needs:
            needs[d] += [read[rank[labels[i]]] / n for i in neighbours[:d]]
    shares: list[list[float]] = []
    for d, values in needs.items():
        values.sort()
        share = float(values[min(len(values) - 1, math.ceil(TARGET_RECALL * len(values)) - 1)]) if values else 1.0
        shares.append([d, max([share] + [s for _, s in shares])])  # a deeper top never needs fewer rows
    return shares[0][1], {"calibration_queries": len(queries), "median_need": float(np.median(needs[DEPTHS[0]])),
                          "depth_shares": shares}


def remap(ivf: IVF, kept: np.ndarray, n_rows: int, vectors: np.ndarray) -> IVF:
    """The IVF of a view whose row ``i`` was row ``kept[i]`` of the old one (rows from
    ``len(kept)`` on are new and go to ``unassigned``)."""
    if not ivf.usable:
        return ivf
    old_to_new = np.full(max(int(ivf.members.max(initial=-1)), int(ivf.unassigned.max(initial=-1)),
                             int(kept.max(initial=-1))) + 1, -1, dtype=np.int64)
    old_to_new[kept] = np.arange(len(kept))
    moved = old_to_new[ivf.members]
    stays = moved >= 0
    labels = np.repeat(np.arange(len(ivf.centroids)), np.diff(ivf.offsets))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(labels[stays], minlength=len(ivf.centroids)))])
    lost = np.flatnonzero(np.bincount(labels[~stays], minlength=len(ivf.centroids)))
    members = moved[stays]
    centroids = _list_means(vectors, members, offsets, lost.tolist(), np.array(ivf.centroids, dtype=np.float32))
    old_unassigned = old_to_new[ivf.unassigned]
    unassigned = np.concatenate([old_unassigned[old_unassigned >= 0], np.arange(len(kept), n_rows)])
    return IVF(centroids, offsets.astype(np.int64), members, _Gather(ivf.codes, np.flatnonzero(stays)),  # type: ignore[arg-type]
               np.asarray(ivf.scales)[stays], unassigned.astype(np.int64), ivf.probe_share, ivf.built_rows,
               stats=ivf.stats)


def updated(base: IVF | None, kept: np.ndarray | None, vectors: np.ndarray, codes: np.ndarray,
            scales: np.ndarray) -> IVF | None:
    """The IVF of a new view: none below ``ANN_FROM`` rows, the old one remapped while the rows
    added since its build stay under ``REBUILD_SHARE``, else a new build."""
    n = len(vectors)
    if n < ANN_FROM:
        return None
    if base is not None and kept is not None:
        if not base.usable and n < base.built_rows * (1 + REBUILD_SHARE):
            return base  # an unusable IVF is tried again only after the index grew
        if base.usable:
            moved = remap(base, kept, n, vectors)
            if len(moved.unassigned) <= REBUILD_SHARE * n:
                return moved
    return build(vectors, codes, scales)


class _Gather:
    """Rows ``which`` of ``matrix``, materialised only when written (block by block)."""

    def __init__(self, matrix: np.ndarray, which: np.ndarray) -> None:
        self.matrix, self.which = matrix, which
        self.shape = (len(which), matrix.shape[1])
        self.dtype = matrix.dtype

    def blocks(self) -> Any:
        for a in range(0, len(self.which), 65536):
            yield np.asarray(self.matrix[self.which[a : a + 65536]])


def save_array(path: Any, array: Any) -> None:
    """``np.save``, writing a :class:`_Gather` block by block."""
    if not isinstance(array, _Gather):
        np.save(path, np.ascontiguousarray(array))
        return
    out = np.lib.format.open_memmap(path, mode="w+", dtype=array.dtype, shape=array.shape)
    at = 0
    for block in array.blocks():
        out[at : at + len(block)] = block
        at += len(block)
    out.flush()
    del out


def _list_means(vectors: np.ndarray, members: np.ndarray, offsets: np.ndarray, lists: Any,
                centroids: np.ndarray) -> np.ndarray:
    """``centroids`` with the listed lists set to the unit mean of their members (an empty
    list's centroid becomes zero: it is never nearest, and no longer describes erased rows)."""
    for lst in lists:
        a, b = int(offsets[lst]), int(offsets[lst + 1])
        if a == b:
            centroids[lst] = 0.0
            continue
        total = np.asarray(vectors[np.sort(members[a:b])], dtype=np.float64).sum(axis=0)
        norm = np.linalg.norm(total)
        centroids[lst] = (total / norm if norm > 0 else total).astype(np.float32)
    return centroids


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.where(norms > 0, norms, 1.0)).astype(np.float32)
