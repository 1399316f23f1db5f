from __future__ import annotations

import re

import pytest

from beleg.errors import ConfigError
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.types import Heading, ParsedDocument

TEXT = (
    "# Delivery Guide\n\nIntro paragraph about deliveries.\n\n## Retries\n\n### Window\n\n"
    + " ".join(f"word{i}" for i in range(500))
    + "\n\n### Backoff\n\nExponential backoff doubles the wait.\n\n## Limits\n\nMessages up to 1 MB.\n"
)


def _parsed(text: str = TEXT) -> ParsedDocument:
    heads = tuple(Heading(len(m.group(1)), m.group(2), m.start()) for m in re.finditer(r"^(#+) (.*)$", text, re.M))
    return ParsedDocument(text, heads)


def test_structure_chunks_keep_heading_path_and_exact_offsets() -> None:
    chunks = chunk_document("doc", _parsed(), "Delivery Guide", ChunkingConfig(max_tokens=220))
    paths = [c.heading_path for c in chunks]
    assert paths[0] == ("Delivery Guide",)
    assert ("Delivery Guide", "Retries", "Window") in paths
    assert ("Delivery Guide", "Retries", "Backoff") in paths
    assert ("Delivery Guide", "Limits") in paths
    # The empty "## Retries" section has no chunk of its own; its name lives on in the children.
    assert ("Delivery Guide", "Retries") not in paths
    for c in chunks:
        assert TEXT[c.start : c.end] == c.text
        assert len(c.text.split()) <= 220
    window = [c for c in chunks if c.heading_path[-1] == "Window"]
    assert len(window) == 3 and window[0].text.startswith("### Window")


def test_window_chunks_overlap() -> None:
    chunks = chunk_document("doc", _parsed(), "Delivery Guide", ChunkingConfig("window", 100, 20))
    for a, b in zip(chunks, chunks[1:]):
        assert a.text.split()[-20:] == b.text.split()[:20]
        assert TEXT[a.start : a.end] == a.text


def test_chunk_ids_are_content_hashes() -> None:
    a = chunk_document("doc", _parsed(), "T", ChunkingConfig())
    b = chunk_document("doc", _parsed(), "T", ChunkingConfig())
    assert [c.chunk_id for c in a] == [c.chunk_id for c in b]
    changed = chunk_document("doc", _parsed(TEXT.replace("1 MB", "2 MB")), "T", ChunkingConfig())
    assert [c.chunk_id for c in a][:-1] == [c.chunk_id for c in changed][:-1]
    assert a[-1].chunk_id != changed[-1].chunk_id
    assert len({c.chunk_id for c in a}) == len(a)


@pytest.mark.parametrize("kwargs", [{"method": "fancy"}, {"max_tokens": 2}, {"overlap": 500},
                                    {"method": "parent-child", "child_tokens": 500},
                                    {"method": "semantic", "percentile": 100}])
