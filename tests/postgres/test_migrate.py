"""beleg migrate SRC DST: an index copied folder -> PostgreSQL -> folder, without re-embedding,
searches the same."""

from __future__ import annotations

import json
from pathlib import Path

import beleg
from beleg.cli.main import main
from beleg.types import Principal
from tests.postgres.test_cli_postgres import NORDWIND, PUBLIC

QUERIES = ("E-4012 signature", "Krakenwatch escalation desk", "payload secret")
WHO = (None, Principal(None, "nordwind", ()))


def hits(location, query: str, principal, mode: str) -> list[tuple[str, float]]:
    with beleg.open(location, create=False) as kb:
        found = kb.search(query, mode=mode, principal=principal, self_query=False, k=5)
    return [(h.chunk_id, h.score) for h in found]


def same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    return [c for c, _ in a] == [c for c, _ in b] and all(abs(x - y) < 1e-5 for (_, x), (_, y) in zip(a, b))


def test_migrate_between_backends_without_re_embedding(tmp_path: Path, pg_location: str, embedder, capsys,
                                                        monkeypatch) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "errors.md").write_text(PUBLIC, encoding="utf-8")
    (tmp_path / "docs" / "nordwind.md").write_text(NORDWIND, encoding="utf-8")
    folder, back = tmp_path / "kb", tmp_path / "kb-back"
    with beleg.open(folder, embedder=embedder) as kb:
        kb.ingest([tmp_path / "docs"], progress=False)
        kb.search("warm", mode="dense")  # records the embedder's fingerprint
    calls = []
    monkeypatch.setattr(type(embedder), "embed_documents", lambda self, texts: calls.append(texts) or [])
    for source, target in ((folder, pg_location), (pg_location, back)):
        assert main(["migrate", str(source), str(target), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["documents"] == 2 and result["target_documents"] == 2 and result["chunks"] >= 2
    assert calls == []  # nothing was embedded
    monkeypatch.undo()
    for query in QUERIES:
        for principal in WHO:
            for mode in ("bm25", "dense"):
                expected = hits(folder, query, principal, mode)
                assert expected or principal is None
                assert same(hits(pg_location, query, principal, mode), expected), (query, principal, mode)
                assert same(hits(back, query, principal, mode), expected)
    with beleg.open(pg_location, create=False) as kb:
        assert kb.store.get_meta("embedder_fingerprint") == embedder.fingerprint
        located = kb.store.locations()
    assert sorted(Path(p).name for p in located.values()) == ["errors.md", "nordwind.md"]
    with beleg.open(back, create=False) as kb:
        assert kb.store.locations() == located
