"""Who is asking, from authentication only: API keys (stored as sha256 hashes) and bearer JWTs.

``auth.toml``::

    [[keys]]
    sha256 = "<hex sha256 of the key>"
    user = "alice"
    tenant = "acme"
    groups = ["acme-ops"]
    scopes = ["read"]            # read | ingest | admin (admin may do everything)

    [jwt]                        # optional
    secret_file = "jwt.secret"   # HS256 with a shared secret (or: secret = "...")
    jwks_file = "jwks.json"      # RS256 with public keys (either or both)
    issuer = "https://idp.example"     # checked when given
    audience = "beleg"                 # checked when given
    user_claim = "sub"
    tenant_claim = "tenant"
    groups_claim = "groups"
    scopes_claim = "scope"       # a list, or a space-separated string

A request body never names the principal: the server builds it from what this module returns.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beleg.errors import BelegError, ConfigError
from beleg.types import ANONYMOUS, Principal

SCOPES = ("read", "ingest", "admin")
KEY_PREFIX = "blg_"


class AuthError(BelegError):
    """The request carries no valid credentials (401)."""


class ScopeError(BelegError, PermissionError):
    """The credentials are valid but lack the scope the endpoint needs (403)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """An authenticated caller: the principal searches run as, its scopes, and a stable id
    (for rate limits, conversations and the audit log; never the key itself)."""

    principal: Principal
    scopes: frozenset[str]
    subject: str

    @property
    def owner(self) -> str:
        """Whose conversations and rate-limit bucket these are: the subject and everything that
        decides what the caller may read, so two tokens of one IdP subject with different
        tenants or groups never share a conversation (its questions) or a bucket."""
        return json.dumps([self.subject, *self.principal.access_key], ensure_ascii=False)

    @property
    def tenantless_token(self) -> bool:
        """A JWT naming no tenant. An API key without a tenant is an operator's, written so by the
        operator in the auth file; a token's claims come from an identity provider, where a
        missing tenant claim is more likely a gap than a grant, so it writes nothing (fail closed)."""
        return self.subject.startswith("jwt:") and not self.principal.tenant

    @property
    def operator(self) -> bool:
        """An operator's key: admin scope and no tenant. Only it is shown what is index-wide
        (paths, generations, lock holders, vocabulary and vector counts: every tenant's
        documents counted together)."""
        return "admin" in self.scopes and not self.principal.tenant

    def require(self, scope: str) -> None:
        if scope not in self.scopes and "admin" not in self.scopes:
            raise ScopeError(f"this key has scopes {sorted(self.scopes)}; the request needs {scope!r}")


@dataclass(frozen=True, slots=True)
class ApiKey:
    sha256: str
    user: str | None
    tenant: str | None
    groups: tuple[str, ...]
    scopes: frozenset[str]


@dataclass(frozen=True, slots=True)
class JwtConfig:
    secret: str | None = None
    jwks: dict[str, Any] | None = None
    issuer: str | None = None
    audience: str | None = None
    user_claim: str = "sub"
    tenant_claim: str = "tenant"
    groups_claim: str = "groups"
    scopes_claim: str = "scope"


