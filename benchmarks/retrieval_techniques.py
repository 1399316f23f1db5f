"""Each retrieval technique of issue 15 against plain hybrid: quality, latency, index size.

``python benchmarks/retrieval_techniques.py [--limit 150]`` writes
``benchmarks/results/retrieval_techniques.json`` and prints the Markdown table of
docs/benchmarks.md. Data:

* the demo gold set (``demo/gold.yaml``, every question with a grade-2 document; a
  question's principal is used), over ``demo/corpus``;
* XQuAD dev (``tests/data/xquad``, the half this project may tune on): en questions over en
  paragraphs, de over de, de questions over en paragraphs; one document per paragraph;
  the first ``--limit`` questions of each (default 150 of 632: a subset, to spare a
  shared machine).

Metrics per configuration: Hit@1, Hit@5 and MRR@10 at document level (a grade-2 document,
or the question's paragraph), *answer@5* (an answer string occurs in the text of the top
5 hits: what a reader or an LLM actually gets), *words@5* (the words of those 5 hits:
the prompt cost), p50 latency per search (ms, one thread), and the index's size on disk
and chunk count. Document vectors are cached in ``.cache/retrieval_techniques`` (by
model fingerprint and text), so reruns embed only what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import dir_size, git_commit, machine_info, mib, rnd  # noqa: E402

import beleg  # noqa: E402
from beleg.backends.embedders import load_embedder  # noqa: E402
from beleg.index.config import IndexConfig  # noqa: E402
from beleg.ingest.chunking import ChunkingConfig  # noqa: E402
from beleg.ingest.pipeline import TextSource  # noqa: E402
from beleg.retrieve.compress import CompressOptions  # noqa: E402
from beleg.retrieve.ensemble import parse_ensemble  # noqa: E402
from beleg.retrieve.techniques import Techniques, load_rerank  # noqa: E402
from beleg.types import Principal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
XQUAD = ROOT / "tests" / "data" / "xquad"
CACHE = ROOT / ".cache" / "retrieval_techniques"
K = 10


class CachedEmbedder:
    """The real embedder with a persistent passage-vector cache (queries are not cached)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.spec, self.dim, self.fingerprint = inner, inner.spec, inner.dim, inner.fingerprint
        self.path = CACHE / f"{hashlib.sha256(inner.fingerprint.encode()).hexdigest()[:16]}.pkl"
        self.vectors: dict[str, bytes] = pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        self.new = 0

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        todo = [(k, t) for k, t in dict(zip(keys, texts)).items() if k not in self.vectors]
        if todo:
            for (k, _), v in zip(todo, self.inner.embed_documents([t for _, t in todo])):
                self.vectors[k] = np.asarray(v, np.float32).tobytes()
            self.new += len(todo)
        return np.vstack([np.frombuffer(self.vectors[k], np.float32) for k in keys]) if keys else \
            np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_queries(texts)

    def save(self) -> None:
        if self.new:
            CACHE.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.vectors))
            tmp.replace(self.path)
            self.new = 0


@dataclass
class Query:
    text: str
    relevant: set[str]  # document sources (suffix match)
    answers: list[str]
    principal: Principal = field(default_factory=Principal)


@dataclass
class Dataset:
    name: str
    items: list[TextSource] | list[str]  # TextSources, or paths to ingest
    queries: list[Query]


def demo_dataset() -> Dataset:
    gold = yaml.safe_load((ROOT / "demo" / "gold.yaml").read_text(encoding="utf-8"))
    queries = []
    for q in gold["questions"]:
        relevant = {r["doc"] for r in q.get("relevant") or [] if r.get("grade") == 2}
        if not relevant:
            continue
        p = q.get("principal") or {}
        queries.append(Query(q["question"], relevant, [str(a) for a in q.get("answer") or []],
                             Principal(p.get("user"), p.get("tenant"), tuple(p.get("groups") or ()))))
    return Dataset("demo gold", [str(ROOT / "demo" / "corpus")], queries)


def xquad_dataset(doc_lang: str, query_lang: str, limit: int) -> Dataset:
    docs = json.loads((XQUAD / f"xquad.dev.{doc_lang}.json").read_text(encoding="utf-8"))
    questions = json.loads((XQUAD / f"xquad.dev.{query_lang}.json").read_text(encoding="utf-8"))
    items, queries = [], []
    doc_paras = [(a["title"], p) for a in docs["data"] for p in a["paragraphs"]]
    q_paras = [p for a in questions["data"] for p in a["paragraphs"]]
    for i, ((title, para), qpara) in enumerate(zip(doc_paras, q_paras)):
        source = f"xquad-{doc_lang}/{i:03d}.txt"
        items.append(TextSource(source, para["context"], {"title": title.replace("_", " "), "language": doc_lang}))
        for qa_doc, qa in zip(para["qas"], qpara["qas"]):  # same order in every language (XQuAD is parallel)
            queries.append(Query(qa["question"], {source}, [a["text"] for a in qa_doc["answers"]]))
    label = f"XQuAD {query_lang}" if doc_lang == query_lang else f"XQuAD {query_lang}→{doc_lang}"
    return Dataset(label, items, queries[:limit])


def _limited(ds: Dataset, limit: int | None) -> Dataset:
    return Dataset(ds.name, ds.items, ds.queries[:limit] if limit else ds.queries)


