"""Access control inside every retriever: fail closed, filters can only narrow, no leaks by id."""

from __future__ import annotations

import pytest

import beleg
from beleg.ingest.pipeline import TextSource
from beleg.types import Principal

DOCS = [
    TextSource("public", "Public guide: restart the relay service after a config change.", {"language": "en"}, "Guide", "public"),
    TextSource("a-runbook", "Runbook: restart relay host mq-alpha-01.internal, incident INC-A-7731.",
               {"language": "en", "tenant": "alpha", "acl": ["ops-alpha"]}, "Alpha runbook", "a"),
    TextSource("b-runbook", "Runbook: restart relay host mq-beta-03.internal, incident INC-B-2048.",
               {"language": "en", "tenant": "beta", "acl": ["ops-beta"]}, "Beta runbook", "b"),
    TextSource("alice-note", "Private note: the relay restart password rotation is on Fridays.",
               {"language": "en", "acl": ["user:alice"]}, "Alice note", "alice"),
]
ALPHA = Principal(user="ann", tenant="alpha", groups=("ops-alpha",))


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory, embedder):
    base = beleg.open(tmp_path_factory.mktemp("acl") / "kb", embedder=embedder)
    assert base.ingest_texts(DOCS, progress=False).count("added") == 4
    yield base
    base.close()


def _ids(hits) -> set[str]:
    return {h.doc_id for h in hits}


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_anonymous_sees_public_documents_only(kb, mode: str) -> None:
    assert _ids(kb.search("restart relay", mode=mode, k=50)) == {"public"}


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_tenant_sees_own_and_public_never_foreign(kb, mode: str) -> None:
    assert _ids(kb.search("restart relay", mode=mode, k=50, principal=ALPHA)) == {"public", "a"}
    # An identifier that exists only in the other tenant's runbook: nothing, not a near miss.
    assert "b" not in _ids(kb.search("INC-B-2048 mq-beta-03.internal", mode=mode, k=50, principal=ALPHA))
    # Filters are ANDed with access: naming the other tenant gives nothing.
    assert kb.search("restart relay", mode=mode, k=50, principal=ALPHA, where="tenant = beta") == []
    assert _ids(kb.search("restart relay", mode=mode, k=50, principal=ALPHA, where="tenant = beta or tenant = alpha")) == {"a"}


def test_tenant_and_acl_must_both_match(kb) -> None:
    assert _ids(kb.search("restart relay", k=50, principal=Principal(tenant="alpha"))) == {"public"}
    assert _ids(kb.search("restart relay", k=50, principal=Principal(groups=("ops-alpha",)))) == {"public"}
    assert _ids(kb.search("relay restart password", k=50, principal=Principal(user="alice"))) == {"public", "alice"}
    # Users and groups are separate namespaces: a group called alice is not the user alice.
    assert _ids(kb.search("relay restart password", k=50, principal=Principal(groups=("alice",)))) == {"public"}


def test_read_by_id_respects_access(kb) -> None:
    assert kb.document("b", principal=ALPHA) is None
    assert kb.document("b") is None
    assert kb.document("a", principal=ALPHA) is not None
    assert kb.document("public") is not None


def test_cli_principal_flags(kb, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from beleg.cli.main import main

    assert main(["search", "INC-A-7731", "--index", str(kb.path), "--mode", "bm25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"] == []
    assert main(["search", "INC-A-7731", "--index", str(kb.path), "--mode", "bm25", "--json",
                 "--tenant", "alpha", "--group", "ops-alpha"]) == 0
    assert [h["doc_id"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["a"]
