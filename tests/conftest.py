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


@pytest.fixture(scope="session")
def demo_kb(tmp_path_factory: pytest.TempPathFactory, embedder):
    """The bundled demo corpus, ingested once per test session with the real embedder."""
    import beleg

    kb = beleg.open(tmp_path_factory.mktemp("demo") / "kb", embedder=embedder)
    report = kb.ingest([str(DEMO / "corpus")], progress=False)
    assert report.count("failed") == 0, report.failures
    yield kb
    kb.close()
