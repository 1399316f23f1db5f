from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo"
READER_DATA = Path(__file__).parent / "data" / "readers"


@pytest.fixture(scope="session")
def embedder():
    """The real offline default embedder, loaded once per test session."""
    from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder

    return load_embedder(DEFAULT_EMBEDDER)
