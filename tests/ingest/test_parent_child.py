"""Parent-child (small-to-big): children indexed, parents returned once, offsets exact."""

from __future__ import annotations

from pathlib import Path

import pytest

import beleg
from beleg.errors import ConfigError
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig, chunk_document, parents_of_children
from beleg.ingest.pipeline import TextSource
from beleg.types import ANONYMOUS, Heading, ParsedDocument

SECTION_A = " ".join(f"Retry rule {i}: a failed delivery is retried after {i} minutes of waiting." for i in range(1, 13))
SECTION_B = " ".join(f"Quota note {i}: each tenant may keep {i} thousand queued messages." for i in range(1, 13))
TEXT = f"# Delivery\n\n{SECTION_A}\n\n# Quotas\n\n{SECTION_B}\n"


def _parsed() -> ParsedDocument:
    return ParsedDocument(TEXT, (Heading(1, "Delivery", 0), Heading(1, "Quotas", TEXT.index("# Quotas"))))


def test_children_lie_inside_parents_and_parents_are_the_structure_chunks() -> None:
    config = ChunkingConfig("parent-child", max_tokens=80, child_tokens=25)
    children = chunk_document("d", _parsed(), "Guide", config)
    parents = chunk_document("d", _parsed(), "Guide", ChunkingConfig("structure", max_tokens=80))
    assert len(children) > len(parents) >= 2
    for c in children:
        assert TEXT[c.start:c.end] == c.text and len(c.text.split()) <= 25
        assert sum(p.start <= c.start and c.end <= p.end for p in parents) == 1
    derived = parents_of_children(TEXT, [(c.start, c.end, c.heading_path) for c in children], config)
    assert derived == [(p.start, p.end, p.heading_path) for p in parents]


def test_parents_are_cut_by_the_rules_the_index_was_built_with() -> None:
    # Rules 2 keep a paragraph ending in ":" with the block it announces; an index built under
    # rules 1 cut its children without that, and its parents must be the rules-1 parents, or a
    # child can straddle two of them.
    lead = ("The service reads its settings once at start, so a change needs a restart; on a fresh "
            "installation, set these values in the configuration file before the first start of the service:")
    block = "```\n" + "\n".join(f"option_{i} = {i}" for i in range(12)) + "\n```"
    before = " ".join(SECTION_A.split(". ")[:7])  # ~90 words: with the lead-in it fits, with the block too it does not
    text = f"# Setup\n\n{before}\n\n{lead}\n\n{block}\n"
    parsed = ParsedDocument(text, (Heading(1, "Setup", 0),))
    for rules in (1, 2):
        config = ChunkingConfig("parent-child", max_tokens=150, child_tokens=40, rules=rules)
        children = chunk_document("d", parsed, "Guide", config)
        parents = chunk_document("d", parsed, "Guide", ChunkingConfig("structure", max_tokens=150, rules=rules))
        derived = parents_of_children(text, [(c.start, c.end, c.heading_path) for c in children], config)
        assert derived == [(p.start, p.end, p.heading_path) for p in parents], rules
    assert derived != [(p.start, p.end, p.heading_path) for p in chunk_document(
        "d", parsed, "Guide", ChunkingConfig("structure", max_tokens=150, rules=1))]  # the rules differ here


def test_search_returns_each_parent_once_with_the_matched_child(tmp_path: Path, embedder) -> None:
    config = IndexConfig(ChunkingConfig("parent-child", max_tokens=200, child_tokens=20))
    with beleg.open(tmp_path / "kb", config, embedder=embedder) as kb:
        kb.ingest_texts([TextSource("guide.md", TEXT, {"title": "Guide"})], progress=False)
        doc_text = kb.store.document(kb.search_index().documents(ANONYMOUS)[0].doc_id).text
        for mode in ("bm25", "dense", "hybrid"):
            hits = kb.search("failed delivery retried after minutes", mode=mode, k=5, self_query=False)
            keys = [(h.doc_id, h.start) for h in hits]
            assert len(keys) == len(set(keys)) == (1 if mode == "bm25" else 2)  # each section once
            best = hits[0]
            assert "Quota note" not in best.text  # the parent is its own section, not the next
            assert doc_text[best.start:best.end] == best.text and "Retry rule 1:" in best.text
            assert best.matched is not None and best.start <= best.matched[0] < best.matched[1] <= best.end
            assert len(best.text) > best.matched[1] - best.matched[0]  # the parent is bigger than the child
            assert best.to_json()["matched"] == {"start": best.matched[0], "end": best.matched[1]}


def test_parent_child_is_part_of_the_index_version() -> None:
    plain = IndexConfig(ChunkingConfig()).index_version
    assert IndexConfig(ChunkingConfig("parent-child")).index_version != plain
    assert IndexConfig(ChunkingConfig("parent-child", child_tokens=30)).index_version != \
        IndexConfig(ChunkingConfig("parent-child")).index_version
    with pytest.raises(ConfigError):
        ChunkingConfig("parent-child", max_tokens=40, child_tokens=41)
