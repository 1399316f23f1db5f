from __future__ import annotations

import numpy as np
import pytest

from beleg.errors import ConfigError
from beleg.retrieve.fusion import rrf, weighted
from beleg.retrieve.mmr import mmr


def test_rrf_reproduces_reference_example() -> None:
    fused = rrf([["D7", "D2", "D9", "D4"], ["D2", "D5", "D7", "D1"]], k=60)
    assert [d for d, _ in fused] == ["D2", "D7", "D5", "D9", "D4", "D1"]
    scores = dict(fused)
    assert scores["D2"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["D7"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["D1"] == pytest.approx(1 / 64)


def test_rrf_k_and_weights_are_configurable() -> None:
    fused = dict(rrf([["a", "b"], ["b", "a"]], k=0, weights=[2.0, 1.0]))
    assert fused["a"] == pytest.approx(2 / 1 + 1 / 2)
    assert fused["b"] == pytest.approx(2 / 2 + 1 / 1)
    with pytest.raises(ConfigError):
        rrf([["a"]], weights=[1.0, 2.0])


def test_weighted_fusion_normalises_each_list() -> None:
    fused = weighted([[("a", 10.0), ("b", 5.0), ("c", 0.0)], [("c", 0.9), ("a", 0.1)]], weights=[1.0, 1.0])
    scores = dict(fused)
    assert scores == pytest.approx({"a": 1.0, "b": 0.5, "c": 1.0})
    assert [d for d, _ in fused] == ["a", "c", "b"]


def test_mmr_prefers_diverse_candidates() -> None:
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    rel = np.array([1.0, 0.99, 0.9])
    assert mmr(rel, v, 2, lam=1.0) == [0, 1]
    assert mmr(rel, v, 2, lam=0.5) == [0, 2]
