"""End to end through the Python API: real files of every format, the real embedder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import beleg
from beleg.errors import ConfigError, FilterError, IndexVersionError
from beleg.index.config import IndexConfig
from beleg.ingest.chunking import ChunkingConfig

READER_DATA = Path(__file__).parent / "data" / "readers"

DOCS = {
    "errors.md": """---
title: Error reference
product: ferrolink
version: "3.0"
status: current
authority: reference
language: en
date: 2026-02-01
---
# Error reference

## E-4012 Signature mismatch

E-4012 means the X-Ferrolink-Signature header did not match the payload. Recompute the HMAC.

## E-4290 Rate limited

E-4290 is returned when the plan's request budget is exhausted; retry after the Retry-After seconds.
""",
    "api.md": """---
title: Queues API
product: ferrolink
version: "3.0"
status: current
authority: reference
language: en
---
# Queues API

## Redrive

POST /v5/queues/{id}/redrive moves dead-lettered messages back into the queue.

## Versions

All new integrations use /api/v3. Every response carries an X-Request-Id header.
""",
    "contract-24.md": """---
title: Service contract 2.4
product: ferrolink
version: "2.4"
status: historical
authority: contract
language: en
date: 2023-04-01
---
# Service contract 2.4

## Retry window

Failed webhook deliveries are retried for 24 hours. The retry_window_hours setting accepts 1 to 24.
""",
    "vertrag-30.md": """---
title: Servicevertrag 3.0
product: ferrolink
version: "3.0"
status: current
authority: contract
language: de
date: 2026-01-10
---
# Servicevertrag 3.0

## Wiederholungsfenster

Schlägt eine Zustellung fehl, wiederholt Ferrolink die Zustellversuche 72 Stunden lang.

## Nachrichtengröße

Die maximale Größe einer Nachricht beträgt 1 MB.
""",
    "runbook.md": """---
title: Nordwind runbook
product: ferrolink
version: "3.0"
status: current
authority: guide
language: en
tenant: nordwind
acl: [ops-nordwind]
---
# Nordwind runbook

Restart mq-nordwind-01.internal when the consumer lag alarm fires.
""",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for name, text in DOCS.items():
        (root / name).write_text(text, encoding="utf-8")
    for name in ("sample.html", "sample.pdf", "sample.docx", "sample.txt"):
        shutil.copy(READER_DATA / name, root / name)
    return root


@pytest.fixture(scope="module")
def kb(corpus: Path, tmp_path_factory: pytest.TempPathFactory, embedder):
    base = beleg.open(tmp_path_factory.mktemp("index") / "kb", embedder=embedder)
    report = base.ingest([str(corpus)], progress=False)
    assert report.count("failed") == 0, report.failures
    yield base
    base.close()


def test_every_format_is_ingested(kb, corpus: Path) -> None:
    sources = {Path(s).name for s in kb.catalog.sources().values()}
    assert {"sample.html", "sample.pdf", "sample.docx", "sample.txt", "errors.md"} <= sources
    status = kb.status()
    assert status["documents"] == len(DOCS) + 4
    assert status["chunks"] >= status["documents"]


@pytest.mark.parametrize(
    "query, expected_doc",
    [("E-4012", "errors.md"), ("/api/v3", "api.md"), ("X-Request-Id", "api.md"),
     ("POST /v5/queues/{id}/redrive", "api.md"), ("retry_window_hours", "contract-24.md")],
)
def test_identifier_lookup_ranks_the_right_document_first(kb, query: str, expected_doc: str) -> None:
    for mode in ("bm25", "hybrid"):
        hits = kb.search(query, mode=mode, k=3)
        assert Path(hits[0].source).name == expected_doc, (mode, [h.source for h in hits])


def test_identifier_section_is_the_top_chunk(kb) -> None:
    hit = kb.search("E-4290", mode="bm25", k=1)[0]
    assert "E-4290" in hit.heading_path[-1]
    doc = kb.document(hit.doc_id)
    assert doc is not None and doc.text[hit.start : hit.end] == hit.text


def test_german_query_finds_german_section(kb) -> None:
    hits = kb.search("Wie groß darf eine Nachricht sein?", mode="bm25", k=3)
    assert hits and hits[0].heading_path[-1] == "Nachrichtengröße"


def test_cross_lingual_dense_search(kb) -> None:
    # The query's language differs from every eligible document's: only a shared
    # multilingual vector space can connect them (BM25 has no word in common).
    hits = kb.search("Was bedeutet es, wenn die Signatur der Webhook-Anfrage nicht stimmt?", mode="dense", k=3,
                     where="language = en")
    assert Path(hits[0].source).name == "errors.md"
    assert hits[0].heading_path[-1].startswith("E-4012")
    hits = kb.search("What is the maximum message size?", mode="dense", k=3, where="language = de")
    assert hits[0].heading_path[-1] == "Nachrichtengröße"


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_filters_apply_inside_each_leg_before_top_k(kb, mode: str) -> None:
    # The best match for "retry window" is the 2.4 contract; filtered to 3.0 the legs must
    # still return eligible hits rather than an emptied list.
    hits = kb.search("retry window hours", mode=mode, k=3, where="version >= 3.0")
    assert hits
    assert all(h.metadata["version"] == "3.0" for h in hits)
    hits = kb.search("retry window hours", mode=mode, k=50, filters={"status": "historical"})
    assert {Path(h.source).name for h in hits} == {"contract-24.md"}


def test_bm25_never_returns_zero_score_hits(kb) -> None:
    hits = kb.search("zzzunknownterm E-9999", mode="bm25", k=10)
    assert hits == []


def test_filter_that_excludes_everything_returns_nothing(kb) -> None:
    assert kb.search("E-4012", where="product = nothing", k=5) == []


def test_bad_filter_and_empty_query_raise(kb) -> None:
    with pytest.raises(FilterError):
        kb.search("x", where="version >=")
    with pytest.raises(ConfigError):
        kb.search("   ")


def test_reingest_unchanged_embeds_nothing(kb, corpus: Path) -> None:
    report = kb.ingest([str(corpus)], progress=False)
    assert report.embedded == 0
    assert report.count("unchanged") == len(DOCS) + 4


def test_mmr_and_weighted_fusion_run(kb) -> None:
    plain = kb.search("retry window", k=5)
    diverse = kb.search("retry window", k=5, mmr_lambda=0.3)
    assert {h.chunk_id for h in diverse} <= {h.chunk_id for h in kb.search("retry window", k=50)}
    assert len(diverse) == len(plain)
    weighted = kb.search("retry window", k=5, fusion="weighted", weights=(0.3, 0.7))
    assert weighted and 0 <= weighted[0].score <= 1.0 + 1e-9


def test_opening_with_another_configuration_is_refused(kb) -> None:
    other = IndexConfig(ChunkingConfig("window", 100, 10))
    with pytest.raises(IndexVersionError, match="was built with"):
        beleg.open(kb.path, other)
