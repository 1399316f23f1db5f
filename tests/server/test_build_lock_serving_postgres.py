"""`beleg reindex` on a PostgreSQL index while a server runs: as over an index folder, uploads
and deletions through the server are refused with 409 `index_busy` until the build is done
(the new version would miss them), searches keep answering, and afterwards both go through."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import beleg
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig
from beleg.ingest.pipeline import TextSource
from tests.postgres.conftest import pg_location, postgres_url, version_root  # noqa: F401  (fixtures)
from tests.server.conftest import bearer, run_server

pytest.importorskip("psycopg", reason='the PostgreSQL tests need beleg[postgres]: pip install -e ".[postgres]"')

# Long enough that the new version's 60-token windows are new chunk texts, which it embeds.
FILLER = " ".join(f"Step {i} of the procedure checks valve {i} and records its pressure." for i in range(30))




class ServerCallsDuringBuild:
    """An embedder that, at the build's first embedding, uploads and deletes through the server."""

    def __init__(self, inner: Any, url: str, keys: dict[str, str], doc_id: str) -> None:
        self._inner, self.url, self.keys, self.doc_id = inner, url, keys, doc_id
        self.replies: dict[str, httpx.Response] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_documents(self, texts: Any) -> Any:
        if not self.replies:
            self.replies["upload"] = httpx.post(
                f"{self.url}/v1/ingest", files=[("files", ("during.md", b"# During\n\nfrobnitz-2.\n", "text/markdown"))],
                headers=bearer(self.keys["acme_ingest"]), timeout=120)
            self.replies["delete"] = httpx.delete(f"{self.url}/v1/documents/{self.doc_id}",
                                                  headers=bearer(self.keys["acme_admin"]), timeout=120)
            self.replies["search"] = httpx.post(f"{self.url}/v1/search", json={"query": "frobnitz", "mode": "bm25"},
                                                headers=bearer(self.keys["acme"]), timeout=60)
        return self._inner.embed_documents(texts)


def test_uploads_and_deletions_through_a_server_are_refused_while_a_reindex_builds(
        root, embedder, auth_config, api_keys, tmp_path) -> None:
    from beleg.server import ServerSettings, create_app

    kb = beleg.open(root.url, embedder=embedder)
    kb.ingest_texts([TextSource("before.md", f"# Before\n\nfrobnitz-1. {FILLER}\n", {"tenant": "acme"})],
                    progress=False)
    doc_id = kb.store.document_records()[0].doc_id
    app = create_app(kb, auth_config, ServerSettings(rate_per_second=1000, burst=1000, upload_dir=tmp_path / "up"))
    kb.close()
    with run_server(app) as url:
        with beleg.open(root.url, embedder=embedder) as builder:
            spy = ServerCallsDuringBuild(embedder, url, api_keys, doc_id)
            builder.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False, embedder=spy)
        for name in ("upload", "delete"):
            r = spy.replies[name]
            assert r.status_code == 409 and r.json()["error"]["type"] == "index_busy", (name, r.text)
        assert spy.replies["search"].status_code == 200 and spy.replies["search"].json()["hits"]
        # After the build, both go through (the server opened the live schema, still live).
        r = httpx.post(f"{url}/v1/ingest", files=[("files", ("during.md", b"# During\n\nfrobnitz-2.\n",
                                                             "text/markdown"))],
                       headers=bearer(api_keys["acme_ingest"]), timeout=120)
        assert r.status_code == 200 and r.json()["added"] == 1, r.text
        r = httpx.delete(f"{url}/v1/documents/{doc_id}", headers=bearer(api_keys["acme_admin"]), timeout=120)
        assert r.status_code == 200 and [v["documents"] for v in r.json()["versions"]] == [1, 1], r.text
