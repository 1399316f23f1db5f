"""Uploads (ingest scope) and deletion (admin scope) on an index of their own, while serving."""

from __future__ import annotations

import httpx
import pytest

from tests.server.conftest import DOCS, bearer

NOTE = b"""---
title: Acme upload
---
# Acme upload

The Acme reconciliation job runs nightly at 01:30 on host quetzal-9.
"""


@pytest.fixture()
def writable(tmp_path, embedder, start_server):
    import beleg
    from beleg.server import ServerSettings

    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    corpus = tmp_path / "corpus"
    for name in ("public/errors.md", "acme/runbook.md", "globex/runbook.md"):
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(DOCS[name], encoding="utf-8")
    kb.ingest([str(corpus)], progress=False)
    with start_server(ServerSettings(upload_dir=tmp_path / "uploads"), index=kb) as url:
        yield url, kb, tmp_path
    kb.close()


def _search(url, key, query):
    r = httpx.post(f"{url}/v1/search", json={"query": query, "k": 10}, headers=bearer(key), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["hits"]


def test_an_upload_is_searchable_at_once_and_stays_in_its_tenant(writable, api_keys):
    url, _, tmp_path = writable
    r = httpx.post(f"{url}/v1/ingest", files=[("files", ("recon.md", NOTE, "text/markdown"))],
                   headers=bearer(api_keys["acme_ingest"]), timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["added"] == 1 and r.json()["failed"] == 0
    assert (tmp_path / "uploads" / "acme" / "@ingo" / "recon.md").read_bytes() == NOTE
    assert any("quetzal-9" in h["text"] for h in _search(url, api_keys["acme"], "reconciliation job host"))
    # The uploader's tenant is the document's: other tenants and the public do not see it.
    assert not any("quetzal-9" in h["text"] for h in _search(url, api_keys["globex"], "reconciliation job host"))
    assert not any("quetzal-9" in h["text"] for h in _search(url, api_keys["public"], "reconciliation job host"))


def test_a_file_naming_another_tenant_is_refused_before_anything_is_stored(writable, api_keys):
    url, kb, tmp_path = writable
    before = kb.status()["documents"]
    hostile = b"---\ntitle: x\ntenant: globex\n---\n# Planted\n\nCall 0800-PLANTED for refunds.\n"
    r = httpx.post(f"{url}/v1/ingest", files=[("files", ("ok.md", NOTE, "text/markdown")),
                                              ("files", ("planted.md", hostile, "text/markdown"))],
                   headers=bearer(api_keys["acme_ingest"]), timeout=60)
    assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden"
    assert "globex" in r.json()["error"]["message"]
    assert kb.status()["documents"] == before
    assert not (tmp_path / "uploads" / "acme").exists()
    assert not any("PLANTED" in h["text"] for h in _search(url, api_keys["globex"], "refunds planted"))


@pytest.mark.parametrize("files, needle", [([], "no files"), ([("files", ("noext", b"x", "text/plain"))], "extension")])
def test_bad_uploads_are_400(writable, api_keys, files, needle):
    url, _, _ = writable
    r = httpx.post(f"{url}/v1/ingest", files=files or {"other": ("a.md", b"x")},
                   headers=bearer(api_keys["acme_ingest"]), timeout=60)
    assert r.status_code == 400 and needle in r.json()["error"]["message"]


def test_delete_needs_admin_and_a_document_the_key_can_read(writable, api_keys):
    url, kb, _ = writable
    ids = {source.rsplit("/", 2)[-2]: doc_id for doc_id, source, _ in kb.catalog.documents_meta()}
    r = httpx.delete(f"{url}/v1/documents/{ids['acme']}", headers=bearer(api_keys["acme"]), timeout=60)
    assert r.status_code == 403  # read scope only
    r = httpx.delete(f"{url}/v1/documents/{ids['globex']}", headers=bearer(api_keys["acme_admin"]), timeout=60)
    assert r.status_code == 404  # another tenant's document is "not found" to this admin
    assert kb.document(ids["globex"], None) is None and kb.catalog.document(ids["globex"]) is not None
    r = httpx.delete(f"{url}/v1/documents/{ids['acme']}", headers=bearer(api_keys["acme_admin"]), timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["deleted"] == [ids["acme"]]
    assert not any("zanzibar-7" in h["text"] for h in _search(url, api_keys["acme"], "failover standby host"))
    r = httpx.get(f"{url}/v1/documents/{ids['acme']}", headers=bearer(api_keys["acme_admin"]), timeout=60)
    assert r.status_code == 404


def test_writes_during_a_reindex_are_409(writable, api_keys):
    from beleg.index.versions import write_lock

    url, kb, _ = writable
    with write_lock(kb.root, "reindex", "v-test"):
        r = httpx.post(f"{url}/v1/ingest", files=[("files", ("recon.md", NOTE, "text/markdown"))],
                       headers=bearer(api_keys["acme_ingest"]), timeout=60)
        searching = httpx.post(f"{url}/v1/search", json={"query": "E-4012"}, headers=bearer(api_keys["acme"]),
                               timeout=60)
    assert r.status_code == 409 and r.json()["error"]["type"] == "index_busy"
    assert searching.status_code == 200  # reads go on


def test_deleting_an_uploaded_document_deletes_its_file(writable, api_keys):
    """The uploaded file stayed in the upload folder, so the next ingest of that folder
    brought an erased document back."""
    url, kb, tmp_path = writable
    r = httpx.post(f"{url}/v1/ingest", files=[("files", ("erase-me.md", NOTE, "text/markdown"))],
                   headers=bearer(api_keys["acme_ingest"]), timeout=120)
    doc_id = r.json()["files"][0]["doc_id"]
    stored = tmp_path / "uploads" / "acme" / "@ingo" / "erase-me.md"
    assert stored.is_file()
    r = httpx.delete(f"{url}/v1/documents/{doc_id}", headers=bearer(api_keys["acme_admin"]), timeout=60)
    assert r.status_code == 200 and r.json()["deleted"] == [doc_id], r.text
    assert r.json()["files_deleted"] == ["acme/@ingo/erase-me.md"] and not stored.exists()
    kb.ingest([str(tmp_path / "uploads")], progress=False)
    assert not any("quetzal-9" in h["text"] for h in _search(url, api_keys["acme"], "reconciliation job host"))
    # A document the operator ingested from elsewhere keeps its file.
    acme = next(d for d, s, _ in kb.catalog.documents_meta() if s.endswith("acme/runbook.md"))
    r = httpx.delete(f"{url}/v1/documents/{acme}", headers=bearer(api_keys["acme_admin"]), timeout=60)
    assert r.json()["files_deleted"] == [] and (tmp_path / "corpus" / "acme" / "runbook.md").is_file()
