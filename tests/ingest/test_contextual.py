"""Contextual retrieval: contexts reach both legs, never the stored text; LLM contexts are cached and erased."""

from __future__ import annotations

from pathlib import Path

import pytest

import beleg
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig
from beleg.testing import FakeOpenAIServer

FILLER = "\n\n## Background\n\n" + " ".join(f"Background sentence {i} about queues." for i in range(60)) + "\n"
DOC = ("---\ntitle: Retry settings\nproduct: ferrolink\nversion: '3.0'\nstatus: current\n---\n# Retry settings\n\n"
       "## Attempts\n\nThe default is 25; customers may set any value from 1 to 100.\n\n"
       "## Window\n\nRetries stop after 72 hours.\n")


def _corpus(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "retries.md").write_text(DOC, encoding="utf-8")
    return tmp_path / "docs"


def test_offline_context_is_indexed_not_stored(tmp_path: Path, embedder) -> None:
    config = IndexConfig(ChunkingConfig(context="offline"))
    assert config.index_version != IndexConfig().index_version
    with beleg.open(tmp_path / "kb", config, embedder=embedder) as kb:
        kb.ingest([str(_corpus(tmp_path))], progress=False)
        # "ferrolink" is only in the front matter: the context makes every chunk findable by it.
        hits = kb.search("ferrolink", mode="bm25", k=10)
        assert {h.heading_path[-1] for h in hits} >= {"Attempts", "Window"}
        doc = kb.catalog.document(hits[0].doc_id)
        for h in hits:
            assert doc.text[h.start:h.end] == h.text and "ferrolink" not in h.text.lower()
    with beleg.open(tmp_path / "plain", embedder=embedder) as kb:
        kb.ingest([str(_corpus(tmp_path))], progress=False)
        assert kb.search("ferrolink", mode="bm25", k=10) == []


def test_llm_contexts_are_cached_and_erased(tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(responder=lambda m: "Situated: Zyxwq retry settings of Ferrolink 3.0.") as server:
        monkeypatch.setenv("BELEG_LLM_BASE_URL", server.base_url)
        config = IndexConfig(ChunkingConfig(context="llm:openai-compatible:ctx-model"))
        corpus = _corpus(tmp_path)
        with beleg.open(tmp_path / "kb", config, embedder=embedder) as kb:
            kb.ingest([str(corpus)], progress=False)
            calls = len(server.requests)
            assert calls == kb.status()["chunks"] >= 2
            assert "<chunk>" in server.requests[0].json["messages"][0]["content"]
            assert {h.heading_path[-1] for h in kb.search("zyxwq", mode="bm25", k=10)} >= {"Attempts", "Window"}
            # An edit at the end keeps the document's start: earlier chunks' contexts come from the cache.
            (corpus / "retries.md").write_text(DOC + FILLER + "\n## Appendix\n\nA new closing note.\n",
                                               encoding="utf-8")
            kb.ingest([str(corpus)], progress=False)
            before = len(server.requests)
            (corpus / "retries.md").write_text(DOC + FILLER + "\n## Appendix\n\nAn edited closing note.\n",
                                               encoding="utf-8")
            kb.ingest([str(corpus)], progress=False)
            assert len(server.requests) - before == 1  # only the edited chunk's context is written
            assert kb.status()["chunks"] >= 4
            doc_id = kb.search("zyxwq", mode="bm25", k=1)[0].doc_id
            kb.delete([doc_id])
            assert kb.catalog.db.execute("SELECT COUNT(*) FROM chunk_contexts").fetchone()[0] == 0
