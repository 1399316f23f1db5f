"""Load test of ``beleg serve`` over loopback: search and offline ask at 1, 8 and 32 concurrent
clients, with an ingest (uploads through ``POST /v1/ingest``) running the whole time.

The index is a *derived* corpus of ``--sections`` synthetic sections (real sentences, vectors mixed from
real e5 vectors; see ``_common.DERIVATION``), built through the real ingest writer; the
server is a real ``beleg serve`` process with an auth file, and every request embeds its
query with the real model (end to end: HTTP, auth, query embedding, search, JSON). Clients
are threads with one ``httpx.Client`` each, closed loop (a client sends its next request when
the previous one is answered), for ``--seconds`` per phase after a short warm-up.

    python benchmarks/serve_load.py                    # ~10k chunks, 1/8/32 clients, 8 s phases
    python benchmarks/serve_load.py --quick            # ~700 chunks, 8 clients, 3 s phases
    python benchmarks/serve_load.py --sentence-vectors lazy   # the answerer's store empty at the start

Every request takes the next question of one pool of distinct questions (shared by all
clients and phases), so no query embedding, sentence or answer is met twice until the pool
is used up; the result reports how many requests repeated a question. The index is built
with the answerer's sentence vectors stored (``--sentence-vectors ingest``, as ``beleg ingest
--sentence-vectors`` leaves it; derived like the chunk vectors), or without
(``lazy``: each answer embeds and stores the sentences it meets first).

Writes benchmarks/results/serve_load.json (``serve_load_quick.json`` with --quick).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import _common as C
import httpx

KEY_READ = "bench-read-key"
KEY_INGEST = "bench-ingest-key"


def build_index(root: Path, sections: int, quick: bool, seed: int, sentence_vectors: bool) -> dict[str, Any]:
    cache = C.VectorCache()
    bases = C.base_texts()
    if quick:
        bases = bases[::10]
    base_vecs = cache.get([b.text for b in bases], "passage", "base vectors")
    cache.save()
    corpus = C.synth_corpus(sections, bases, base_vecs, seed=seed)
    C.log(f"building an index of {sections} synthetic sections in {root}")
    t0 = time.perf_counter()
    import beleg
    from beleg.ingest.pipeline import TextSource

    # Each synthetic chunk is one section of a Markdown document; structure chunking makes chunks
    # of whole sections (joining short ones), and a chunk gets the derived vector of its last
    # section, looked up instead of computed (no model time for 10k chunks).
    embedder = DerivedEmbedder(cache.embedder, {text: corpus.vectors[doc.first + i] for doc in corpus.docs
                                                for i, text in enumerate(doc.chunk_texts)},
                               derived_sentence_vectors(corpus, bases, base_vecs) if sentence_vectors else {})
    items = [TextSource(doc.source, f"# {doc.metadata['title']}\n\n" + "".join(
                 f"## {head}\n\n{text}\n\n" for head, text in zip(doc.headings, doc.chunk_texts)),
                 dict(doc.metadata), str(doc.metadata["title"]), doc.doc_id) for doc in corpus.docs]
    with beleg.open(root / "kb", embedder=embedder) as kb:
        # Only named when on: the lazy run also works on a Beleg from before the option (an A/B baseline).
        report = kb.ingest_texts(items, progress=False, **({"sentence_vectors": True} if sentence_vectors else {}))
        status = kb.status()
    if report.failures:
        raise RuntimeError(f"{len(report.failures)} synthetic documents failed: {report.failures[:2]}")
    return {"build_s": C.rnd(time.perf_counter() - t0, 2), "documents": status["documents"],
            "chunks": status["chunks"], "derived_vectors": embedder.derived, "embedded_for_real": embedder.real_calls,
            "base_texts": len(bases), "sentence_vectors_stored": getattr(report, "sentence_vectors", None)}


def derived_sentence_vectors(corpus: Any, bases: Any, base_vecs: Any) -> dict[str, Any]:
    """A derived vector for every sentence the answerer may score: the real vector of the base
    text the sentence was borrowed from, else that of the synthetic section holding it."""
    from beleg.sentences import split_sentences

    borrowed = {sp.text: base_vecs[b] for b, base in enumerate(bases) for part in base.sentences
                for sp in split_sentences(part)}
    out: dict[str, Any] = {}
    for doc in corpus.docs:
        for i, text in enumerate(doc.chunk_texts):
            for sp in split_sentences(text):
                out.setdefault(sp.text, borrowed.get(sp.text, corpus.vectors[doc.first + i]))
    return out


class DerivedEmbedder:
    """The real embedder for queries; for chunk texts, the derived vector of the synthetic
    chunk the text contains; for the answerer's sentence passages ("heading: sentence"), the
    derived vector of the sentence (the real model for anything else, counted)."""

    def __init__(self, real: Any, vectors: dict[str, Any], sentences: dict[str, Any]) -> None:
        self.real, self.vectors, self.sentences = real, vectors, sentences
        self.spec, self.dim, self.fingerprint = real.spec, real.dim, real.fingerprint
        self.derived = self.real_calls = 0

    def embed_queries(self, texts: Any) -> Any:
        return self.real.embed_queries(texts)

    def embed_documents(self, texts: Any) -> Any:
        import numpy as np

        out = []
        for text in texts:
            found = next((self.vectors[p.strip()] for p in reversed(text.split("\n")) if p.strip() in self.vectors), None)
            if found is None and "\n" not in text:  # a sentence passage: the heading ends at one of the ": "
                found = next((self.sentences[text[i + 2:]] for i in range(len(text)) if text.startswith(": ", i)
                              and text[i + 2:] in self.sentences), None)
            if found is None:
                self.real_calls += 1
                found = self.real.embed_documents([text])[0]
            else:
                self.derived += 1
            out.append(found)
        return np.stack(out) if out else np.zeros((0, self.dim), dtype=np.float32)


def write_auth(path: Path) -> None:
    from beleg.server.auth import hash_key

    path.write_text(f'[[keys]]\nsha256 = "{hash_key(KEY_READ)}"\nuser = "bench"\ntenant = "acme"\n'
                    f'scopes = ["read"]\n\n[[keys]]\nsha256 = "{hash_key(KEY_INGEST)}"\nuser = "loader"\n'
                    f'tenant = "acme"\nscopes = ["ingest"]\n', encoding="utf-8")


def start_server(index: Path, auth: Path, uploads: Path) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "beleg", "serve", "--index", str(index), "--port", str(port),
                             "--auth", str(auth), "--rate", "1000000", "--burst", "1000000",
                             "--upload-dir", str(uploads)], text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"beleg serve exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("beleg serve did not get ready")
        time.sleep(0.2)


class Ingester(threading.Thread):
    """Uploads one new small document every ``interval`` seconds until stopped."""

    def __init__(self, url: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.url, self.interval = url, interval
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {KEY_INGEST}"}) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                body = (f"# Load note {n}\n\nThe nightly batch {n} of the load test finished on host "
                        f"loadgen-{n % 7}.internal after {n * 3} seconds.\n").encode()
                t0 = time.perf_counter()
                try:
                    r = client.post(f"{self.url}/v1/ingest", files={"files": (f"load-{n}.md", body, "text/markdown")})
                    if r.status_code != 200 or r.json().get("failed"):
                        self.errors.append(f"{r.status_code}: {r.text[:200]}")
                except httpx.HTTPError as exc:
                    self.errors.append(repr(exc))
                self.latencies.append(time.perf_counter() - t0)
                self.stop.wait(self.interval)


class Questions:
    """The next question of one pool, for every client of every phase (thread-safe); counts
    the requests that had to repeat a question because the pool was used up."""

    def __init__(self, pool: list[str]) -> None:
        self.pool, self.taken = pool, 0
        self._lock = threading.Lock()

    def next(self) -> str:
        with self._lock:
            q = self.pool[self.taken % len(self.pool)]
            self.taken += 1
            return q

    @property
    def repeated(self) -> int:
        return max(0, self.taken - len(self.pool))


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system, all threads) the process has used: unlike wall time, what a
    request costs in it does not grow with the load other processes put on the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_phase(url: str, endpoint: str, clients: int, seconds: float, warmup: float,
              questions: Questions) -> dict[str, Any]:
    """``clients`` closed-loop clients on ``endpoint`` for ``seconds`` (after ``warmup``)."""
    start = time.monotonic() + warmup
    end = start + seconds
    latencies: list[list[float]] = [[] for _ in range(clients)]
    counted = [0] * clients  # every request, warm-up included (for CPU per request)
    errors: list[list[str]] = [[] for _ in range(clients)]

    def client(i: int) -> None:
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {KEY_READ}"}) as http:
            while time.monotonic() < end:
                q = questions.next()
                body = {"query": q, "k": 10} if endpoint == "search" else {"question": q}
                t0 = time.perf_counter()
                try:
                    r = http.post(f"{url}/v1/{endpoint}", json=body)
                    ok = r.status_code == 200
                    problem = "" if ok else f"{r.status_code}: {r.text[:200]}"
                except httpx.HTTPError as exc:
                    problem = repr(exc)
                t1 = time.perf_counter()
                counted[i] += 1
                if time.monotonic() >= start:
                    latencies[i].append(t1 - t0)
                    if problem:
                        errors[i].append(problem)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    load = [round(x, 2) for x in os.getloadavg()]
    flat = [x for per in latencies for x in per]
    errs = [e for per in errors for e in per]
    return {"endpoint": endpoint, "clients": clients, "seconds": seconds, "requests": len(flat),
            "warmup_requests": sum(counted) - len(flat),
            "throughput_rps": C.rnd(len(flat) / seconds, 1), "errors": len(errs), "error_examples": errs[:3],
            "latency_ms": C.summarize_ms(flat), "loadavg_at_end": load}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", type=int, default=28_000,
                    help="synthetic sections; structure chunking joins short ones, so 28k give about 10k chunks "
                         "(the result reports the indexed count)")
    ap.add_argument("--clients", default="1,8,32", help="concurrency levels (comma-separated)")
    ap.add_argument("--seconds", type=float, default=8.0, help="measured seconds per phase")
    ap.add_argument("--warmup", type=float, default=1.5, help="unmeasured seconds before each phase")
    ap.add_argument("--ingest-interval", type=float, default=2.0, help="seconds between uploads")
    ap.add_argument("--queries", type=int, default=1500,
                    help="questions drawn for the pool (duplicates dropped; the result reports the pool size)")
    ap.add_argument("--sentence-vectors", choices=("ingest", "lazy"), default="ingest",
                    help="the answerer's sentence vectors stored at build time (as `beleg ingest --sentence-vectors`) "
                         "or left to the answers (lazy: each answer embeds and stores what it meets first)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="smoke run: 2000 sections, 8 clients, 3 s phases")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.quick:
        args.sections, args.clients, args.seconds, args.warmup, args.queries = 2000, "8", 3.0, 0.5, 40
    levels = [int(c) for c in args.clients.split(",") if c.strip()]
    result: dict[str, Any] = {"benchmark": "serve_load", "args": {k: str(v) if isinstance(v, Path) else v
                                                                  for k, v in vars(args).items()},
                              "machine": C.machine_info(), "vectors": C.DERIVATION}
    questions = Questions(list(dict.fromkeys(q["text"] for q in C.benchmark_queries(args.queries))))
    root = Path(tempfile.mkdtemp(prefix="beleg-bench-serve-"))
    proc = None
    try:
        result["index"] = build_index(root, args.sections, args.quick, args.seed, args.sentence_vectors == "ingest")
        write_auth(root / "auth.toml")
        C.log("starting beleg serve")
        t0 = time.perf_counter()
        proc, url = start_server(root / "kb", root / "auth.toml", root / "uploads")
        result["server_ready_s"] = C.rnd(time.perf_counter() - t0, 2)
        result["loadavg_at_start"] = [round(x, 2) for x in os.getloadavg()]
        ingester = Ingester(url, args.ingest_interval)
        ingester.start()
        result["phases"] = []
        for endpoint in ("search", "ask"):
            for clients in levels:
                C.log(f"{endpoint}, {clients} clients, {args.seconds:g} s")
                phase = run_phase(url, endpoint, clients, args.seconds, args.warmup, questions)
                C.log(f"  p50 {phase['latency_ms'].get('p50')} ms, {phase['throughput_rps']} req/s, "
                      f"{phase['errors']} errors")
                result["phases"].append(phase)
        ingester.stop.set()
        ingester.join(timeout=120)
        # Server CPU per request, one client, no upload running (the phases above include the
        # uploads' CPU): on a machine busy with other work this is the figure that compares.
        result["server_cpu"] = []
        for endpoint in ("search", "ask"):
            cpu0 = process_cpu_s(proc.pid)
            phase = run_phase(url, endpoint, 1, args.seconds, args.warmup, questions)
            cpu = process_cpu_s(proc.pid) - cpu0
            n = phase["requests"] + phase.get("warmup_requests", 0)
            result["server_cpu"].append({"endpoint": endpoint, "requests_incl_warmup": n, "server_cpu_s": C.rnd(cpu, 3),
                                         "cpu_ms_per_request": C.rnd(1000 * cpu / n, 2) if n else None,
                                         "wall_p50_ms": phase["latency_ms"].get("p50"), "errors": phase["errors"]})
            C.log(f"  server CPU, {endpoint}, 1 client, no uploads: {result['server_cpu'][-1]['cpu_ms_per_request']} ms "
                  "per request")
        result["questions"] = {"pool": len(questions.pool), "requests": questions.taken,
                               "repeated": questions.repeated}
        result["ingest"] = {"uploads": len(ingester.latencies), "errors": len(ingester.errors),
                            "error_examples": ingester.errors[:3], "latency_ms": C.summarize_ms(ingester.latencies)}
        result["metrics_sample"] = [line for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines()
                                    if line.startswith("beleg_cache_requests_total")]
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    name = "serve_load_quick" if args.quick else "serve_load"
    C.write_result(name + ("_lazy" if args.sentence_vectors == "lazy" else ""), result, args.out)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
