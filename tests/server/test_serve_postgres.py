"""``beleg serve`` over the PostgreSQL backend: a real uvicorn server over a real PostgreSQL.

The server is started the two ways a person would: ``create_app`` in this process (over an
open PostgresKnowledgeBase, reopened on each of its threads) and ``beleg serve --index
postgresql://…`` as a process of its own. Two server processes over one database show that an
upload through one is found by a search on the other at its next query (no restart, no reload).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.postgres.conftest import postgres_url, schema_url  # noqa: F401  (postgres_url is a fixture)
from tests.server.conftest import DOCS, bearer, run_server
from tests.server.test_serve_cli import serve

pytest.importorskip("psycopg", reason='the PostgreSQL tests need beleg[postgres]: pip install -e ".[postgres]"')

ZANZIBAR = "failover standby host zanzibar-7"


@pytest.fixture(scope="module")
def pg_index(postgres_url: str, tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[str]:  # noqa: F811
    """The server corpus (two tenants, public documents) in a fresh schema; its URL."""
    import psycopg

    import beleg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = schema_url(postgres_url, schema)
    corpus = tmp_path_factory.mktemp("pg-corpus")
    for name, text in DOCS.items():
        (corpus / name).parent.mkdir(parents=True, exist_ok=True)
        (corpus / name).write_text(text, encoding="utf-8")
    kb = beleg.open(url, embedder=embedder)
    try:
        report = kb.ingest([str(corpus)], progress=False)
        assert report.count("failed") == 0, report.failures
    finally:
        kb.close()
    yield url
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _app(url: str, embedder: Any, auth_config: Any, upload_dir: Path, **settings_: Any) -> Any:
    """The app over the PostgreSQL index, sharing the session's model (each thread reopens the URL)."""
    from beleg.kb import KnowledgeBase
    from beleg.server import ServerSettings, create_app

    settings = ServerSettings(rate_per_second=1000, burst=1000, upload_dir=upload_dir, **settings_)
    kb = KnowledgeBase(url, create=False, embedder=embedder)
    try:
        return create_app(kb, auth_config, settings)
    finally:
        kb.close()  # the app opened its own connections on its threads


def _sources(url: str, key: str, query: str) -> list[str]:
    r = httpx.post(f"{url}/v1/search", json={"query": query, "k": 10}, headers=bearer(key), timeout=120)
    assert r.status_code == 200, r.text
    return [Path(h["source"]).as_posix() for h in r.json()["hits"]]


def _doc_id(url: str, key: str, query: str, suffix: str) -> str:
    r = httpx.post(f"{url}/v1/search", json={"query": query, "k": 10}, headers=bearer(key), timeout=120)
    return next(h["doc_id"] for h in r.json()["hits"] if Path(h["source"]).as_posix().endswith(suffix))


def test_tenants_are_kept_apart_through_search_ask_and_documents(pg_index, embedder, auth_config, api_keys,
                                                                 tmp_path) -> None:
    with run_server(_app(pg_index, embedder, auth_config, tmp_path / "uploads")) as url:
        status = httpx.get(f"{url}/v1/status", headers=bearer(api_keys["acme"]), timeout=60).json()
        assert status["documents"] == len(DOCS) - 1  # all but globex's

        assert any(s.endswith("acme/runbook.md") for s in _sources(url, api_keys["acme"], ZANZIBAR))
        for other in ("globex", "public"):
            assert not any(s.endswith("acme/runbook.md") for s in _sources(url, api_keys[other], ZANZIBAR))
        assert not any(s.endswith("globex/runbook.md")
                       for s in _sources(url, api_keys["acme"], "Globex maintenance window wombat-3"))

        question = {"question": "Which standby host does Acme fail over to?"}
        mine = httpx.post(f"{url}/v1/ask", json=question, headers=bearer(api_keys["acme"]), timeout=120).json()
        assert not mine["refused"] and "zanzibar-7" in mine["answer"]
        theirs = httpx.post(f"{url}/v1/ask", json=question, headers=bearer(api_keys["globex"]), timeout=120).json()
        assert "zanzibar" not in theirs["answer"]
        assert not any(s["source"].endswith("acme/runbook.md") for s in theirs["sources"])

        doc_id = _doc_id(url, api_keys["acme"], ZANZIBAR, "acme/runbook.md")
        ok = httpx.get(f"{url}/v1/documents/{doc_id}", headers=bearer(api_keys["acme"]), timeout=60)
        assert ok.status_code == 200 and "zanzibar-7" in ok.json()["text"]
        hidden = httpx.get(f"{url}/v1/documents/{doc_id}", headers=bearer(api_keys["globex"]), timeout=60)
        assert hidden.status_code == 404 and "zanzibar" not in hidden.text

        # An upload naming another tenant is refused before anything is stored.
        foreign = b"---\ntenant: globex\n---\n# Planted\n\nplanted-note-qx81 belongs to globex.\n"
        r = httpx.post(f"{url}/v1/ingest", files={"files": ("planted.md", foreign)},
                       headers=bearer(api_keys["acme_ingest"]), timeout=120)
        assert r.status_code == 403, r.text
        assert not any(s.endswith("planted.md") for s in _sources(url, api_keys["globex"], "planted-note-qx81"))


