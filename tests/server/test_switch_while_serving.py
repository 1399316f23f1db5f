"""`beleg reindex` + `beleg switch` (+ `beleg gc`) while a server runs: the server keeps
answering from the version it opened, refuses uploads with 409 (they would land in a version
no one opens any more, lost at the next restart), and gc keeps that version until the server
stops."""

from __future__ import annotations

import httpx
import pytest

from beleg.cli.main import main
from beleg.index import versions
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig
from beleg.ingest.pipeline import TextSource
from beleg.server.auth import ApiKey, AuthConfig, hash_key
from tests.server.conftest import DOCS, bearer

KEYS = {"k-acme": ("ingo", "acme", ("acme-ops",), ("ingest", "read")),
        "k-operator": ("root", None, (), ("admin",))}


@pytest.fixture()
def index(tmp_path, embedder):
    import beleg

    corpus = tmp_path / "corpus"
    (corpus / "public").mkdir(parents=True)
    (corpus / "public" / "errors.md").write_text(DOCS["public/errors.md"], encoding="utf-8")
    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    kb.ingest([str(corpus)], progress=False)
    yield kb
    kb.close()


def upload(url: str, key: str, name: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/ingest", files=[("files", (name, body, "text/markdown"))], headers=bearer(key),
                      timeout=120)


@pytest.mark.parametrize("upload_first", [True, False], ids=["writer-open", "writer-opens-after-the-switch"])
def test_after_a_switch_uploads_are_refused_and_gc_keeps_the_servers_version(index, embedder, start_server,
                                                                            tmp_path, capsys, upload_first):
    import beleg
    from beleg.server import ServerSettings

    root, old = index.root, index.config.index_version
    auth = AuthConfig(tuple(ApiKey(hash_key(k), u, t, g, frozenset(s)) for k, (u, t, g, s) in KEYS.items()),
                      None, tmp_path / "auth.toml")
    uploads = tmp_path / "uploads"
    with start_server(ServerSettings(upload_dir=uploads), auth=auth, index=index) as url:
        if upload_first:
            assert upload(url, "k-acme", "before.md", b"# Before\n\nWritten before the switch, frobnitz-1.\n"
                          ).json()["added"] == 1
        else:  # the server has not written yet: its writer opens the index only after the switch
            index.ingest_texts([TextSource("before.md", "# Before\n\nWritten before the switch, frobnitz-1.\n")])
        with beleg.open(root, embedder=embedder) as builder:
            new = builder.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)["version"]
        versions.switch(root, new)

        r = upload(url, "k-acme", "after.md", b"# After\n\nWritten after the switch, frobnitz-2.\n")
        assert r.status_code == 409 and r.json()["error"]["type"] == "index_switched", r.text
        assert "restart" in r.json()["error"]["message"] and str(root) not in r.json()["error"]["message"]
        assert not (uploads / "acme" / "@ingo" / "after.md").exists()  # the refused file is not kept
        # Searches still answer from the version the server opened.
        r = httpx.post(f"{url}/v1/search", json={"query": "frobnitz", "mode": "bm25"}, headers=bearer("k-acme"),
                       timeout=60)
        assert r.status_code == 200 and any("frobnitz-1" in h["text"] for h in r.json()["hits"]), r.text

        # gc keeps the version the server holds open, and says why.
        assert main(["gc", "--index", str(root)]) == 0
        err = capsys.readouterr().err
        assert f"kept version {old}" in err and "beleg serve" in err, err
        assert (root / "catalog.sqlite").exists()
        r = httpx.post(f"{url}/v1/search", json={"query": "frobnitz", "mode": "bm25"}, headers=bearer("k-acme"),
                       timeout=60)
        assert r.status_code == 200, r.text
    index.close()
    # Once the server has stopped, nothing holds the old version.
    removed = versions.collect(root)
    assert [v.version for v in removed.removed] == [old] and removed.kept == []
    with beleg.open(root, embedder=embedder) as kb:
        assert kb.config.index_version == new
        assert not any(source.endswith("after.md") for _, source, _ in kb.catalog.documents_meta())
