"""The command line with a postgresql:// index: init, ingest, search, ask, status, delete and
leaks, through --index and through $BELEG_INDEX, with tenant documents kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beleg.cli.main import main

PUBLIC = """---
title: Error reference
product: ferrolink
version: "3.0"
status: current
language: en
---
# Error reference

## E-4012 Signature mismatch

E-4012 means the X-Ferrolink-Signature header did not match the payload. Retry after fixing the secret.
"""
NORDWIND = """---
title: Nordwind runbook
tenant: nordwind
language: en
---
# Nordwind runbook

The Nordwind escalation phone is answered by the Krakenwatch desk around the clock.
"""


def first(result: dict) -> str:
    return Path(result["hits"][0]["source"]).stem


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        return code, json.loads(out)
    except ValueError:
        raise AssertionError(f"exit {code}, not JSON: {out!r} {err!r}") from None


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "errors.md").write_text(PUBLIC, encoding="utf-8")
    (tmp_path / "docs" / "nordwind.md").write_text(NORDWIND, encoding="utf-8")
    return tmp_path / "docs"


def test_every_basic_command_with_a_postgresql_index(pg_location: str, docs: Path, capsys, monkeypatch) -> None:
    code, status = run(capsys, "init", "--index", pg_location, "--json")
    assert code == 0 and status["backend"] == "postgresql" and status["documents"] == 0
    code, report = run(capsys, "ingest", str(docs), "--index", pg_location, "--json", "--no-progress")
    assert code == 0 and report["added"] == 2 and report["failed"] == 0
    code, report = run(capsys, "ingest", str(docs), "--index", pg_location, "--json", "--no-progress")
    assert report["unchanged"] == 2 and report["embedded"] == 0

    monkeypatch.setenv("BELEG_INDEX", pg_location)  # no --index from here on
    for mode in ("bm25", "dense", "hybrid"):
        code, result = run(capsys, "search", "E-4012 signature", "--mode", mode, "--json", "-k", "3")
        assert code == 0 and first(result) == "errors", mode
    _, anonymous = run(capsys, "search", "Krakenwatch escalation desk", "--mode", "bm25", "--json")
    assert all(Path(h["source"]).stem != "nordwind" for h in anonymous["hits"])
    _, tenant = run(capsys, "search", "Krakenwatch escalation desk", "--mode", "bm25", "--json",
                    "--tenant", "nordwind")
    assert first(tenant) == "nordwind"

    code, answer = run(capsys, "ask", "What does E-4012 mean?", "--json")
    assert code == 0 and "X-Ferrolink-Signature" in json.dumps(answer)

    code, status = run(capsys, "status", "--json")
    assert status["documents"] == 2 and status["chunks"] >= 2 and status["embeddings"] >= 2

    code, leaks = run(capsys, "leaks", "--json", "--no-progress")
    assert code == 0, leaks

    code, erased = run(capsys, "delete", "--where", "tenant = nordwind", "--json")
    assert code == 0 and len(erased["deleted"]) == 1 and erased["chunks"] >= 1
    _, tenant = run(capsys, "search", "Krakenwatch", "--mode", "bm25", "--json", "--tenant", "nordwind")
    assert tenant["hits"] == []
    assert run(capsys, "status", "--json")[1]["documents"] == 1


def test_a_missing_postgresql_index_is_a_clear_error(pg_location: str, capsys) -> None:
    code = main(["search", "anything", "--index", pg_location])
    err = capsys.readouterr().err
    assert code != 0 and "beleg init --index" in err and "Traceback" not in err


def test_eval_gold_on_a_postgresql_index(tmp_path: Path, pg_location: str, capsys) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\ntitle: A\nlanguage: en\n---\n# A\n\n## Retries\n\nRetried for 72 hours.\n")
    (corpus / "b.md").write_text("---\ntitle: B\nlanguage: en\n---\n# B\n\nMessages are at most 1 MB.\n")
    gold = tmp_path / "gold.yaml"
    gold.write_text("version: 1\ncorpus: corpus\nquestions:\n"
                    "  - {id: g1, question: how long are retries, type: paraphrase, "
                    "relevant: [{doc: a.md, section: Retries, grade: 2}]}\n")
    assert main(["init", "--index", pg_location]) == 0
    assert main(["ingest", str(corpus), "--index", pg_location, "--no-progress"]) == 0
    capsys.readouterr()
    code = main(["eval", "--gold", str(gold), "--index", pg_location, "--modes", "bm25", "--json", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads(out)["results"]  # named config@index-version
    assert len(results) == 1 and next(iter(results)).startswith("bm25@")
    assert next(iter(results.values()))["hit@1"] == 1.0


def test_per_tenant_statistics_are_chosen_in_the_url_at_init(pg_location: str, capsys) -> None:
    code, status = run(capsys, "init", "--index", f"{pg_location}&statistics=tenant", "--json")
    assert code == 0 and status["bm25_statistics"] == "per tenant"
    assert run(capsys, "status", "--index", pg_location, "--json")[1]["bm25_statistics"] == "per tenant"
    assert main(["status", "--index", f"{pg_location}&statistics=sometimes"]) != 0
    assert "expected statistics=tenant or statistics=corpus" in capsys.readouterr().err
