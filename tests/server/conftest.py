"""A real uvicorn server on a free loopback port over a small index with two tenants.

Fixtures: ``server_kb`` (the index), ``api_keys`` (name → key), ``auth_config``,
``start_server(settings=..., auth=...)`` (a context manager yielding the base URL) and
``server_url`` (one server for the module, default settings).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason='the server tests need beleg[server]: pip install -e ".[server]"')

DOCS = {
    "public/retry.md": """---
title: Delivery guarantees
product: ferrolink
version: "3.0"
status: current
authority: contract
language: en
---
# Delivery guarantees

## Retry window

If a delivery attempt to a webhook target fails, Ferrolink retries the delivery for 72 hours,
measured from the first delivery attempt. After the retry window the message moves to the dead-letter queue.

## Rate limits

Each API key may send 500 requests per minute; bursts of up to 50 requests are accepted.
""",
    "public/errors.md": """---
title: Error codes
product: ferrolink
version: "3.0"
status: current
authority: reference
language: en
---
# Error codes

## E-4012

E-4012 means the queue name is already taken in this namespace. Choose another queue name.

## E-5001

E-5001 means the broker is temporarily unavailable; retry with exponential backoff.
""",
    "acme/runbook.md": """---
title: Acme failover runbook
product: ferrolink
version: "3.0"
status: current
authority: guide
language: en
tenant: acme
acl: [acme-ops]
---
# Acme failover runbook

## Failover

When the primary broker of Acme fails, switch traffic to the standby host zanzibar-7.acme.internal
and page the on-call engineer through the Acme escalation line 4711.
""",
    "globex/runbook.md": """---
title: Globex maintenance runbook
product: ferrolink
version: "3.0"
status: current
authority: guide
language: en
tenant: globex
---
# Globex maintenance runbook

## Maintenance window

Globex maintains its webhook target every Sunday from 02:00 to 04:00; alerts for the queue
quokka-ingest on host wombat-3.globex.internal are muted during that window.
""",
}

SECRET = "test-secret-for-hs256-tokens-0123456789abcdef"


@pytest.fixture(scope="session")
def server_kb(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[Any]:
    import beleg

    root = tmp_path_factory.mktemp("server")
    corpus = root / "corpus"
    for name, text in DOCS.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(text, encoding="utf-8")
    kb = beleg.open(root / "kb", embedder=embedder)
    report = kb.ingest([str(corpus)], progress=False)
    assert report.count("failed") == 0, report.failures
    yield kb
    kb.close()


@pytest.fixture(scope="session")
def api_keys() -> dict[str, str]:
    return {"acme": "key-acme-reader", "globex": "key-globex-reader", "acme_ingest": "key-acme-ingest",
            "acme_admin": "key-acme-admin", "public": "key-public-reader", "operator": "key-operator"}


@pytest.fixture(scope="session")
def auth_file(tmp_path_factory: pytest.TempPathFactory, api_keys: dict[str, str]) -> Path:
    from beleg.server.auth import hash_key

    rows = {"acme": ("alice", "acme", ["acme-ops"], ["read"]), "globex": ("gus", "globex", [], ["read"]),
            "acme_ingest": ("ingo", "acme", ["acme-ops"], ["ingest", "read"]),
            "acme_admin": ("ada", "acme", ["acme-ops"], ["admin"]), "public": ("pat", None, [], ["read"]),
            "operator": ("otto", None, [], ["admin"])}
    folder = tmp_path_factory.mktemp("auth")
    (folder / "jwt.secret").write_text(SECRET, encoding="utf-8")
    lines = ['[jwt]', 'secret_file = "jwt.secret"', 'audience = "beleg"', 'tenant_claim = "org"', ""]
    for name, (user, tenant, groups, scopes) in rows.items():
        lines += ["[[keys]]", f'sha256 = "{hash_key(api_keys[name])}"', f'user = "{user}"']
        if tenant:
            lines.append(f'tenant = "{tenant}"')
        lines += [f"groups = {groups!r}".replace("'", '"'), f"scopes = {scopes!r}".replace("'", '"'), ""]
    path = folder / "auth.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def auth_config(auth_file: Path) -> Any:
    from beleg.server.auth import load_auth

    return load_auth(auth_file)


@contextmanager
def run_server(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


@pytest.fixture(scope="session")
def start_server(server_kb: Any, auth_config: Any) -> Any:
    """``with start_server(settings=ServerSettings(...)) as url:`` — a server of its own."""
    from beleg.server import create_app

    @contextmanager
    def start(settings: Any = None, auth: Any = None, index: Any = None) -> Iterator[str]:
        with run_server(create_app(index if index is not None else server_kb, auth or auth_config, settings)) as url:
            yield url

    return start


@pytest.fixture(scope="module")
def server_url(start_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from beleg.server import ServerSettings

    settings = ServerSettings(rate_per_second=1000, burst=1000, max_body_bytes=256 * 1024,
                              upload_dir=tmp_path_factory.mktemp("uploads"))
    with start_server(settings) as url:
        yield url


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@contextmanager
def tenant_server(tmp_path: Path, embedder: Any, start_server: Any, keys: dict[str, tuple[Any, ...]],
                  names: tuple[str, ...] = ("public/errors.md", "globex/runbook.md")) -> Iterator[tuple[str, Any, Path]]:
    """A server of its own over a fresh index of ``DOCS[name]`` for each of ``names``, with the
    API keys ``keys`` (key → (user, tenant, groups, scopes)) and an upload folder; yields
    (url, knowledge base, upload folder)."""
    import beleg
    from beleg.server import ServerSettings
    from beleg.server.auth import ApiKey, AuthConfig, hash_key

    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    corpus = tmp_path / "corpus"
    for name in names:
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(DOCS[name], encoding="utf-8")
    kb.ingest([str(corpus)], progress=False)
    auth = AuthConfig(tuple(ApiKey(hash_key(k), u, t, g, frozenset(s)) for k, (u, t, g, s) in keys.items()),
                      None, tmp_path / "auth.toml")
    try:
        with start_server(ServerSettings(upload_dir=tmp_path / "uploads"), auth=auth, index=kb) as url:
            yield url, kb, tmp_path / "uploads"
    finally:
        kb.close()
