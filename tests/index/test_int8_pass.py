"""The int8 first pass of dense search: both kernels, the candidate cut, and simsimd's refcount bug."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from beleg.index import int8_pass
from beleg.index.snapshot import best_positions

KERNELS = ["numpy", "simsimd"]  # simsimd is a core dependency: its absence fails, never skips


def _codes(rng: np.random.Generator, n: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    peak = np.abs(vectors).max(axis=1)
    scales = (peak / 127.0).astype(np.float32)
    codes = np.rint(vectors / scales[:, None]).astype(np.int8)
    return vectors, codes, scales


@pytest.mark.parametrize("kernel", KERNELS)
def test_both_kernels_approximate_the_exact_product_and_gather_the_same_rows(monkeypatch, kernel):
    monkeypatch.setattr(int8_pass, "KERNEL", kernel)
    rng = np.random.default_rng(3)
    vectors, codes, scales = _codes(rng, 3000, 384)
    query = rng.normal(size=384).astype(np.float32)
    query /= np.linalg.norm(query)
    prepared = int8_pass.prepare(query)
    full = np.empty(3000, dtype=np.float32)
    int8_pass.score(codes, scales, prepared, full)
    exact = vectors @ query
    # Two roundings (rows, and with simsimd the query): far below the gaps re-scoring must bridge.
    assert np.abs(full - exact).max() < 0.01
    rows = np.sort(rng.choice(3000, size=int8_pass.BLOCK - 96 if 3000 > int8_pass.BLOCK else 700, replace=False))
    gathered = np.empty(len(rows), dtype=np.float32)
    int8_pass.score(codes, scales, prepared, gathered, rows=rows)
    np.testing.assert_array_equal(gathered, full[rows])


def test_simsimd_kernel_sums_int8_products_exactly():
    rng = np.random.default_rng(4)
    codes = rng.integers(-127, 128, size=(500, 384), dtype=np.int8)
    values = rng.integers(-127, 128, size=(1, 384), dtype=np.int8)
    query = int8_pass.Query(values, 1.0)
    out = np.empty(500, dtype=np.float32)
    int8_pass.KERNEL, before = "simsimd", int8_pass.KERNEL
    try:
        int8_pass.score(codes, np.ones(500, dtype=np.float32), query, out)
    finally:
        int8_pass.KERNEL = before
    np.testing.assert_array_equal(out.astype(np.int64), codes.astype(np.int64) @ values[0].astype(np.int64))


@pytest.mark.parametrize("kernel", KERNELS)
def test_scoring_never_drops_a_reference_to_none(monkeypatch, kernel):
    # simsimd 6.5.16's cdist(out=...) returns None without a reference: a few thousand calls
    # free None and abort the interpreter. The kernel must not take that path.
    monkeypatch.setattr(int8_pass, "KERNEL", kernel)
    rng = np.random.default_rng(5)
    _, codes, scales = _codes(rng, 64, 32)
    prepared = int8_pass.prepare(rng.normal(size=32).astype(np.float32))
    out = np.empty(64, dtype=np.float32)
    before = sys.getrefcount(None)
    for _ in range(2000):
        int8_pass.score(codes, scales, prepared, out)
        int8_pass.score(codes, scales, prepared, out[:8], rows=np.arange(8))
    assert sys.getrefcount(None) >= before - 50  # other threads may hold a few; 4,000 lost would show


def test_a_zero_query_scores_zero():
    int8_pass.KERNEL, before = "simsimd", int8_pass.KERNEL
    try:
        prepared = int8_pass.prepare(np.zeros(16, dtype=np.float32))
        out = np.full(4, 7.0, dtype=np.float32)
        int8_pass.score(np.ones((4, 16), dtype=np.int8), np.ones(4, dtype=np.float32), prepared, out)
    finally:
        int8_pass.KERNEL = before
    assert (out == 0).all()


def test_more_rows_than_a_block_are_refused():
    codes = np.zeros((int8_pass.BLOCK + 1, 4), dtype=np.int8)
    with pytest.raises(ValueError, match="at most"):
        int8_pass.score(codes, np.ones(len(codes), dtype=np.float32), int8_pass.prepare(np.ones(4)),
                        np.empty(len(codes), dtype=np.float32), rows=np.arange(len(codes)))


def test_the_kernel_can_be_forced_and_a_wrong_name_is_an_error():
    env = {**os.environ, "BELEG_INT8_KERNEL": "numpy"}
    code = "from beleg.index import int8_pass; print(int8_pass.KERNEL, '|', int8_pass.describe())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("numpy |") and "forced" in out
    default = subprocess.run([sys.executable, "-c", code], env={k: v for k, v in os.environ.items()
                             if k != "BELEG_INT8_KERNEL"}, capture_output=True, text=True, check=True).stdout
    assert default.startswith("simsimd |")
    bad = subprocess.run([sys.executable, "-c", code], env={**os.environ, "BELEG_INT8_KERNEL": "avx9"},
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "BELEG_INT8_KERNEL='avx9'" in bad.stderr


@pytest.mark.parametrize("n, keep", [(1_000, 256), (50_000, 400), (200_000, 256), (300, 256), (256, 256), (10, 256)])
def test_best_positions_always_contain_the_best_keep(n, keep):
    rng = np.random.default_rng(n)
    for trial in range(4):
        scores = rng.normal(size=n).astype(np.float32)
        if trial == 1:  # most rows masked out
            scores[rng.random(n) < 0.8] = -np.inf
        if trial == 2:  # heavy ties
            scores = np.round(scores, 1)
        if trial == 3:  # the best rows bunched where the sample looks least
            scores[1::16] += 3.0
        got = best_positions(scores, keep)
        assert len(set(got.tolist())) == len(got) >= min(keep, n)
        best = np.argsort(-scores, kind="stable")[: min(keep, n)]
        kth = scores[best].min()
        # Every row strictly above the keep-th score is in; ties at it may be either way.
        assert set(np.flatnonzero(scores > kth).tolist()) <= set(got.tolist())


@pytest.mark.parametrize("level", [*int8_pass.simsimd_levels(), "serial"])
def test_every_instruction_set_level_this_cpu_has_sums_exactly(level):
    # Machines differ (AVX2 only, AVX-512, VNNI; NEON/SVE on Arm): each level simsimd may pick
    # elsewhere is run here too, by switching off the levels above it, and must agree exactly.
    import simsimd

    levels = int8_pass.simsimd_levels()  # best first
    above = levels[: levels.index(level)] if level in levels else levels
    rng = np.random.default_rng(6)
    codes = rng.integers(-127, 128, size=(777, 384), dtype=np.int8)
    values = rng.integers(-127, 128, size=(1, 384), dtype=np.int8)
    before = simsimd.get_capabilities()
    try:
        for name in above:
            simsimd.disable_capability(name)
        assert all(not simsimd.get_capabilities()[name] for name in above)
        got = np.asarray(simsimd.cdist(values, codes, metric="dot", out_dtype="float32")).reshape(-1)
    finally:
        for name in above:
            simsimd.enable_capability(name)
    np.testing.assert_array_equal(got.astype(np.int64), codes.astype(np.int64) @ values[0].astype(np.int64))
    assert simsimd.get_capabilities() == before  # the other tests run at the best level again
