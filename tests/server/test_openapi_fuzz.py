"""The OpenAPI document is real: every endpoint fuzzed with schemathesis (bounded), no 500s,
responses match the schema. Runs against an index of its own, since it uploads and deletes."""

from __future__ import annotations

import os

import httpx
import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import positive_data_acceptance  # noqa: E402

from tests.server.conftest import bearer  # noqa: E402

MAX_EXAMPLES = int(os.environ.get("BELEG_FUZZ_EXAMPLES", "8"))  # per operation; 8: about 15 s on 2 cores


@pytest.fixture(scope="module")
def fuzz_url(tmp_path_factory, embedder, start_server):
    import beleg
    from beleg.server import ServerSettings

    root = tmp_path_factory.mktemp("fuzz")
    (root / "corpus").mkdir()
    (root / "corpus" / "a.md").write_text("# Retry\n\nDeliveries are retried for 72 hours.\n", encoding="utf-8")
    (root / "corpus" / "b.md").write_text("---\ntenant: acme\n---\n# Acme\n\nThe standby is zanzibar-7.\n",
                                          encoding="utf-8")
    with beleg.open(root / "kb", embedder=embedder) as kb:
        kb.ingest([str(root / "corpus")], progress=False)
    settings_ = ServerSettings(rate_per_second=10_000, burst=10_000, max_body_bytes=64 * 1024,
                               upload_dir=root / "uploads")
    with start_server(settings_, index=str(root / "kb")) as url:
        yield url


@pytest.fixture(scope="module")
def api_schema(fuzz_url):
    return schemathesis.openapi.from_url(f"{fuzz_url}/openapi.json")


def test_the_document_is_openapi_3_1_and_describes_every_route(fuzz_url):
    from beleg.server.handlers import ROUTES

    doc = httpx.get(f"{fuzz_url}/openapi.json", timeout=30).json()
    assert doc["openapi"] == "3.1.0"
    for method, path, _, _ in ROUTES:
        assert method.lower() in doc["paths"][path], (method, path)


def test_fuzzed_requests_get_no_500_and_schema_conforming_responses(api_schema, api_keys):
    """Every operation, positive and negative examples, with the default checks (no server
    error, status code, content type and body conform to the document, invalid data rejected).

    (Driven from one test rather than ``schemathesis.pytest.from_fixture``, which does not run
    under pytest 9.)"""
    from hypothesis import given

    operations = [result.ok() for result in api_schema.get_all_operations()]
    labels = {op.label for op in operations}
    assert {"POST /v1/search", "POST /v1/ask", "POST /v1/ingest", "DELETE /v1/documents/{doc_id}"} <= labels, labels
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case):
            # Not "schema-valid data is accepted": a `where` expression has a grammar the schema
            # cannot state, so a well-typed but unparsable one is rightly a 400.
            case.call_and_validate(headers=bearer(api_keys["acme_admin"]), excluded_checks=[positive_data_acceptance])

        fuzz()
