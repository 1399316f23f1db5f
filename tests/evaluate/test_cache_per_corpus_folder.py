"""The eval index cache: the same corpus in two folders (two checkouts) is evaluated from both."""

from __future__ import annotations

from pathlib import Path

from beleg.evaluate.datasets import load_gold
from beleg.evaluate.runner import prepare_index

GOLD = """
version: 1
corpus: corpus
questions:
  - {id: a1, question: "How long are failed webhooks retried?", relevant: [{doc: contract.md, grade: 2}]}
"""


def _checkout(root: Path) -> Path:
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "contract.md").write_text("# Contract\n\nFailed webhooks are retried for 72 hours.\n",
                                                 encoding="utf-8")
    (root / "gold.yaml").write_text(GOLD, encoding="utf-8")
    return root / "gold.yaml"


def test_the_same_corpus_in_a_second_folder_gets_its_own_index(tmp_path: Path, embedder) -> None:
    from beleg.kb import KnowledgeBase

    cache = tmp_path / "cache"
    paths = []
    for name in ("first", "second"):
        # Before: the second copy hashed to the first's index, and its ingest failed with
        # "document id ... belongs to .../first/corpus/contract.md, another file in the index".
        kb = prepare_index(load_gold(_checkout(tmp_path / name)), cache, progress=False,
                           kb_factory=lambda p: KnowledgeBase(p, embedder=embedder))
        try:
            hits = kb.search("How long are failed webhooks retried?", k=1)
            paths.append(Path(hits[0].source))
        finally:
            kb.close()
    assert paths[0].parts[-3] == "first" and paths[1].parts[-3] == "second"
