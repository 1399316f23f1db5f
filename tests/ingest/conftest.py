"""Fixtures of the ingest tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import beleg


@pytest.fixture()
def kb(tmp_path: Path, embedder):
    """A fresh, empty index per test (the real embedding model, loaded once per session)."""
    base = beleg.open(tmp_path / "kb", embedder=embedder)
    yield base
    base.close()
