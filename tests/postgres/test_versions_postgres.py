"""Blue/green versions as schemas: reindex builds beside the live schema, switch is one
transaction that the next opener sees, delete reaches every version, gc drops the old ones."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

import beleg
from beleg.cli.main import main
from tests.postgres.test_cli_postgres import NORDWIND, PUBLIC


def run(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip().startswith("{") else {"text": out}


def test_reindex_switch_delete_gc(tmp_path: Path, pg_location: str, postgres_url: str, capsys, monkeypatch) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "errors.md").write_text(PUBLIC, encoding="utf-8")
    (tmp_path / "docs" / "nordwind.md").write_text(NORDWIND, encoding="utf-8")
    monkeypatch.setenv("BELEG_INDEX", pg_location)
    assert run(capsys, "init", "--index", f"{pg_location}&statistics=tenant", "--json")[0] == 0
    assert run(capsys, "ingest", str(tmp_path / "docs"), "--json", "--no-progress")[1]["added"] == 2
    before = run(capsys, "status", "--json")[1]

    code, built = run(capsys, "reindex", "--chunking", "window", "--max-tokens", "12", "--overlap", "2", "--json")
    assert code == 0 and built["documents"] == 2
    new_version = built["version"]
    status = run(capsys, "status", "--json")[1]
    assert status["index_version"] == before["index_version"]  # nothing changed for readers
    assert {v["version"]: v["live"] for v in status["versions"]} == {before["index_version"]: True, new_version: False}

    with beleg.open(pg_location, create=False) as old_kb:  # a process that opened before the switch
        assert main(["switch", new_version]) == 0
        capsys.readouterr()
        assert old_kb.config.index_version == before["index_version"]
    with beleg.open(pg_location, create=False) as kb:  # the next opener reads the new version
        assert kb.config.index_version == new_version
        assert kb.store.per_tenant_statistics  # the new version keeps the statistics scope
        assert kb.status()["chunks"] > before["chunks"]  # 12-word windows: more chunks
        hits = kb.search("E-4012 signature", mode="bm25", self_query=False)
        assert hits and Path(hits[0].source).stem == "errors"

    code, erased = run(capsys, "delete", "--where", "tenant = nordwind", "--json")
    assert code == 0 and len(erased["versions"]) == 2 and all(v["documents"] == 1 for v in erased["versions"])

    code, removed = run(capsys, "gc", "--json")
    assert [v["version"] for v in removed["removed"]] == [before["index_version"]]
    status = run(capsys, "status", "--json")[1]
    assert [v["version"] for v in status["versions"]] == [new_version] and status["documents"] == 1
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the version schema goes with its test
        conn.execute(f"DROP SCHEMA IF EXISTS {status['schema']} CASCADE")
