"""Uploads through tenant keys: the key's tenant binds whatever the front matter spells, every
tenant has an upload folder of its own, a file the ingest does not accept never replaces the
one before it, and a failure never names another tenant's document."""

from __future__ import annotations

import httpx
import pytest

from beleg.server.auth import ApiKey, AuthConfig, hash_key
from tests.server.conftest import DOCS, bearer

KEYS = {  # key → (user, tenant, groups, scopes)
    "k-acme": ("mallory", "acme", ("acme-ops",), ("ingest", "read")),
    "k-globex": ("gus", "globex", (), ("read",)),
    "k-mueller": ("m1", "müller-gmbh", (), ("ingest", "read")),
    "k-moeller": ("m2", "möller-gmbh", (), ("ingest", "read")),
    "k-shared-tenant": ("s1", "_shared", (), ("ingest", "read")),
    "k-operator": ("op", None, (), ("ingest", "read")),
}


@pytest.fixture()
def server(tmp_path, embedder, start_server):
    import beleg
    from beleg.server import ServerSettings

    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    corpus = tmp_path / "corpus"
    for name in ("public/errors.md", "globex/runbook.md"):
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(DOCS[name], encoding="utf-8")
    kb.ingest([str(corpus)], progress=False)
    auth = AuthConfig(tuple(ApiKey(hash_key(k), u, t, g, frozenset(s)) for k, (u, t, g, s) in KEYS.items()),
                      None, tmp_path / "auth.toml")
    with start_server(ServerSettings(upload_dir=tmp_path / "uploads"), auth=auth, index=kb) as url:
        yield url, kb, tmp_path / "uploads"
    kb.close()


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
    assert r.status_code == 403 and "globex" in r.json()["error"]["message"], r.text
    assert kb.status()["documents"] == before
    assert not any("snorkelpuff" in h["text"] for h in search(url, "k-globex", "snorkelpuff restart code"))


def test_uploads_through_a_tenant_key_always_get_its_tenant(server):
    url, kb, uploads = server
    r = upload(url, "k-acme", ("own.md", b"---\n'TENANT ': ACME\n---\n# Own\n\nAcme note zorblat-1.\n"),
               ("none.md", b"# None\n\nAcme note zorblat-2.\n"))
    assert r.status_code == 200 and r.json()["added"] == 2, r.text
    assert {m.get("tenant") for _, s, m in kb.catalog.documents_meta() if s.startswith(str(uploads))} == {"acme"}
