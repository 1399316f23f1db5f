"""What an upload's own metadata may claim: a tenant's key publishes only inside what it may
read itself, never ranks its uploads above the tenant's governing documents (unless the key is
an admin's), and the time an upload takes does not depend on what else the index holds."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest

from tests.server.conftest import DOCS, bearer, tenant_server

KEYS = {  # key → (user, tenant, groups, scopes)
    "k-acme": ("mallory", "acme", ("acme-ops",), ("ingest", "read")),
    "k-acme-admin": ("ada", "acme", ("acme-ops",), ("admin",)),
    "k-globex": ("gus", "globex", (), ("ingest", "read")),
    "k-operator": ("op", None, (), ("ingest", "read")),
}


class CountingEmbedder:
    """The real embedder, counting the passages it is asked to embed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spec, self.dim, self.fingerprint = inner.spec, inner.dim, inner.fingerprint
        self.passages: list[str] = []

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.passages.extend(texts)
        return self.inner.embed_documents(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)


@pytest.fixture()
def server(tmp_path, embedder, start_server):
    counting = CountingEmbedder(embedder)
    with tenant_server(tmp_path, counting, start_server, KEYS, ("public/retry.md", "globex/runbook.md")) as served:
        yield (*served, counting)


def upload(url: str, key: str, name: str, body: bytes, **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{url}/v1/ingest", files=[("files", (name, body, "text/markdown"))], headers=bearer(key),
                      timeout=120, **kwargs)


def _note(front: str, token: str) -> bytes:
    return f"---\n{front}\n---\n# Retry window\n\nWebhook deliveries are retried for {token}.\n".encode()


def _stored(kb: Any, token: str) -> bool:
    return any(token in doc.text for doc, _ in kb.catalog.documents_with_headings())


# ---------------------------------------------------------------------- acl: never beyond the uploader
@pytest.mark.parametrize("front", ["acl: [user:bob]", "acl: [finance]", "acl: user:bob, finance",
                                   '"ACL ": [finance]', "acl: [user:mallory-not]"])
def test_an_upload_may_not_leave_its_uploader_out_of_its_acl(server, front):
    """Such a document would be one the uploader can neither read, replace nor delete: planted
    for others in its tenant, out of reach of the key that put it there."""
    url, kb, uploads, _ = server
    r = upload(url, "k-acme", "planted.md", _note(front, "zilch-91 hours"))
    assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden", r.text
    assert "'acl'" in r.json()["error"]["message"], r.text
    assert not _stored(kb, "zilch-91") and not list(uploads.rglob("planted.md"))


@pytest.mark.parametrize("front", ["acl: [acme-ops]", "acl: [user:Mallory]", "acl: [finance, user:mallory]",
                                   "acl: [ACME-OPS]"])
def test_an_upload_may_narrow_its_acl_to_what_includes_its_uploader(server, front):
    url, kb, _, _ = server
    r = upload(url, "k-acme", "narrow.md", _note(front, "zonk-7 hours"))
    assert r.status_code == 200 and r.json()["added"] == 1, r.text
    doc_id = r.json()["files"][0]["doc_id"]
    assert httpx.get(f"{url}/v1/documents/{doc_id}", headers=bearer("k-acme"), timeout=60).status_code == 200


# ---------------------------------------------------------------------- standing: the operator's to grant
@pytest.mark.parametrize("front, field", [
    ("status: current", "status"), ("status: Active", "status"), ("'Status ': aktuell", "status"),
    ("authority: contract", "authority"), ("authority: Reference", "authority"),
    ("authority: community\n'authority ': contract", "authority"),
    ('version: "3.9"', "version"), ("product: ferrolink\nversion: 4", "version"),
])
def test_a_tenant_key_may_not_rank_its_upload_above_the_tenants_documents(server, front, field):
    """A tenant key's upload claiming `status: current` and `authority: contract` (or a newer
    version, which a question naming the major version would be held to) would govern the
    tenant's answers over the documents the operator ingested."""
    url, kb, uploads, _ = server
    r = upload(url, "k-acme", "outrank.md", _note(front, "999 hours (blarg-5)"))
    assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden", r.text
    assert f"'{field}'" in r.json()["error"]["message"], r.text
    assert not _stored(kb, "blarg-5") and not list(uploads.rglob("outrank.md"))


@pytest.mark.parametrize("front", ["status: draft", "status: deprecated", "status: unknown", "authority: community",
                                   "authority: imported-note", "authority: unknown", "authority: whatever-else",
                                   "title: A plain note\nproduct: ferrolink"])
def test_a_tenant_key_may_declare_standing_no_higher_than_an_undeclared_document(server, front):
    url, _, _, _ = server
    r = upload(url, "k-acme", "modest.md", _note(front, "12 hours (quark-3)"))
    assert r.status_code == 200 and r.json()["added"] == 1, r.text


@pytest.mark.parametrize("key, tenant", [("k-acme-admin", "acme"), ("k-operator", None)])
def test_an_admin_or_operator_key_may_rank_its_uploads(server, key, tenant):
    url, kb, _, _ = server
    r = upload(url, key, "governing.md", _note('status: current\nauthority: contract\nversion: "3.1"', "96 hours"))
    assert r.status_code == 200 and r.json()["added"] == 1, r.text
    meta = kb.catalog.document_state(r.json()["files"][0]["doc_id"])[1]
    assert (meta["status"], meta["authority"], meta["version"], meta.get("tenant")) == \
        ("current", "contract", "3.1", tenant)


# ---------------------------------------------------------------------- form fields
@pytest.mark.parametrize("field", ["tenant", "acl", "authority", "metadata"])
def test_form_fields_other_than_files_are_refused_by_name(server, field):
    """The API reads only the files: a field that looks like it sets a tenant, an acl or a
    standing is refused, so the uploader never believes it did."""
    url, kb, _, _ = server
    r = upload(url, "k-acme", "fielded.md", b"# Fielded\n\nA note with a form field (frump-2).\n",
               data={field: "globex"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request", r.text
    assert repr(field) in r.json()["error"]["message"], r.text
    assert not _stored(kb, "frump-2")


# ---------------------------------------------------------------------- no timing oracle
def test_an_upload_embeds_its_text_whether_or_not_the_index_holds_it(server):
    """Reusing the stored vector of an identical chunk made an upload skip the model exactly
    when its text was indexed anywhere, another tenant's documents included: timing the upload
    of a guessed paragraph confirmed it. The model does the same work either way."""
    url, kb, _, counting = server
    globex = DOCS["globex/runbook.md"].split("---\n", 2)[2]  # the restricted text, as globex stored it
    guessed = "---\ntitle: Globex maintenance runbook\n---\n" + globex
    control = "---\ntitle: Globex maintenance runbook\n---\n" + globex.replace("02:00 to 04:00", "03:00 to 05:00")
    counting.passages.clear()
    assert upload(url, "k-acme", "guess.md", guessed.encode()).json()["added"] == 1
    guessed_passages = list(counting.passages)
    counting.passages.clear()
    assert upload(url, "k-acme", "control.md", control.encode()).json()["added"] == 1
    assert len(guessed_passages) == len(counting.passages) > 0
    assert any("02:00 to 04:00" in p for p in guessed_passages), guessed_passages
