"""The OpenAI-compatible remote embedder, over real HTTP against the local fake server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import beleg
from beleg.backends.embedders import load_embedder
from beleg.backends.embedders.remote import RemoteEmbedder, parse_spec
from beleg.errors import ConfigError, IndexVersionError, ModelError
from beleg.index.config import IndexConfig
from beleg.ingest.pipeline import TextSource
from beleg.testing.embeddings_server import FakeEmbeddingsServer, delay, disconnect, fake_vector, garbage, status


@pytest.fixture
def server():
    with FakeEmbeddingsServer(dim=12) as fake:
        yield fake


@pytest.fixture(autouse=True)
def _no_key_env(monkeypatch):
    for name in ("BELEG_EMBED_API_KEY", "OPENAI_API_KEY", "BELEG_EMBED_BASE_URL", "BELEG_EMBED_BATCH",
                 "BELEG_EMBED_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)


def test_spec_syntax() -> None:
    assert parse_spec("text-embedding-3-small") == ("text-embedding-3-small", "https://api.openai.com/v1")
    assert parse_spec("bge-m3@http://gpu:8080/v1/") == ("bge-m3", "http://gpu:8080/v1")
    with pytest.raises(ConfigError, match="names no model"):
        parse_spec("@http://gpu:8080/v1")
    with pytest.raises(ConfigError, match="not an http"):
        parse_spec("m@ftp://gpu/v1")
    with pytest.raises(ConfigError, match="credentials"):
        parse_spec("m@http://user:secret@gpu:8080/v1")


def test_vectors_match_the_server_in_input_order_and_dim_is_probed(server) -> None:
    embedder = load_embedder(f"openai:m1@{server.base_url}")
    assert isinstance(embedder, RemoteEmbedder) and embedder.dim == 12
    texts = [f"text number {i}" for i in range(5)]
    out = embedder.embed_documents(texts)
    assert out.dtype == np.float32 and out.shape == (5, 12)
    # The fake answers in reverse order with an index per item: the client must sort.
    np.testing.assert_allclose(out, np.stack([fake_vector(t, 12) for t in texts]), atol=1e-6)
    np.testing.assert_allclose(embedder.embed_queries(["q"])[0], fake_vector("q", 12), atol=1e-6)
    assert embedder.fingerprint == "openai-embeddings:127.0.0.1:m1:12"
    assert all(r.json["model"] == "m1" and r.path == "/v1/embeddings" for r in server.requests)


def test_batches_and_the_concurrency_limit(tmp_path: Path) -> None:
    with FakeEmbeddingsServer(dim=4, latency_s=0.05) as fake:
        embedder = RemoteEmbedder(f"m@{fake.base_url}", batch_size=3, concurrency=2)
        fake.requests.clear()
        fake.max_in_flight = 0
        texts = [f"t{i}" for i in range(20)]
        out = embedder.embed_documents(texts)
        np.testing.assert_allclose(out, np.stack([fake_vector(t, 4) for t in texts]), atol=1e-6)
        sizes = [len(r.json["input"]) for r in fake.requests]
        assert sorted(sizes) == [2, 3, 3, 3, 3, 3, 3] and len(fake.requests) == 7
        assert fake.max_in_flight == 2  # concurrent, but never more than the limit


def test_429_and_5xx_are_retried_honouring_retry_after(server) -> None:
    embedder = RemoteEmbedder(f"m@{server.base_url}", backoff_base_s=0)
    server.requests.clear()
    server.fail(status(429, retry_after=0.3), status(500), status(503))
    start = time.monotonic()
    out = embedder.embed_documents(["alpha"])
    assert time.monotonic() - start >= 0.3  # waited as Retry-After said
    np.testing.assert_allclose(out[0], fake_vector("alpha", 12), atol=1e-6)
    assert len(server.requests) == 4


def test_timeouts_and_dropped_connections_are_retried(server) -> None:
    embedder = RemoteEmbedder(f"m@{server.base_url}", backoff_base_s=0, timeout_s=0.2)
    server.fail(delay(1.0), disconnect())
    np.testing.assert_allclose(embedder.embed_documents(["beta"])[0], fake_vector("beta", 12), atol=1e-6)


def test_gives_up_with_one_clear_error(server) -> None:
    embedder = RemoteEmbedder(f"m@{server.base_url}", backoff_base_s=0, max_retries=2)
    server.fail(*[status(503)] * 3)
    with pytest.raises(ModelError, match=r"remote embedder 'm': .*HTTP 503 after 3 attempts"):
        embedder.embed_documents(["x"])
    server.fail(status(400, message="bad field"))
    with pytest.raises(ModelError, match="HTTP 400.*bad field"):  # not worth retrying
        embedder.embed_documents(["x"])
    server.fail(garbage())
    with pytest.raises(ModelError, match="not JSON"):
        embedder.embed_documents(["x"])


def test_the_api_key_comes_from_the_environment(monkeypatch) -> None:
    with FakeEmbeddingsServer(dim=4, api_key="sk-test") as fake:
        with pytest.raises(ModelError, match="BELEG_EMBED_API_KEY"):
            RemoteEmbedder(f"m@{fake.base_url}")
        monkeypatch.setenv("BELEG_EMBED_API_KEY", "sk-test")
        assert RemoteEmbedder(f"m@{fake.base_url}").embed_documents(["k"]).shape == (1, 4)
        assert fake.requests[-1].headers["authorization"] == "Bearer sk-test"


def test_a_changed_dimension_is_refused(server) -> None:
    embedder = RemoteEmbedder(f"m@{server.base_url}")
    server.dim = 6  # the server now serves another model under the same name
    with pytest.raises(ModelError, match="6-dimensional vectors.*uses 12"):
        embedder.embed_documents(["y"])


def test_an_index_records_the_model_keeps_no_key_and_refuses_another(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BELEG_EMBED_API_KEY", "sk-never-stored")
    with FakeEmbeddingsServer(dim=8, api_key="sk-never-stored") as fake:
        spec = f"openai:m1@{fake.base_url}"
        folder = tmp_path / "kb"
        with beleg.open(folder, IndexConfig(embedder=spec)) as kb:
            kb.ingest_texts([TextSource("a", "# A\n\nRelays trip on overcurrent.")], progress="none")
            hits = kb.search("relays", mode="dense", k=1)
            assert hits and hits[0].doc_id
            assert kb.status()["embedder_fingerprint"] == "openai-embeddings:127.0.0.1:m1:8"
        stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
        assert b"sk-never-stored" not in stored
        # Same config, another model behind it (here: another dimension): refused, not mixed.
        with FakeEmbeddingsServer(dim=8) as other:
            wrong = RemoteEmbedder(f"m2@{other.base_url}")
            with beleg.open(folder, create=False, embedder=wrong) as kb, pytest.raises(IndexVersionError):
                kb.search("relays", mode="dense", k=1)


def test_cli_ingest_and_search_through_the_remote_embedder(tmp_path: Path, server, capsys) -> None:
    from beleg.cli.main import main

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Pumps\n\nThe pump needs oil every month.\n")
    index = str(tmp_path / "kb")
    assert main(["init", "--index", index, "--embedder", f"openai:m1@{server.base_url}", "--json"]) == 0
    capsys.readouterr()
    assert main(["ingest", str(tmp_path / "docs"), "--index", index, "--json", "--progress", "none"]) == 0
    assert json.loads(capsys.readouterr().out)["embedded"] == 1
    assert main(["search", "pump oil", "--index", index, "--mode", "dense", "--json"]) == 0
    assert "pump" in capsys.readouterr().out
