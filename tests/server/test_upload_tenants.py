"""Uploads through tenant keys: the key's tenant binds whatever the front matter spells, every
tenant has an upload folder of its own, a file the ingest does not accept never replaces the
one before it, and a failure never names another tenant's document."""

from __future__ import annotations

import httpx
import pytest

from beleg.server.handlers import SHARED_FOLDER, tenant_folder
from tests.server.conftest import bearer, tenant_server

KEYS = {  # key → (user, tenant, groups, scopes)
    "k-acme": ("mallory", "acme", ("acme-ops",), ("ingest", "read")),
    "k-acme-plain": ("ingrid", "acme", (), ("ingest", "read")),
    "k-globex": ("gus", "globex", (), ("read",)),
    "k-mueller": ("m1", "müller-gmbh", (), ("ingest", "read")),
    "k-moeller": ("m2", "möller-gmbh", (), ("ingest", "read")),
    "k-shared-tenant": ("s1", "_shared", (), ("ingest", "read")),
    "k-operator": ("op", None, (), ("ingest", "read")),
}


@pytest.fixture()
def server(tmp_path, embedder, start_server):
    with tenant_server(tmp_path, embedder, start_server, KEYS) as served:
        yield served


def upload(url: str, key: str, *files: tuple[str, bytes]) -> httpx.Response:
    return httpx.post(f"{url}/v1/ingest", files=[("files", (n, b, "text/markdown")) for n, b in files],
                      headers=bearer(key), timeout=120)


def search(url: str, key: str, query: str) -> list[dict]:
    r = httpx.post(f"{url}/v1/search", json={"query": query, "k": 10, "mode": "bm25"}, headers=bearer(key), timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["hits"]


# ---------------------------------------------------------------------- the key's tenant binds
@pytest.mark.parametrize("front", ['"tenant ": globex', 'tenant: acme\n"tenant ": globex',
                                   '"Tenant\t": GLOBEX\ntitle: x'])
def test_a_tenant_key_cannot_write_into_another_tenant_by_spelling_the_key(server, front):
    url, kb, uploads = server
    before = kb.status()["documents"]
    body = f"---\n{front}\n---\n# Globex notice\n\nGlobex restart code is now evil-43 (snorkelpuff).\n"
    r = upload(url, "k-acme", ("spaced.md", body.encode()))
    if front.count("enant") == 2:  # two tenant keys: the front matter itself is refused, as on the CLI
        assert r.status_code == 200 and "'tenant' is given twice" in r.json()["files"][0]["reason"], r.text
    else:
        assert r.status_code == 403 and "globex" in r.json()["error"]["message"], r.text
    assert kb.status()["documents"] == before
    assert not any("snorkelpuff" in h["text"] for h in search(url, "k-globex", "snorkelpuff restart code"))


def test_uploads_through_a_tenant_key_always_get_its_tenant(server):
    url, kb, uploads = server
    r = upload(url, "k-acme", ("own.md", b"---\n'TENANT ': ACME\n---\n# Own\n\nAcme note zorblat-1.\n"),
               ("none.md", b"# None\n\nAcme note zorblat-2.\n"))
    assert r.status_code == 200 and r.json()["added"] == 2, r.text
    assert {m.get("tenant") for _, s, m in kb.catalog.documents_meta() if s.startswith(str(uploads))} == {"acme"}


# ---------------------------------------------------------------------- one folder per tenant
def test_tenant_folders_are_injective_and_readable():
    names = ["acme", "ACME ", "müller-gmbh", "möller-gmbh", "m_ller-gmbh", "m%C3%BCller-gmbh", "_shared", ".",
             "..", ".staging", "a/b", "a b", "x" * 300, "x" * 299 + "y"]
    folders = {n: tenant_folder(n) for n in names}
    assert folders["acme"] == folders["ACME "] == "acme"  # the tenants access treats as one share one
    distinct = [n for n in names if n != "ACME "]
    assert len({folders[n] for n in distinct}) == len(distinct), folders
    assert tenant_folder(None) == SHARED_FOLDER and SHARED_FOLDER not in {folders[n] for n in names}
    for folder in folders.values():
        assert "/" not in folder and folder not in (".", "..", ".staging") and not folder.startswith(".")
        assert len(folder) <= 100


def test_tenants_whose_names_sanitised_alike_do_not_share_files(server):
    url, _, uploads = server
    r1 = upload(url, "k-mueller", ("payroll.md", b"# Payroll\n\nMueller payroll secret is glibberfax-5.\n"))
    r2 = upload(url, "k-moeller", ("payroll.md", b"# Payroll\n\nMoeller note about payroll.\n"))
    assert r1.json()["added"] == 1 and r2.json()["added"] == 1, (r1.text, r2.text)
    assert "müller" not in r2.text and r1.json()["files"][0]["doc_id"] not in r2.text
    assert (uploads / tenant_folder("müller-gmbh") / "@m1" / "payroll.md").read_bytes().endswith(b"glibberfax-5.\n")
    assert (uploads / tenant_folder("möller-gmbh") / "@m2" / "payroll.md").read_bytes().endswith(b"about payroll.\n")
    assert any("glibberfax" in h["text"] for h in search(url, "k-mueller", "payroll secret"))
    assert not any("glibberfax" in h["text"] for h in search(url, "k-moeller", "payroll secret"))


def test_a_tenant_named_like_the_shared_folder_is_not_the_operator(server):
    url, kb, uploads = server
    assert upload(url, "k-operator", ("note.md", b"# Note\n\nOperator note quaxel-1.\n")).json()["added"] == 1
    assert upload(url, "k-shared-tenant", ("note.md", b"# Note\n\nTenant note quaxel-2.\n")).json()["added"] == 1
    assert (uploads / SHARED_FOLDER / "@op" / "note.md").read_bytes().endswith(b"quaxel-1.\n")
    tenants = {m.get("tenant") for _, s, m in kb.catalog.documents_meta() if s.endswith("note.md")}
    assert tenants == {None, "_shared"}


def test_an_upload_from_an_older_version_keeps_updating_its_document(server):
    """Uploads stored under the old folder name (`m_ller-gmbh`, shared by both tenants) stay
    where they are: the tenant whose document it is updates it there; the other tenant gets
    its own folder and never touches it."""
    url, kb, uploads = server
    legacy = uploads / "m_ller-gmbh" / "plan.md"
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b"# Plan\n\nOld plan text wibblequark-1.\n")
    old = kb.ingest([str(legacy)], metadata={"tenant": "müller-gmbh"}, progress=False).files[0]
    r = upload(url, "k-mueller", ("plan.md", b"# Plan\n\nNew plan text wibblequark-2.\n"))
    assert r.json()["files"][0] == {**r.json()["files"][0], "status": "updated", "doc_id": old.doc_id}, r.text
    assert legacy.read_bytes().endswith(b"wibblequark-2.\n")
    r = upload(url, "k-moeller", ("plan.md", b"# Plan\n\nMoeller plan wibblequark-3.\n"))
    assert r.json()["added"] == 1 and old.doc_id not in r.text and "müller" not in r.text, r.text
    assert legacy.read_bytes().endswith(b"wibblequark-2.\n")
    assert (uploads / tenant_folder("möller-gmbh") / "@m2" / "plan.md").is_file()