def test_an_upload_through_one_server_process_is_found_by_another(pg_index, embedder, auth_config, auth_file,
                                                                  api_keys, tmp_path) -> None:
    token = f"heliograph-{uuid.uuid4().hex[:6]}"
    note = (f"---\ntitle: Acme heliograph note\nlanguage: en\nacl: [acme-ops]\n---\n# Heliograph\n\n"
            f"The Acme signal relay is called {token}; it answers on channel 19.\n").encode()
    with serve("--index", pg_index, "--auth", str(auth_file), "--rate", "1000", "--burst", "1000",
               "--upload-dir", str(tmp_path / "b-uploads")) as other, \
            run_server(_app(pg_index, embedder, auth_config, tmp_path / "a-uploads")) as here:
        # The other process has its views open already: the upload must reach it at its next query.
        assert not any(s.endswith("heliograph.md") for s in _sources(other, api_keys["acme"], token))

        r = httpx.post(f"{here}/v1/ingest", files={"files": ("heliograph.md", note)},
                       headers=bearer(api_keys["acme_ingest"]), timeout=180)
        assert r.status_code == 200, r.text
        assert r.json()["files"][0]["status"] == "added", r.json()

        assert any(s.endswith("heliograph.md") for s in _sources(other, api_keys["acme"], token))
        # The upload got the uploader's tenant: another tenant's key does not find it on either server.
        for url in (here, other):
            assert not any(s.endswith("heliograph.md") for s in _sources(url, api_keys["globex"], token))

        # And back: a deletion through the other process is gone from this one's next search.
        doc_id = _doc_id(other, api_keys["acme"], token, "heliograph.md")
        gone = httpx.delete(f"{other}/v1/documents/{doc_id}", headers=bearer(api_keys["acme_admin"]), timeout=120)
        assert gone.status_code == 200, gone.text
        assert not any(s.endswith("heliograph.md") for s in _sources(here, api_keys["acme"], token))
        assert httpx.get(f"{here}/v1/documents/{doc_id}", headers=bearer(api_keys["acme"]),
                         timeout=60).status_code == 404


def test_uploads_default_to_a_folder_named_after_the_schema() -> None:
    from beleg.server.worker import default_upload_dir

    assert default_upload_dir("postgresql://u@/db?host=/run/pg&schema=kb_eu") == Path("beleg-uploads") / "kb_eu"
    assert default_upload_dir("postgresql://u@db.example/beleg") == Path("beleg-uploads") / "beleg"
    assert default_upload_dir(Path("/srv/kb")) == Path("/srv/kb-uploads")


