"""`beleg reindex` + `beleg switch` (+ `beleg gc`) on a PostgreSQL index while a server runs:
as over an index folder (test_switch_while_serving.py), the server keeps answering from the
schema it opened, refuses uploads with 409 `index_switched` (they would land in a schema no
one opens any more), erases a deleted document from every version, and gc keeps its schema
until the server stops."""

from __future__ import annotations

from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import sql

import beleg
from beleg.cli.main import main
from beleg.index.config import IndexConfig
from beleg.index.postgres import versions as pg_versions
from beleg.index.postgres.config import PostgresLocation
from beleg.ingest.chunking import ChunkingConfig
from beleg.ingest.pipeline import TextSource
from tests.postgres.conftest import pg_location, postgres_url, version_root  # noqa: F401  (fixtures)
from tests.server.conftest import bearer, run_server

pytest.importorskip("psycopg", reason='the PostgreSQL tests need beleg[postgres]: pip install -e ".[postgres]"')




def upload(url: str, key: str, name: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/ingest", files=[("files", (name, body, "text/markdown"))], headers=bearer(key),
                      timeout=120)


def search(url: str, key: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/search", json={"query": "frobnitz", "mode": "bm25"}, headers=bearer(key), timeout=60)


def stored(root: PostgresLocation) -> dict[str, list[str]]:
    """Every version's stored document sources (file names), read from the database."""
    with psycopg.connect(root.conninfo, autocommit=True) as conn:
        return {v.schema: sorted(Path(r[0]).name for r in conn.execute(sql.SQL("SELECT source FROM {}.documents")
                                                                       .format(sql.Identifier(v.schema))))
                for v in pg_versions.list_versions(conn, root.schema)}


@pytest.mark.parametrize("upload_first", [True, False], ids=["writer-open", "writer-opens-after-the-switch"])
def test_after_a_switch_uploads_are_refused_deletes_reach_every_version_and_gc_keeps_the_servers_schema(
        root, embedder, auth_config, api_keys, tmp_path, capsys, upload_first) -> None:
    from beleg.server import ServerSettings, create_app

    uploads = tmp_path / "uploads"
    kb = beleg.open(root.url, embedder=embedder)
    old_version, old_schema = kb.config.index_version, kb.store.schema
    app = create_app(kb, auth_config, ServerSettings(rate_per_second=1000, burst=1000, upload_dir=uploads))
    kb.close()  # the app opened its own connections on its threads
    with run_server(app) as url:
        if upload_first:
            r = upload(url, api_keys["acme_ingest"], "before.md", b"# Before\n\nWritten before the switch, frobnitz-1.\n")
            assert r.json()["added"] == 1, r.text
        else:  # the server has not written yet: its writer opens the index only after the switch
            with beleg.open(root.url, embedder=embedder) as writer:
                writer.ingest_texts([TextSource("before.md", "# Before\n\nWritten before the switch, frobnitz-1.\n",
                                                {"tenant": "acme"})], progress=False)
        with beleg.open(root.url, embedder=embedder) as builder:
            new = builder.reindex(IndexConfig(ChunkingConfig("window", 60, 10)), progress=False)["version"]
        assert main(["switch", new, "--index", root.url]) == 0

        r = upload(url, api_keys["acme_ingest"], "after.md", b"# After\n\nWritten after the switch, frobnitz-2.\n")
        assert r.status_code == 409 and r.json()["error"]["type"] == "index_switched", r.text
        assert "restart" in r.json()["error"]["message"] and root.schema not in r.json()["error"]["message"]
        assert not (uploads / "acme" / "@ingo" / "after.md").exists()  # the refused file is not kept
        assert all(names == ["before.md"] for names in stored(root).values()), stored(root)
        # Searches still answer from the schema the server opened.
        r = search(url, api_keys["acme"])
        assert r.status_code == 200 and [h["text"] for h in r.json()["hits"] if "frobnitz-1" in h["text"]], r.text

        # gc keeps the schema the server holds open, and says why.
        capsys.readouterr()
        assert main(["gc", "--index", root.url]) == 0
        err = capsys.readouterr().err
        assert f"kept version {old_version}" in err and "beleg serve" in err, err
        assert search(url, api_keys["acme"]).status_code == 200

        # A deletion through the server reaches every version, the new live one included.
        doc_id = next(h["doc_id"] for h in search(url, api_keys["acme"]).json()["hits"])
        r = httpx.delete(f"{url}/v1/documents/{doc_id}", headers=bearer(api_keys["acme_admin"]), timeout=120)
        assert r.status_code == 200 and [v["documents"] for v in r.json()["versions"]] == [1, 1], r.text
        assert all(names == [] for names in stored(root).values()), stored(root)
    # Once the server has stopped, nothing holds the old schema.
    collected = pg_versions.collect(root)
    assert [(v.version, v.schema) for v in collected.removed] == [(old_version, old_schema)]
    assert collected.kept == []