# ---------------------------------------------------------------------- failed uploads change nothing
def test_a_refused_reupload_leaves_the_file_before_it(server):
    url, _, uploads = server
    first = b"---\nacl: [acme-ops]\n---\n# Note\n\nRestricted note fnordle-1.\n"
    assert upload(url, "k-acme", ("note.md", first)).json()["added"] == 1
    r = upload(url, "k-acme", ("note.md", b"# Note\n\nWidened note fnordle-2.\n"))  # drops the acl
    assert r.json()["failed"] == 1 and "acl would be removed" in r.json()["files"][0]["reason"], r.text
    assert (uploads / "acme" / "@mallory" / "note.md").read_bytes() == first
    r = upload(url, "k-acme", ("new.md", b"---\nacl:\n---\n# New\n\nEmpty acl.\n"))
    assert r.json()["failed"] == 1 and not (uploads / "acme" / "@mallory" / "new.md").exists()


def test_a_declared_id_is_refused_alike_whether_or_not_another_tenant_has_it(server):
    """Ids are shared by all tenants: answering a taken id differently from a free one told a
    tenant's key that another tenant's document exists (and let it squat free ids)."""
    url, kb, uploads = server
    globex_id = next(d for d, s, _ in kb.catalog.documents_meta() if s.endswith("globex/runbook.md"))
    replies = []
    for doc_id in (globex_id, "no-such-id-zz2"):
        r = upload(url, "k-acme", ("take.md", f"---\nid: {doc_id}\n---\n# Take\n\nHijacked text.\n".encode()))
        assert r.status_code == 403, r.text
        assert "globex" not in r.text.lower() and globex_id not in r.text, r.text
        replies.append(r.json())
    assert replies[0] == replies[1]
    assert "Hijacked" not in kb.catalog.document(globex_id).text and kb.catalog.document("no-such-id-zz2") is None
    assert not (uploads / "acme" / "@mallory" / "take.md").exists()


# ---------------------------------------------------------------------- one folder per uploader
def _shape(reply: dict, name: str) -> dict:
    """An ingest reply with what names the one file (its name, path and id) taken out."""
    files = [{**f, "source": f["source"].replace(name, "NAME"), "doc_id": "ID"} for f in reply["files"]]
    return {**reply, "files": files}