@dataclass(frozen=True, slots=True)
class AuthConfig:
    keys: tuple[ApiKey, ...] = ()
    jwt: JwtConfig | None = None
    #: Where it was read from (for messages).
    path: Path | None = field(default=None, compare=False)
    #: Scopes of a request without credentials, as the anonymous principal (public documents
    #: only); empty: such a request is refused. ``beleg serve`` without ``--auth`` (loopback
    #: only) uses ``{"read"}``.
    anonymous_scopes: frozenset[str] = frozenset()

    def authenticate(self, authorization: str | None) -> Identity:
        """The identity of an ``Authorization`` header value; :class:`AuthError` when there is none."""
        if not authorization and self.anonymous_scopes:
            return Identity(ANONYMOUS, self.anonymous_scopes, "anonymous")
        if not authorization:
            raise AuthError("no credentials: send 'Authorization: Bearer KEY'")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise AuthError("the Authorization header must be 'Bearer KEY' (an API key or a JWT)")
        digest = hash_key(token)
        for key in self.keys:  # constant-time comparisons: timing reveals nothing of a stored hash
            if hmac.compare_digest(key.sha256, digest):
                return Identity(Principal(key.user, key.tenant, key.groups), key.scopes, f"key:{digest[:16]}")
        if self.jwt is not None and token.count(".") == 2:
            return _verify_jwt(token, self.jwt)
        raise AuthError("the key or token is not valid")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random API key (256 bits)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def load_auth(path: str | Path) -> AuthConfig:
    """Read ``auth.toml``; a clear :class:`ConfigError` for anything malformed."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the auth file {path}: {exc.strerror or exc}; create it with "
                          f"'beleg keys add --auth {path} ...'") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    keys = tuple(_key_entry(entry, path, i) for i, entry in enumerate(data.get("keys", [])))
    jwt_table = data.get("jwt")
    jwt = _jwt_config(jwt_table, path) if jwt_table is not None else None
    return AuthConfig(keys, jwt, path)


def _key_entry(entry: Any, path: Path, i: int) -> ApiKey:
    where = f"{path}, [[keys]] entry {i + 1}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table, got {type(entry).__name__}")
    digest = str(entry.get("sha256", "")).lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ConfigError(f"{where}: sha256 must be 64 hex digits (the hash of the key, never the key itself)")
    scopes = _scopes(entry.get("scopes", ["read"]), where)
    groups = entry.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        raise ConfigError(f"{where}: groups must be a list of strings, got {groups!r}")
    return ApiKey(digest, _opt_str(entry.get("user"), where, "user"), _opt_str(entry.get("tenant"), where, "tenant"),
                  tuple(groups), scopes)


def _scopes(value: Any, where: str) -> frozenset[str]:
    items = value.split() if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ConfigError(f"{where}: scopes must be a list of {', '.join(SCOPES)}, got {value!r}")
    unknown = sorted(set(items) - set(SCOPES))
    if unknown:
        raise ConfigError(f"{where}: unknown scope(s) {unknown}; use {', '.join(SCOPES)}")
    return frozenset(items)


def _opt_str(value: Any, where: str, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {name} must be a string, got {value!r}")
    return value


def _jwt_config(table: Any, path: Path) -> JwtConfig:
    where = f"{path}, [jwt]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    secret = table.get("secret")
    if table.get("secret_file"):
        secret = _read_relative(path, table["secret_file"], where).strip()
    jwks = None
    if table.get("jwks_file"):
        try:
            jwks = json.loads(_read_relative(path, table["jwks_file"], where))
        except ValueError as exc:
            raise ConfigError(f"{where}: jwks_file is not JSON: {exc}") from None
    if not secret and jwks is None:
        raise ConfigError(f"{where}: give secret_file (HS256) or jwks_file (RS256)")
    claims = {k: str(table[k]) for k in ("user_claim", "tenant_claim", "groups_claim", "scopes_claim") if k in table}
    return JwtConfig(secret or None, jwks, table.get("issuer"), table.get("audience"), **claims)


def _read_relative(base: Path, name: str, where: str) -> str:
    target = Path(name) if os.path.isabs(name) else base.parent / name
    try:
        return target.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {target}: {exc.strerror or exc}") from None


def _verify_jwt(token: str, config: JwtConfig) -> Identity:
    try:
        import jwt
    except ImportError as exc:
        raise ConfigError('JWT support needs PyJWT: pip install "beleg[server]"') from exc
    try:
        header = jwt.get_unverified_header(token)
        alg = header.get("alg")
        if alg == "HS256" and config.secret:
            key: Any = config.secret
        elif alg == "RS256" and config.jwks is not None:
            key = _jwks_key(jwt, config.jwks, header.get("kid"))
        else:
            raise AuthError(f"token algorithm {alg!r} is not accepted here (HS256 with a secret, RS256 with a JWKS)")
        options = {"require": ["exp"], "verify_aud": config.audience is not None}
        claims = jwt.decode(token, key, algorithms=[alg], audience=config.audience, issuer=config.issuer,
                            options=options)  # type: ignore[arg-type]
    except jwt.PyJWTError as exc:
        raise AuthError(f"the token is not valid: {exc}") from None
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, (int, float)):  # PyJWT reads "9999999999" as a time
        raise AuthError(f"the token is not valid: 'exp' must be a number of seconds (NumericDate), got {exp!r}")
    return _identity_from_claims(claims, config)


def _jwks_key(jwt: Any, jwks: dict[str, Any], kid: str | None) -> Any:
    keys = jwt.PyJWKSet.from_dict(jwks).keys
    for jwk in keys:
        if kid is None or jwk.key_id == kid:
            return jwk.key
    raise AuthError(f"no key with kid {kid!r} in the configured JWKS")


def _identity_from_claims(claims: dict[str, Any], config: JwtConfig) -> Identity:
    user = claims.get(config.user_claim)
    tenant = claims.get(config.tenant_claim)
    groups = claims.get(config.groups_claim, [])
    raw_scopes = claims.get(config.scopes_claim, [])
    if isinstance(groups, str):
        groups = groups.split()
    if isinstance(raw_scopes, str):
        raw_scopes = raw_scopes.split()
    if not isinstance(groups, list) or not isinstance(raw_scopes, list):
        raise AuthError(f"claims {config.groups_claim!r} and {config.scopes_claim!r} must be lists or strings")
    if not isinstance(user, str) or not user.strip():
        # Every token without one would be the same caller (one conversation owner, one bucket).
        raise AuthError(f"the token has no {config.user_claim!r} claim naming the user")
    scopes = frozenset(str(s) for s in raw_scopes) & frozenset(SCOPES)  # unknown scopes grant nothing
    principal = Principal(user, str(tenant) if tenant else None,
                          tuple(str(g) for g in groups))
    return Identity(principal, scopes, f"jwt:{claims.get('iss', '')}:{user}")