def _idle_snapshots(postgres_url: str, application: str) -> int:  # noqa: F811
    """Sessions of ``application`` that hold a snapshot (an open transaction) right now."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        return int(conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                                "AND backend_xmin IS NOT NULL", (application,)).fetchone()[0])


def _wait_for_no_snapshot(postgres_url: str, application: str, within_s: float = 20.0) -> None:  # noqa: F811
    deadline = time.monotonic() + within_s
    while _idle_snapshots(postgres_url, application):
        assert time.monotonic() < deadline, f"the server still holds a snapshot {within_s:g} s after its last request"
        time.sleep(0.1)


def test_an_idle_server_holds_no_snapshot(postgres_url, embedder, auth_config, api_keys,  # noqa: F811
                                                       tmp_path) -> None:
    """An idle reader or writer must not keep a transaction open: it would hold back VACUUM for the
    whole database (an erasure's dead rows would stay) for as long as the server is idle. A busy
    one keeps its view (ending it after every call doubled a search's time)."""
    import psycopg

    import beleg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    application = f"beleg-test-{schema}"
    url = f"{schema_url(postgres_url, schema)}&application_name={application}"
    beleg.open(url, embedder=embedder).close()
    try:
        with run_server(_app(url, embedder, auth_config, tmp_path / "uploads", release_idle_s=0.5)) as server:
            assert _sources(server, api_keys["acme"], "anything at all") == []
            _wait_for_no_snapshot(postgres_url, application)
            note = b"---\ntitle: First note\nlanguage: en\n---\n# First\n\nThe first upload is called kestrel-51.\n"
            r = httpx.post(f"{server}/v1/ingest", files={"files": ("first.md", note)},
                           headers=bearer(api_keys["acme_ingest"]), timeout=60)
            assert r.status_code == 200, r.text
            assert any(s.endswith("first.md") for s in _sources(server, api_keys["acme"], "kestrel-51"))
            _wait_for_no_snapshot(postgres_url, application)
            # The next request opens a new view and still finds the document.
            assert any(s.endswith("first.md") for s in _sources(server, api_keys["acme"], "kestrel-51"))
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


class _FakeStore:
    def __init__(self) -> None:
        self.released = 0

    def forget_view(self) -> None:
        self.released += 1


class _FakeKB:
    root = "postgresql://nobody@/nowhere"

    def __init__(self) -> None:
        self.store = _FakeStore()

    def close(self) -> None:
        pass


class _FakeService:
    def __init__(self) -> None:
        self.kb = _FakeKB()


def test_a_busy_thread_keeps_its_view_and_an_idle_one_ends_it() -> None:
    from beleg.server.worker import IndexThread

    busy = IndexThread("t", _FakeService, release_idle_s=30)  # type: ignore[arg-type]
    try:
        stores = {busy.call_sync(lambda svc: id(svc.kb.store)) for _ in range(20)}
        assert len(stores) == 1 and busy.call_sync(lambda svc: svc.kb.store.released) == 0
    finally:
        busy.close()

    idle = IndexThread("t", _FakeService, release_idle_s=0.3)  # type: ignore[arg-type]
    try:
        def slow(svc: Any) -> int:  # a call longer than the idle time is never cut short
            before = svc.kb.store.released
            time.sleep(1.0)
            return svc.kb.store.released - before

        assert idle.call_sync(slow) == 0
        deadline = time.monotonic() + 20
        while idle.call_sync(lambda svc: svc.kb.store.released) == 0:
            assert time.monotonic() < deadline, "the idle thread's view was never ended"
            time.sleep(0.5)
    finally:
        idle.close()


def test_the_startup_line_and_status_do_not_show_a_database_password() -> None:
    from beleg.server.worker import shown_location

    shown = shown_location("postgresql://beleg:s3cr%40t-pw@db.example:5432/kb?sslmode=require&schema=eu")
    assert "s3cr" not in shown and shown == "postgresql://beleg:***@db.example:5432/kb?sslmode=require&schema=eu"
    assert shown_location("postgresql://postgres@/beleg?host=/run/pg") == "postgresql://postgres@/beleg?host=/run/pg"
    assert shown_location("/srv/kb") == "/srv/kb"


def _with_password(url: str, password: str) -> tuple[str, str]:
    """``url`` with a password (kept when it has one: a trust server ignores it); the password."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        return url, parts.password
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user or 'postgres'}:{password}@{host}")), password


def test_status_over_http_does_not_show_the_database_password(pg_index, embedder, auth_config, api_keys,
                                                              tmp_path) -> None:
    from dataclasses import replace

    from beleg.server.auth import ApiKey, hash_key

    url, password = _with_password(pg_index, "hunter2-not-shown")
    operator = replace(auth_config, keys=(*auth_config.keys, ApiKey(hash_key("k-op"), "op", None, (),
                                                                    frozenset({"admin"}))))
    with run_server(_app(url, embedder, operator, tmp_path / "uploads")) as server:
        r = httpx.get(f"{server}/v1/status", headers=bearer("k-op"), timeout=60)
        reader = httpx.get(f"{server}/v1/status", headers=bearer(api_keys["public"]), timeout=60)
    assert r.status_code == 200 and r.json()["backend"] == "postgresql"
    assert password not in r.text and ":***@" in r.json()["index"]
    assert reader.status_code == 200 and "index" not in reader.json() and password not in reader.text


def test_an_error_that_quotes_the_database_url_does_not_show_its_password(pg_index, embedder, auth_config,
                                                                          api_keys, tmp_path, monkeypatch) -> None:
    from beleg.errors import ConfigError
    from beleg.service import Service

    url, password = _with_password(pg_index, "hunter2%40encoded")

    def unreachable(self: Any, *args: Any, **kwargs: Any) -> Any:  # what connect() says when the server is down
        raise ConfigError(f"cannot connect to PostgreSQL at {url}: connection refused; is the server running?")

    with run_server(_app(url, embedder, auth_config, tmp_path / "uploads")) as server:
        monkeypatch.setattr(Service, "search", unreachable)
        monkeypatch.setattr(Service, "ask", unreachable)
        r = httpx.post(f"{server}/v1/search", json={"query": "x"}, headers=bearer(api_keys["acme"]), timeout=60)
        streamed = httpx.post(f"{server}/v1/ask", json={"question": "x?", "stream": True},
                              headers=bearer(api_keys["acme"]), timeout=60)
    assert r.status_code == 400 and "cannot connect" in r.text
    assert "event: error" in streamed.text and "cannot connect" in streamed.text
    for text in (r.text, streamed.text):
        assert password not in text and "hunter2@encoded" not in text and "***" in text


def test_a_lost_database_connection_is_replaced(postgres_url, pg_index, embedder, auth_config, api_keys,  # noqa: F811
                                                 tmp_path) -> None:
    """Sessions ended under the server (a database restart, an administrator): reads carry on
    over new connections instead of failing until the server is restarted."""
    import psycopg

    application = f"beleg-lost-{uuid.uuid4().hex[:8]}"
    url = f"{pg_index}&application_name={application}"
    with run_server(_app(url, embedder, auth_config, tmp_path / "uploads", read_threads=1)) as server:
        assert any(s.endswith("acme/runbook.md") for s in _sources(server, api_keys["acme"], ZANZIBAR))
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            ended = conn.execute("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                                 "WHERE application_name = %s", (application,)).fetchone()[0]
        assert ended >= 1  # the reader thread's connections
        for _ in range(2):
            assert any(s.endswith("acme/runbook.md") for s in _sources(server, api_keys["acme"], ZANZIBAR))
        r = httpx.get(f"{server}/v1/status", headers=bearer(api_keys["acme"]), timeout=60)
        assert r.status_code == 200 and r.json()["documents"] == len(DOCS) - 1  # all but globex's


def test_a_database_that_does_not_answer_is_a_503_not_an_internal_error() -> None:
    import psycopg

    from beleg.server.app import _classify

    err = _classify(psycopg.OperationalError("server closed the connection unexpectedly (host db.internal)"), operator=True)
    assert (err.status, err.kind, err.headers.get("Retry-After")) == (503, "unavailable", "1")
    assert "db.internal" not in err.message
