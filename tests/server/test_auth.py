"""Identity from authentication only: API keys as sha256 hashes, JWTs (HS256 secret, RS256 JWKS)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from beleg.errors import ConfigError
from beleg.server.auth import AuthError, ScopeError, hash_key, load_auth
from tests.server.conftest import SECRET, bearer

jwt = pytest.importorskip("jwt")


def _hs256(claims: dict, secret: str = SECRET) -> str:
    return jwt.encode({"exp": int(time.time()) + 300, "aud": "beleg", **claims}, secret, algorithm="HS256")


# ---------------------------------------------------------------- auth.toml and keys
def test_a_key_maps_to_its_principal_and_scopes(auth_config, api_keys):
    who = auth_config.authenticate(f"Bearer {api_keys['acme']}")
    assert (who.principal.user, who.principal.tenant, who.principal.groups) == ("alice", "acme", ("acme-ops",))
    assert who.scopes == {"read"}
    assert api_keys["acme"] not in who.subject  # the key itself is never kept in the identity
    with pytest.raises(ScopeError):
        who.require("ingest")


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic abc", "Bearer not-a-key", "Bearer a.b.c"])
def test_missing_or_bad_credentials_are_refused(auth_config, header):
    with pytest.raises(AuthError):
        auth_config.authenticate(header)


def test_the_auth_file_holds_hashes_only(auth_file, api_keys):
    text = auth_file.read_text()
    assert all(key not in text for key in api_keys.values())
    assert hash_key(api_keys["acme"]) in text


def test_malformed_auth_files_fail_with_the_reason(tmp_path):
    bad = tmp_path / "auth.toml"
    bad.write_text('[[keys]]\nsha256 = "abc"\nuser = "x"\n')
    with pytest.raises(ConfigError, match="64 hex digits"):
        load_auth(bad)
    bad.write_text(f'[[keys]]\nsha256 = "{"a" * 64}"\nscopes = ["root"]\n')
    with pytest.raises(ConfigError, match="unknown scope"):
        load_auth(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_auth(tmp_path / "missing.toml")


# ---------------------------------------------------------------- JWT
def test_hs256_token_with_claim_mapping(auth_config):
    who = auth_config.authenticate("Bearer " + _hs256({"sub": "jo", "org": "acme", "groups": ["acme-ops"],
                                                        "scope": "read ingest"}))
    assert (who.principal.user, who.principal.tenant, who.principal.groups) == ("jo", "acme", ("acme-ops",))
    assert who.scopes == {"read", "ingest"}


@pytest.mark.parametrize("claims, secret, why", [
    ({"sub": "jo", "org": "acme"}, "another-secret-of-enough-length-0123456789", "signature"),
    ({"sub": "jo", "org": "acme", "exp": int(time.time()) - 10}, SECRET, "expired"),
    ({"sub": "jo", "org": "acme", "aud": "someone-else"}, SECRET, "audience"),
])
def test_invalid_tokens_are_refused(auth_config, claims, secret, why):
    with pytest.raises(AuthError, match="not valid"):
        auth_config.authenticate("Bearer " + _hs256(claims, secret))


def test_a_token_without_expiry_is_refused(auth_config):
    token = jwt.encode({"sub": "jo", "org": "acme", "aud": "beleg"}, SECRET, algorithm="HS256")
    with pytest.raises(AuthError):
        auth_config.authenticate(f"Bearer {token}")


def test_alg_none_is_refused(auth_config):
    token = jwt.encode({"sub": "jo", "org": "acme", "aud": "beleg", "exp": int(time.time()) + 60}, None,
                       algorithm="none")
    with pytest.raises(AuthError):
        auth_config.authenticate(f"Bearer {token}")


def test_rs256_token_verified_against_a_jwks_file(tmp_path):
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig"}]}))
    (tmp_path / "auth.toml").write_text('[jwt]\njwks_file = "jwks.json"\ngroups_claim = "roles"\n')
    config = load_auth(tmp_path / "auth.toml")
    claims = {"sub": "ri", "tenant": "globex", "roles": ["g-ops"], "scope": ["read"], "exp": int(time.time()) + 60}
    who = config.authenticate("Bearer " + jwt.encode(claims, private, algorithm="RS256", headers={"kid": "k1"}))
    assert (who.principal.tenant, who.principal.groups, who.scopes) == ("globex", ("g-ops",), {"read"})
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(AuthError):
        config.authenticate("Bearer " + jwt.encode(claims, other, algorithm="RS256", headers={"kid": "k1"}))
    with pytest.raises(AuthError):  # no HS256 secret configured: an HS256 token is not accepted
        config.authenticate("Bearer " + _hs256({"sub": "x"}, "x" * 40))


# ---------------------------------------------------------------- over HTTP
def test_http_missing_and_bad_keys_get_401_with_the_error_shape(server_url):
    for headers in ({}, bearer("wrong-key"), {"Authorization": "Basic dXNlcjpwdw=="}):
        r = httpx.post(f"{server_url}/v1/search", json={"query": "retry"}, headers=headers, timeout=30)
        assert r.status_code == 401
        assert set(r.json()) == {"error"} and set(r.json()["error"]) == {"type", "message"}
        assert r.json()["error"]["type"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"


def test_http_scopes_are_enforced(server_url, api_keys):
    files = {"files": ("note.md", b"# Note\n\nHello.\n", "text/markdown")}
    r = httpx.post(f"{server_url}/v1/ingest", files=files, headers=bearer(api_keys["acme"]), timeout=30)
    assert r.status_code == 403 and r.json()["error"]["type"] == "forbidden"
    r = httpx.delete(f"{server_url}/v1/documents/whatever", headers=bearer(api_keys["acme_ingest"]), timeout=30)
    assert r.status_code == 403


def test_http_jwt_gives_its_tenant_access(server_url):
    query = {"query": "failover standby host", "k": 5}
    token = _hs256({"sub": "jo", "org": "acme", "groups": ["acme-ops"], "scope": "read"})
    r = httpx.post(f"{server_url}/v1/search", json=query, headers=bearer(token), timeout=30)
    assert r.status_code == 200, r.text
    assert any("acme/runbook.md" in h["source"] for h in r.json()["hits"])
    token = _hs256({"sub": "jo", "org": "globex", "groups": ["acme-ops"], "scope": "read"})
    r = httpx.post(f"{server_url}/v1/search", json=query, headers=bearer(token), timeout=30)
    assert r.status_code == 200 and not any("acme/" in h["source"] for h in r.json()["hits"])
    token = _hs256({"sub": "jo", "org": "acme", "scope": "ingest"})  # a token without read scope
    r = httpx.post(f"{server_url}/v1/search", json=query, headers=bearer(token), timeout=30)
    assert r.status_code == 403


def test_a_token_without_a_tenant_uploads_nothing(server_url):
    """An API key without a tenant is an operator's, written so in the auth file; a token that
    lacks the tenant claim (an identity provider's gap) could otherwise upload documents naming
    any tenant. It is refused unless it has the admin scope."""
    doc = b"---\ntenant: globex\n---\n# Planted\n\nThe globex failover host is evil.example.\n"
    token = _hs256({"sub": "jo", "scope": "ingest read"})  # no "org" (the tenant claim here)
    r = httpx.post(f"{server_url}/v1/ingest", files={"files": ("planted.md", doc, "text/markdown")},
                   headers=bearer(token), timeout=60)
    assert r.status_code == 403 and "tenant claim" in r.text, r.text
    with_tenant = _hs256({"sub": "jo", "org": "acme", "scope": "ingest read"})
    r = httpx.post(f"{server_url}/v1/ingest", files={"files": ("planted.md", doc, "text/markdown")},
                   headers=bearer(with_tenant), timeout=60)
    assert r.status_code == 403 and "tenant claim" not in r.text  # refused for naming another tenant instead


def test_a_token_without_a_user_is_refused(auth_config):
    """Every token without 'sub' was the same caller 'jwt::None': one conversation owner."""
    for claims in ({"org": "acme", "scope": "read"}, {"sub": "  ", "org": "acme", "scope": "read"}):
        with pytest.raises(AuthError, match="'sub'"):
            auth_config.authenticate("Bearer " + _hs256(claims))


def test_http_a_conversation_belongs_to_the_whole_principal(server_url):
    """Two tokens with the same subject but different tenants (or groups) shared conversations,
    and with them the other tenant's questions."""
    acme = _hs256({"sub": "ops", "org": "acme", "groups": ["acme-ops"], "scope": "read"})
    r = httpx.post(f"{server_url}/v1/chat", json={"question": "Where does Acme fail over to?"},
                   headers=bearer(acme), timeout=60)
    assert r.status_code == 200, r.text
    conversation = {"question": "And the escalation line?", "conversation_id": r.json()["conversation_id"]}
    for claims in ({"sub": "ops", "org": "globex", "groups": ["acme-ops"]}, {"sub": "ops", "org": "acme"}):
        other = _hs256({**claims, "scope": "read"})
        r = httpx.post(f"{server_url}/v1/chat", json=conversation, headers=bearer(other), timeout=60)
        assert r.status_code == 404, (claims, r.text)
    r = httpx.post(f"{server_url}/v1/chat", json=conversation, headers=bearer(acme), timeout=60)
    assert r.status_code == 200, r.text


def test_keys_add_prints_a_working_key_once_and_stores_its_hash(tmp_path, capsys):
    from beleg.cli.main import main

    path = tmp_path / "auth.toml"
    assert main(["keys", "add", "--auth", str(path), "--user", "bo", "--tenant", "acme", "--group", "acme-ops",
                 "--scope", "read", "--scope", "ingest"]) == 0
    key = capsys.readouterr().out.strip()
    assert path.stat().st_mode & 0o777 == 0o600
    assert key not in path.read_text()
    who = load_auth(path).authenticate(f"Bearer {key}")
    assert (who.principal.user, who.principal.tenant, who.scopes) == ("bo", "acme", {"read", "ingest"})
    assert main(["keys", "add", "--auth", str(path), "--user", "cy"]) == 0  # appends: both keys work
    second = capsys.readouterr().out.strip()
    config = load_auth(path)
    assert config.authenticate(f"Bearer {second}").scopes == {"read"}
    assert config.authenticate(f"Bearer {key}").principal.user == "bo"


def test_serve_refuses_a_public_address_without_auth(capsys):
    from beleg.cli.main import main

    assert main(["serve", "--host", "0.0.0.0", "--index", "/nonexistent"]) == 1
    assert "not a loopback address" in capsys.readouterr().err
    from beleg.cli.serve import check_bind

    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", Path("auth.toml"))
    with pytest.raises(ConfigError):
        check_bind("192.168.1.5", None)


def test_a_token_whose_expiry_is_a_string_is_refused(auth_config):
    token = jwt.encode({"sub": "jo", "org": "acme", "aud": "beleg", "exp": str(int(time.time()) + 60)}, SECRET,
                       algorithm="HS256")
    with pytest.raises(AuthError, match="exp"):
        auth_config.authenticate("Bearer " + token)
