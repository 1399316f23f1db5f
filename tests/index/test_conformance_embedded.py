"""The embedded backend (SQLite catalog + snapshot) against the backend conformance suite."""

from __future__ import annotations

from pathlib import Path

from beleg.index.catalog import Catalog
from beleg.index.embedded import EmbeddedStore
from beleg.index.ports import SearchIndex, Store
from beleg.testing.conformance import DIM, StoreConformance


class TestEmbeddedConformance(StoreConformance):
    def open_store(self, location: Path) -> Store:
        location.mkdir(parents=True, exist_ok=True)
        return EmbeddedStore(Catalog(location / "catalog.sqlite"), dim=DIM)


def test_the_embedded_classes_satisfy_the_protocols(tmp_path: Path) -> None:
    store = TestEmbeddedConformance().open_store(tmp_path / "i")
    try:
        assert isinstance(store, Store) and isinstance(store.read_view(), SearchIndex)
    finally:
        store.close()