def build(ds: Dataset, chunking: ChunkingConfig, embedder: CachedEmbedder, folder: Path) -> tuple[Any, dict]:
    t0 = time.perf_counter()
    kb = beleg.open(folder, IndexConfig(chunking), embedder=embedder)
    if ds.items and isinstance(ds.items[0], str):
        report = kb.ingest(ds.items, progress=False)  # type: ignore[arg-type]
    else:
        report = kb.ingest_texts(ds.items, progress=False)  # type: ignore[arg-type]
    assert not report.failures, report.failures
    embedder.save()
    status = kb.status()
    return kb, {"chunks": status["chunks"], "index_mib": rnd(mib(dir_size(folder)), 2),
                "build_s": rnd(time.perf_counter() - t0, 1)}


def evaluate(kb: Any, ds: Dataset, techniques: Techniques) -> dict[str, Any]:
    hit1 = hit5 = rr = answer5 = 0.0
    words, ms = [], []
    for q in ds.queries:
        t0 = time.perf_counter()
        hits = kb.search(q.text, k=K, principal=q.principal, techniques=techniques)
        ms.append(1000 * (time.perf_counter() - t0))
        ranks = [i for i, h in enumerate(hits, 1) if any(h.source.endswith(r) for r in q.relevant)]
        first = ranks[0] if ranks else None
        hit1 += first == 1
        hit5 += first is not None and first <= 5
        rr += 1.0 / first if first else 0.0
        top = " ".join(h.text for h in hits[:5])
        answer5 += any(a.casefold() in top.casefold() for a in q.answers)
        words.append(len(top.split()))
    n = len(ds.queries)
    return {"queries": n, "hit@1": rnd(hit1 / n), "hit@5": rnd(hit5 / n), "mrr@10": rnd(rr / n),
            "answer@5": rnd(answer5 / n), "words@5": round(statistics.mean(words)),
            "latency_ms_p50": rnd(statistics.median(ms), 1)}


def configurations(embedder: Any) -> list[tuple[str, ChunkingConfig, Callable[[], Techniques]]]:
    """(name, chunking, techniques); techniques are built lazily (a reranker loads a model)."""
    structure = ChunkingConfig()
    return [
        ("plain hybrid", structure, Techniques),
        ("parent-child", ChunkingConfig("parent-child"), Techniques),
        ("semantic chunks", ChunkingConfig("semantic"), Techniques),
        ("neighbours=1", structure, lambda: Techniques(expand=1)),
        ("compress (400 words)", structure, lambda: Techniques(compress=CompressOptions())),
        ("ensemble bm25:1,dense:2,minilm:1", structure,
         lambda: Techniques(ensemble=parse_ensemble("bm25:1,dense:2,minilm:1"))),
        ("rerank bi-encoder:minilm, 30 candidates", structure,
         lambda: Techniques(reranker=load_rerank("bi-encoder:minilm"), candidates=30)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=150, help="XQuAD questions per variant (default 150)")
    parser.add_argument("--demo-limit", type=int, help="demo gold questions (default all)")
    parser.add_argument("--only", help="comma-separated configuration names to run (default all)")
    parser.add_argument("--datasets", default="demo,en,de,de-en", help="demo,en,de,de-en")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "retrieval_techniques.json")
    args = parser.parse_args()
    embedder = CachedEmbedder(load_embedder("e5-small"))
    makers = {"demo": lambda: _limited(demo_dataset(), args.demo_limit), "en": lambda: xquad_dataset("en", "en", args.limit),
              "de": lambda: xquad_dataset("de", "de", args.limit),
              "de-en": lambda: xquad_dataset("en", "de", args.limit)}
    configs = configurations(embedder)
    if args.only:
        wanted = {s.strip() for s in args.only.split(",")}
        configs = [c for c in configs if c[0] in wanted]
    # Datasets run earlier (another --datasets) stay in the file; the ones run now replace theirs.
    results: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    results.update({"commit": git_commit(), "machine": machine_info(), "k": K})
    results.setdefault("datasets", {})
    lines = ["| data | configuration | Hit@1 | Hit@5 | MRR@10 | answer@5 | words@5 | p50 ms | chunks | index MiB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.datasets.split(","):
            ds = makers[key]()
            built: dict[str, tuple[Any, dict]] = {}
            rows: dict[str, Any] = {}
            results["datasets"][ds.name] = {"queries": len(ds.queries), "configurations": rows}
            for name, chunking, make in configs:
                version = IndexConfig(chunking).index_version
                if version not in built:
                    built[version] = build(ds, chunking, embedder, Path(tmp) / f"{key}-{version}")
                kb, size = built[version]
                techniques = make()
                evaluate(kb, Dataset(ds.name, [], ds.queries[:2]), techniques)  # warm-up: model loads
                row = {**evaluate(kb, ds, techniques), **size}
                rows[name] = row
                print(f"{ds.name} / {name}: {row}", file=sys.stderr, flush=True)
                lines.append(f"| {ds.name} | {name} | {row['hit@1']:.3f} | {row['hit@5']:.3f} | {row['mrr@10']:.3f} | "
                             f"{row['answer@5']:.3f} | {row['words@5']} | {row['latency_ms_p50']:.0f} | "
                             f"{row['chunks']} | {row['index_mib']:.1f} |")
            for kb, _ in built.values():
                kb.close()
            args.out.parent.mkdir(parents=True, exist_ok=True)  # after each dataset: a partial run keeps its part
            args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
