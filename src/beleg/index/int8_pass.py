"""The int8 first pass of dense search: approximate dot products of int8 codes with a query.

The persisted view keeps each vector as int8 codes with a per-row scale
(``vector ≈ codes * scale``). The first pass scores eligible rows on those codes and only
chooses candidates; the exact float32 scores of the best of them decide the result
(:meth:`beleg.index.snapshot.Snapshot._compact_search`, the IVF lists in
:mod:`beleg.index.ann`). Two kernels do the pass:

* ``simsimd`` (when its wheel is installed, a core dependency): C kernels chosen at run time
  for this CPU's instruction set (AVX2 "haswell", AVX-512 "skylake"/"ice", AVX-512 VNNI/BF16
  "genoa", NEON/SVE on Arm) that multiply int8 by int8 and accumulate exactly in int32,
  reading each code once. The query is quantised to int8 for it (symmetric, one scale per
  query), which adds a second, smaller rounding to the pass; the exact re-scoring of
  max(256, 8k) candidates absorbs it (recall against exact search is measured in
  ``benchmarks/open_latency.py`` and tested in ``tests/index/test_int8_pass.py``).
  At 1M x 384 rows on one core: ~21 ms, against ~75 ms for numpy's widening
  (``benchmarks/dense_scan.py`` measures both against the memory-read ceiling).
* ``numpy``: widen each block of codes to float32 and multiply by the float32 query (the
  pass before simsimd; the fallback where no simsimd wheel installs).

``BELEG_INT8_KERNEL=numpy`` (or ``simsimd``) forces one, for A/B measurements; ``beleg
status`` shows which one runs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from beleg.errors import ConfigError

_simsimd: Any
try:
    import simsimd as _simsimd
except ImportError:  # no wheel for this platform: the numpy kernel does the same job, slower
    _simsimd = None

#: Rows per gathered block: 1.5 MiB of int8 codes (6 MiB widened to float32 by numpy) stays in cache.
BLOCK = 4096


def _choose() -> str:
    forced = os.environ.get("BELEG_INT8_KERNEL", "").strip().lower()
    if forced not in ("", "numpy", "simsimd"):
        raise ConfigError(f"BELEG_INT8_KERNEL={forced!r}: use 'simsimd' or 'numpy'")
    if forced == "simsimd" and _simsimd is None:
        raise ConfigError("BELEG_INT8_KERNEL=simsimd but simsimd is not installed: pip install simsimd")
    if forced == "numpy" or _simsimd is None:
        return "numpy"
    return "simsimd"


KERNEL = _choose()


def simsimd_levels() -> list[str]:
    """The instruction-set levels simsimd may use on this CPU and has enabled, best first
    ("genoa", "ice", "skylake", "haswell"; plain C, "serial", is not among them)."""
    if _simsimd is None:
        return []
    return [name for name, on in _simsimd.get_capabilities().items() if on and name != "serial"][::-1]


def describe() -> str:
    """The kernel in use, for ``beleg status`` and benchmark records."""
    if KERNEL == "numpy":
        reason = "forced by BELEG_INT8_KERNEL" if _simsimd is not None else "simsimd not installed"
        return f"numpy (float32 widening; {reason})"
    version = getattr(_simsimd, "__version__", "?")
    return f"simsimd {version} ({', '.join(simsimd_levels()[::-1]) or 'serial'})"


@dataclass(frozen=True)
class Query:
    """A query prepared for the kernel: int8 codes and their scale (simsimd) or float32 (numpy)."""

    values: np.ndarray
    scale: float


def prepare(query: np.ndarray) -> Query:
    query = np.asarray(query, dtype=np.float32)
    if KERNEL == "numpy":
        return Query(query, 1.0)
    peak = float(np.abs(query).max()) if query.size else 0.0
    if peak == 0.0:
        return Query(np.zeros((1, query.size), dtype=np.int8), 0.0)
    scale = peak / 127.0
    return Query(np.rint(query / scale).astype(np.int8).reshape(1, -1), scale)


_local = threading.local()


def _gather_buffer(dim: int) -> np.ndarray:
    buf: np.ndarray | None = getattr(_local, "buf", None)
    if buf is None or buf.shape[1] != dim:
        buf = _local.buf = np.empty((BLOCK, dim), dtype=np.int8)
    return buf


def score(codes: np.ndarray, scales: np.ndarray, query: Query, out: np.ndarray,
          rows: np.ndarray | None = None) -> None:
    """Write ``≈ vectors[rows] @ query`` (all of ``codes`` when ``rows`` is None) into ``out``.

    ``rows`` selects at most :data:`BLOCK` rows (gathered into a per-thread buffer); without
    it ``codes`` is taken as given (a contiguous slice scores in place, nothing is copied).
    """
    if rows is not None:
        if len(rows) > BLOCK:
            raise ValueError(f"at most {BLOCK} gathered rows per call, got {len(rows)}")
        block = np.take(codes, rows, axis=0, out=_gather_buffer(codes.shape[1])[: len(rows)])
        row_scales = scales[rows]
    else:
        block, row_scales = codes, scales
    if len(block) == 0:
        return
    if KERNEL == "numpy":
        np.multiply(block.astype(np.float32) @ query.values, row_scales, out=out)
        return
    assert _simsimd is not None
    # Never cdist(out=...): simsimd 6.5.16 returns None from it without taking a reference,
    # so None's count falls by one per call until the interpreter aborts ("none_dealloc";
    # tests/index/test_int8_pass.py guards this). The block's result is small; it is copied.
    dots = np.asarray(_simsimd.cdist(query.values, block, metric="dot", out_dtype="float32")).reshape(-1)
    np.multiply(dots, row_scales, out=out)
    out *= np.float32(query.scale)