def test_bad_chunking_config(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        ChunkingConfig(**kwargs)


def _lead_in_text() -> str:
    # 50 words of prose, a paragraph announcing a code block, and the block: with max_tokens
    # 70 the packer's group ends after the announcement, so rules 1 put the block in the next chunk.
    prose = " ".join(f"word{i}" for i in range(50))
    settings = "\n".join(f"realpath_cache_option{i} = {i}" for i in range(10))
    return (f"# PHP setup\n\n{prose}.\n\nYou can configure the TTL in your php.ini. Here is a recommendation:\n\n"
            f"```ini\nrealpath_cache_size = 4096K\n{settings}\n```\n\nMore text after the block.\n")


def test_a_paragraph_ending_in_a_colon_stays_with_the_block_it_announces() -> None:
    text = _lead_in_text()
    chunks = chunk_document("doc", _parsed(text), "PHP setup", ChunkingConfig(max_tokens=70))
    holder = next(c for c in chunks if "Here is a recommendation:" in c.text)
    assert "realpath_cache_size = 4096K" in holder.text
    assert all(text[c.start:c.end] == c.text for c in chunks)
    # An index built with the first rules keeps cutting as it did (its stored config says 1).
    old = chunk_document("doc", _parsed(text), "PHP setup", ChunkingConfig(max_tokens=70, rules=1))
    holder = next(c for c in old if "Here is a recommendation:" in c.text)
    assert "4096K" not in holder.text


def test_chunking_rules_enter_the_index_version_only_from_revision_2() -> None:
    import hashlib
    import json

    from beleg.index.config import CHUNK_RULES, IndexConfig

    first = IndexConfig(ChunkingConfig(rules=1), "e5", "a1")
    blob = json.dumps({"chunking": {"method": "structure", "max_tokens": 220, "overlap": 40},
                       "embedder": "e5", "analyzer": "a1"}, sort_keys=True).encode()
    assert first.index_version == hashlib.sha256(blob).hexdigest()[:12]  # an existing index keeps its version
    assert IndexConfig(ChunkingConfig(), "e5", "a1").index_version != first.index_version
    stored = first.to_json()
    assert IndexConfig.from_json(stored).chunking.rules == 1
    assert IndexConfig.from_json(IndexConfig(ChunkingConfig(), "e5", "a1").to_json()).chunking.rules == CHUNK_RULES
    with pytest.raises(ConfigError, match="rules=9"):
        ChunkingConfig(rules=9)


def test_a_long_table_is_cut_between_rows_from_revision_3() -> None:
    rows = "\n".join(f"| SETTING_{i} | default value {i} for the option number {i} | yes |" for i in range(60))
    text = "# Settings\n\nThe settings:\n\n| Name | Default | Required |\n|---|---|---|\n" + rows + "\n"
    chunks = chunk_document("doc", _parsed(text), "Settings", ChunkingConfig(max_tokens=70))
    assert len(chunks) > 3
    for c in chunks:
        table = c.text[c.text.index("|"):]
        assert all(line.startswith("|") and line.endswith("|") for line in table.splitlines()), c.text
        assert text[c.start:c.end] == c.text
    # Every row is in exactly one chunk, whole.
    assert sum(c.text.count("| yes |") for c in chunks) == 60
    # Revision 2 cut rows in half: an index built with it goes on doing so for its new documents.
    old = chunk_document("doc", _parsed(text), "Settings", ChunkingConfig(max_tokens=70, rules=2))
    assert any(not c.text.rstrip().endswith("|") for c in old)


def test_a_long_hard_wrapped_paragraph_is_cut_between_lines_not_words() -> None:
    line = "this line of a hard wrapped paragraph has no sentence end at all and goes on"
    text = "# Notes\n\n" + "\n".join(f"{line} {i}" for i in range(40)) + "\n"
    chunks = chunk_document("doc", _parsed(text), "Notes", ChunkingConfig(max_tokens=60))
    assert len(chunks) > 2
    assert all(c.text.rstrip().split()[-1].isdigit() for c in chunks)  # each ends where a line ends


def test_many_colon_lines_are_merged_in_linear_work(monkeypatch):
    """Rules 3: 10,000 lines ending in ":" merge into one piece, then word windows. The merge
    used to recount the growing piece for every line (quadratic: seconds at 50 KB); the words
    counted must stay a small multiple of the text's, and the chunks exact windows."""
    import beleg.ingest.chunking as chunking

    text = "key:\n" * 10_000
    counted = []
    real_count = chunking._count_words
    monkeypatch.setattr(chunking, "_count_words", lambda t, s, e: counted.append(e - s) or real_count(t, s, e))
    chunks = chunk_document("d", ParsedDocument(text=text), "T", ChunkingConfig(rules=3))
    assert sum(counted) <= 10 * len(text)
    assert [c.text.split() for c in chunks] == [["key:"] * 220] * 45 + [["key:"] * 100]
    assert chunks[0].start == 0 and chunks[-1].end == len(text) - 1