def test_an_upload_cannot_detect_or_replace_a_document_of_its_tenant_it_may_not_read(server):
    """The same file name as an acl-restricted upload, from a key of the tenant outside the
    acl: the answer is the one a free name gets, and the restricted text stays as it was;
    repeating the acl (which leaves this key out) is refused outright."""
    url, kb, uploads = server
    secret = b"---\ntitle: Ops runbook\nacl: [acme-ops]\n---\n# Ops\n\nBreak-glass code ORIGINAL-1.\n"
    r = upload(url, "k-acme", ("ops-runbook.md", secret))
    assert r.json()["added"] == 1, r.text
    restricted = r.json()["files"][0]["doc_id"]
    probe = b"---\ntitle: probe\n---\n# x\n\nprobe text\n"
    taken = upload(url, "k-acme-plain", ("ops-runbook.md", probe))
    free = upload(url, "k-acme-plain", ("no-such-runbook.md", probe))
    assert taken.status_code == free.status_code == 200, (taken.text, free.text)
    assert _shape(taken.json(), "ops-runbook") == _shape(free.json(), "no-such-runbook"), (taken.text, free.text)
    assert restricted not in taken.text
    forged = secret.replace(b"ORIGINAL-1", b"ATTACKER-2")
    again = upload(url, "k-acme-plain", ("ops-runbook.md", forged))
    assert again.status_code == 403 and "'acl'" in again.text and restricted not in again.text, again.text
    assert "ORIGINAL-1" in kb.catalog.document(restricted).text
    assert (uploads / "acme" / "@mallory" / "ops-runbook.md").read_bytes() == secret
    # The uploader's own file is its to update.
    mine = upload(url, "k-acme", ("ops-runbook.md", secret.replace(b"ORIGINAL-1", b"ROTATED-3")))
    assert mine.json()["files"][0] == {**mine.json()["files"][0], "status": "updated", "doc_id": restricted}


def test_an_upload_updates_an_older_top_level_upload_only_when_the_uploader_may_read_it(server):
    url, kb, uploads = server
    older = uploads / "acme" / "shared.md"
    older.parent.mkdir(parents=True)
    older.write_bytes(b"---\nacl: [acme-ops]\n---\n# Shared\n\nOld shared text frobnitz-1.\n")
    doc_id = kb.ingest([str(older)], metadata={"tenant": "acme"}, progress=False).files[0].doc_id
    r = upload(url, "k-acme-plain", ("shared.md", b"# Shared\n\nfrobnitz-2.\n"))
    assert r.json()["added"] == 1 and doc_id not in r.text, r.text
    assert older.read_bytes().endswith(b"frobnitz-1.\n")
    r = upload(url, "k-acme", ("shared.md", b"---\nacl: [acme-ops]\n---\n# Shared\n\nfrobnitz-3.\n"))
    assert r.json()["files"][0] == {**r.json()["files"][0], "status": "updated", "doc_id": doc_id}, r.text
    assert older.read_bytes().endswith(b"frobnitz-3.\n")


def test_an_upload_does_not_replace_its_own_earlier_upload_it_may_no_longer_read(server):
    """An earlier upload whose acl no longer names the key (its groups changed since; an upload
    that leaves its uploader out is refused now) is not replaced by the next upload."""
    url, kb, uploads = server
    first = b"---\nacl: [someone-else]\n---\n# Locked\n\nLocked text blorp-1.\n"
    earlier = uploads / "acme" / "@ingrid" / "locked.md"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(first)
    assert kb.ingest([str(earlier)], metadata={"tenant": "acme"}, progress=False).count("added") == 1
    r = upload(url, "k-acme-plain", ("locked.md", b"# Locked\n\nblorp-2.\n"))
    assert r.status_code == 403 and "may not read" in r.json()["error"]["message"], r.text
    assert (uploads / "acme" / "@ingrid" / "locked.md").read_bytes() == first


def test_uploader_folders_never_name_an_uploaded_file():
    from beleg.server.auth import Identity
    from beleg.server.handlers import _safe_name, uploader_folder
    from beleg.types import Principal

    named = uploader_folder(Identity(Principal("Alice", "acme"), frozenset(), "key:1"))
    keyed = uploader_folder(Identity(Principal(None, "acme"), frozenset(), "key:0123"))
    assert named == "@alice" and keyed.startswith("#") and "/" not in keyed
    assert _safe_name(named) != named and _safe_name(keyed) != keyed


def test_the_python_service_binds_the_tenant_as_the_server_does(tmp_path, embedder) -> None:
    """Service.ingest_files is the same rule without HTTP: the principal's tenant binds, and a
    file naming another tenant under any spelling of the key is refused before anything is stored."""
    import beleg
    from beleg.service import AccessDenied, Service
    from beleg.types import Principal

    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    svc, acme = Service(kb), Principal("mallory", "acme")
    spaced = tmp_path / "spaced.md"
    spaced.write_text('---\n"tenant ": beta\n---\n# Beta\n\nBeta restart code is evil-43.\n', encoding="utf-8")
    with pytest.raises(AccessDenied):
        svc.ingest_files([spaced], acme)
    plain = tmp_path / "plain.md"
    plain.write_text("# Notice\n\nThe acme restart code is ok-12.\n", encoding="utf-8")
    assert svc.ingest_files([plain], acme)["added"] == 1
    assert [h.metadata.get("tenant") for h in kb.search("restart code", k=5, principal=acme)] == ["acme"]
    assert kb.search("restart code", k=5, principal=Principal("bob", "beta")) == []
    kb.close()
