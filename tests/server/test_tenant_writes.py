"""What a tenant's key may change, and what a change tells it: an admin key of one tenant
deletes only that tenant's documents (never a public one every tenant reads), a deletion's
reply to it carries no index-wide counts (they would confirm a word of a document it may not
read), and two tenants' users of one name uploading one file name get documents of their own."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.server.conftest import bearer, tenant_server

KEYS = {  # key → (user, tenant, groups, scopes)
    "k-alpha-alice": ("alice", "alpha", ("ops-alpha",), ("ingest", "read")),
    "k-alpha-admin": ("ada", "alpha", ("ops-alpha",), ("admin",)),
    "k-beta-alice": ("alice", "beta", ("ops-beta",), ("ingest", "read")),
    "k-beta-admin": ("carol", "beta", ("ops-beta",), ("admin",)),
    "k-operator": ("root", None, (), ("admin",)),
}
#: A word only the globex runbook holds: a tenant key must not learn that it is indexed.
GLOBEX_WORD = "quokka"


@pytest.fixture()
def server(tmp_path, embedder, start_server):
    with tenant_server(tmp_path, embedder, start_server, KEYS) as served:
        yield served


def upload(url: str, key: str, name: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/ingest", files=[("files", (name, body, "text/markdown"))], headers=bearer(key),
                      timeout=120)


def delete(url: str, key: str, doc_id: str) -> httpx.Response:
    return httpx.delete(f"{url}/v1/documents/{doc_id}", headers=bearer(key), timeout=60)


def doc_id_of(kb, source_end: str) -> str:
    return next(d for d, s, _ in kb.catalog.documents_meta() if s.endswith(source_end))


# ---------------------------------------------------------------------- F1: deletes stay in the tenant
def test_a_tenant_admin_key_cannot_delete_a_public_document(server):
    url, kb, _ = server
    public = doc_id_of(kb, "public/errors.md")
    r = delete(url, "k-beta-admin", public)
    assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden", r.text
    assert "beta" in r.json()["error"]["message"] and "operator" in r.json()["error"]["message"]
    assert kb.catalog.document_state(public) is not None
    # Another tenant's document stays "not found", as before.
    assert delete(url, "k-beta-admin", doc_id_of(kb, "globex/runbook.md")).status_code == 404
    # The operator's key deletes the public document.
    r = delete(url, "k-operator", public)
    assert r.status_code == 200 and r.json()["deleted"] == [public], r.text
    assert kb.catalog.document_state(public) is None


def test_a_tenant_admin_key_deletes_its_own_tenants_upload(server):
    url, kb, uploads = server
    r = upload(url, "k-beta-alice", "runbook.md", b"# Beta runbook\n\nBeta restarts the broker with flimzot-7.\n")
    doc_id = r.json()["files"][0]["doc_id"]
    assert delete(url, "k-alpha-admin", doc_id).status_code == 404  # not its tenant's: not visible
    r = delete(url, "k-beta-admin", doc_id)
    assert r.status_code == 200 and r.json()["deleted"] == [doc_id], r.text
    assert r.json()["files_deleted"] == ["beta/@alice/runbook.md"]


# ---------------------------------------------------------------------- F2: no index-wide counts
def test_a_delete_reply_to_a_tenant_key_says_nothing_about_other_tenants_words(server):
    """Upload a probe with a guessed word, delete it, read how many vocabulary terms went: the
    count differs by one depending on whether another tenant's document has the word. The
    reply to a tenant's key has no such count; the operator's keeps it."""
    url, kb, _ = server
    replies = []
    for word in (GLOBEX_WORD, "zzyzxqwv"):  # indexed in globex's runbook / indexed nowhere
        r = upload(url, "k-beta-alice", f"probe-{word}.md", f"# Probe\n\n{word}\n".encode())
        assert r.json()["added"] == 1, r.text
        r = delete(url, "k-beta-admin", r.json()["files"][0]["doc_id"])
        assert r.status_code == 200, r.text
        replies.append(r.json())
    for reply in replies:
        assert "terms" not in reply and "vectors" not in reply, reply
        assert reply["versions"] and all("terms" not in v and "vectors" not in v for v in reply["versions"])
    strip = [{k: v for k, v in reply.items() if k not in ("deleted", "files_deleted")} for reply in replies]
    assert strip[0] == strip[1]  # nothing in the reply tells the two words apart
    r = upload(url, "k-operator", "probe.md", b"# Probe\n\nzorbleplex\n")
    r = delete(url, "k-operator", r.json()["files"][0]["doc_id"])
    assert r.status_code == 200 and r.json()["terms"] >= 1 and "terms" in r.json()["versions"][0], r.text


# ---------------------------------------------------------------------- F3: ids include the tenant
def test_same_named_users_of_two_tenants_upload_one_file_name_independently(server):
    url, kb, uploads = server
    a = upload(url, "k-alpha-alice", "notes.md", b"# Notes\n\nAlpha notes blorptang-1.\n")
    b = upload(url, "k-beta-alice", "notes.md", b"# Notes\n\nBeta notes blorptang-2.\n")
    assert a.json()["added"] == 1 and b.json()["added"] == 1, (a.text, b.text)
    ids = {a.json()["files"][0]["doc_id"], b.json()["files"][0]["doc_id"]}
    assert len(ids) == 2
    # The id derives from the upload folder's name, the tenant's, the uploader's and the file's.
    expected = hashlib.sha256(f"{uploads.name}/beta/@alice/notes.md".encode()).hexdigest()[:16]
    assert b.json()["files"][0]["doc_id"] == expected
    # Each replaces its own document, never the other's.
    b2 = upload(url, "k-beta-alice", "notes.md", b"# Notes\n\nBeta notes blorptang-3.\n")
    assert b2.json()["files"][0]["status"] == "updated" and b2.json()["files"][0]["doc_id"] == expected, b2.text
    assert (uploads / "alpha" / "@alice" / "notes.md").read_bytes().endswith(b"blorptang-1.\n")


def test_an_upload_stored_before_ids_had_the_tenant_keeps_its_id_and_owner(server):
    """An index from before: alpha's alice's upload has the id of ``@alice/NAME``. It is still
    updated in place (same id) and deleted by its tenant's admin, and beta's alice uploading
    the same name gets a document of her own instead of an existence oracle."""
    url, kb, uploads = server
    old = uploads / "alpha" / "@alice" / "plan.md"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"# Plan\n\nAlpha plan glorbnik-1.\n")
    stored = kb.ingest([str(old)], metadata={"tenant": "alpha"}, progress=False).files[0]
    assert stored.doc_id == hashlib.sha256(b"@alice/plan.md").hexdigest()[:16]
    r = upload(url, "k-beta-alice", "plan.md", b"# Plan\n\nBeta plan glorbnik-2.\n")
    assert r.json()["added"] == 1 and stored.doc_id not in r.text and "may not read" not in r.text, r.text
    r = upload(url, "k-alpha-alice", "plan.md", b"# Plan\n\nAlpha plan glorbnik-3.\n")
    assert r.json()["files"][0] == {**r.json()["files"][0], "status": "updated", "doc_id": stored.doc_id}, r.text
    r = delete(url, "k-alpha-admin", stored.doc_id)
    assert r.status_code == 200 and r.json()["files_deleted"] == ["alpha/@alice/plan.md"], r.text
