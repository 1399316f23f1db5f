"""A search view collects each metadata key's visible values once (self-query asks on every search)."""

from __future__ import annotations

from pathlib import Path

import beleg
from beleg.types import ANONYMOUS, Principal


def test_metadata_values_are_collected_once_per_view_and_principal(tmp_path: Path, embedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("---\nversion: '2.4'\n---\n# A\n\nThe relay restarts nightly.\n", encoding="utf-8")
    (docs / "b.md").write_text("---\nversion: '3.0'\ntenant: acme\n---\n# B\n\nThe relay restarts hourly.\n",
                               encoding="utf-8")
    with beleg.open(tmp_path / "kb", embedder=embedder) as kb:
        kb.ingest([str(docs)], progress=False)
        view = kb.search_index()
        calls = []
        original = view.documents

        def counted(principal, doc_ids=None):
            calls.append(principal)
            return original(principal, doc_ids)

        view.documents = counted  # type: ignore[method-assign]
        acme = Principal("u", "acme")
        assert view.metadata_values("version", ANONYMOUS) == {"2.4"}
        assert view.metadata_values("version", ANONYMOUS) == {"2.4"}
        assert view.metadata_values("version", acme) == {"2.4", "3.0"}  # another principal: its own values
        assert view.metadata_values("version", Principal("U", "ACME")) == {"2.4", "3.0"}  # same access key, cached
        assert len(calls) == 2
        values = view.metadata_values("version", ANONYMOUS)
        values.add("9.9")  # a caller's copy: the cached values do not change
        assert view.metadata_values("version", ANONYMOUS) == {"2.4"}
        (docs / "c.md").write_text("---\nversion: '1.8'\n---\n# C\n\nThe relay restarts weekly.\n", encoding="utf-8")
        kb.ingest([str(docs)], progress=False)
        assert kb.metadata_values("version") == {"1.8", "2.4"}  # a new commit is a new view
