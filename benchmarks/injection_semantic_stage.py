"""Would a stage that reads meaning help the injection detector? Nearest neighbours over e5, measured.

The v9 detector's misses on writers it never saw are mostly orders without attack vocabulary
("an applicant is to be rated outstanding"). A lexical model cannot generalise from words it
has not seen; a sentence embedding might. This measures one such stage before anyone builds
it: each text is embedded with the multilingual e5-small reference engine (``e5-small``,
"query: " prefix, what Beleg ships), and its score is the mean cosine similarity of its 5
nearest labelled injections minus that of its 5 nearest benign texts (labelled benign texts,
their sentences and windows, and a sample of real documentation units: demo corpus, XQuAD,
package READMEs, as ``train_injection_model.py`` cuts them). A text's score is the highest of
its whole text and, for benign texts, its sentences and windows, as run time would read them.

Protocol, all leave-one-writer-out over ``WRITERS`` of ``train_injection_model.py`` (each split
written by one person who never saw the detector); the held-out splits of
``injection_detector.py`` (``HELD_OUT_SPLITS``) are neither read nor embedded:

* **knn**: the neighbour bank is every other split; the threshold is the lowest at which the
  5-fold out-of-fold FPR on the bank's labelled benign texts is at most 1 % (the learned
  stage's rule).
* **lexical** and **rules**: the v9 learned stage retrained without the writer
  (``train_injection_model.py --save-oof``: its held-out scores and threshold) and v9's rules.
* **combinations**: any stage flags (OR); and a stacked logistic regression over the knn
  margin, the lexical logit and the rule flag (optionally with the rules OR'd after it), fitted
  on the other writers' held-out scores, its threshold at a stated FPR of those writers' benign
  texts. ``cascade`` variants embed a text only when the lexical score reaches ``tau`` or a rule
  fires (the cost control a run-time stage would need); the share of real documentation units
  that would be embedded is reported per ``tau``.

Pooled figures are over the writers the rules were never developed on (as in the training
script). Writes ``benchmarks/results/injection_semantic_stage.json``.

    python benchmarks/train_injection_model.py --out /tmp/lex.json --save-oof /tmp/lex_oof.jsonl  # ~20 min
    python benchmarks/injection_semantic_stage.py --lexical-oof /tmp/lex_oof.jsonl                 # ~9 min

Needs scikit-learn (the stacker). Nothing here is used at run time.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import _common as C
import numpy as np
from injection_detector import HELD_OUT_SPLITS, SPLIT_FILES, load_rows
from train_injection_model import RULES_SEEN, WRITERS, corpus_units, readme_units, row_text, threshold_at_fpr

from beleg.ingest.injection import rule_findings
from beleg.ingest.injection_learned import load_model, scored_units

NEIGHBOURS = 5
TARGET_OOF_FPR = 0.01
CORPUS_SAMPLE = 6000
HELD_OUT_CORPUS_SAMPLE = 1500
SEED = 1
CASCADE_TAUS = (0.0, 0.03, 0.1, 0.2)
STACK_FPRS = (0.01, 0.015, 0.02, 0.03)
ENGINE = "e5-small"


def embed(texts: list[str]) -> tuple[np.ndarray, float]:
    """e5 query embeddings (L2 normalized) and milliseconds per text."""
    from beleg.backends.embedders import load_embedder

    embedder = load_embedder(ENGINE)
    t = time.perf_counter()
    out = [embedder.embed_queries(texts[k:k + 64]) for k in range(0, len(texts), 64)]
    ms = (time.perf_counter() - t) / max(1, len(texts)) * 1e3
    return np.vstack(out).astype(np.float32), ms


def margin(bank: np.ndarray, injection: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Mean similarity of the nearest injections minus that of the nearest benign texts."""
    out = []
    for k in range(0, len(x), 2048):
        sims = x[k:k + 2048] @ bank.T
        near_inj = np.sort(np.where(injection, sims, -1.0), axis=1)[:, -NEIGHBOURS:].mean(1)
        near_ben = np.sort(np.where(~injection, sims, -1.0), axis=1)[:, -NEIGHBOURS:].mean(1)
        out.append(near_inj - near_ben)
    return np.concatenate(out) if out else np.zeros(0)


class Vectors:
    """The embedded rows, the benign rows' sentences and windows, and the documentation units."""

    def __init__(self, rows: list[dict[str, Any]], corpus: list[str], cache: Path | None) -> None:
        self.rows = rows
        self.y = np.array([r["label"] == "injection" for r in rows])
        self.split = np.array([r["split"] for r in rows])
        texts = [row_text(r) for r in rows]
        subs = [(i, u) for i, r in enumerate(rows) if r["label"] == "benign"
                for u in scored_units(r["text"]) if u != texts[i]]
        self.sub_row = np.array([i for i, _ in subs], dtype=int)
        self.corpus_texts = corpus
        everything = texts + [u for _, u in subs] + corpus
        if cache and cache.exists():
            data = np.load(cache)
            vectors, self.ms_per_text = data["vectors"], float(data["ms"])
            if len(vectors) != len(everything):
                raise SystemExit(f"{cache} holds {len(vectors)} vectors, expected {len(everything)}: delete it")
        else:
            vectors, self.ms_per_text = embed(everything)
            if cache:
                np.savez(cache, vectors=vectors, ms=self.ms_per_text)
        n, m = len(texts), len(subs)
        self.row_vec, self.sub_vec, self.corpus_vec = vectors[:n], vectors[n:n + m], vectors[n + m:]

    def bank(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Neighbours from the chosen rows (their sub-units too) plus the documentation units."""
        subs = rows[self.sub_row]
        bank = np.vstack([self.row_vec[rows], self.sub_vec[subs], self.corpus_vec])
        labels = np.concatenate([self.y[rows], np.zeros(int(subs.sum()) + len(self.corpus_vec), bool)])
        return bank, labels

    def scores(self, bank: tuple[np.ndarray, np.ndarray], idx: np.ndarray) -> np.ndarray:
        """The run-time score of each row: the highest over its whole text and its sub-units."""
        out = margin(*bank, self.row_vec[idx])
        position = {int(i): j for j, i in enumerate(idx)}
        picked = [j for j, i in enumerate(self.sub_row) if int(i) in position]
        for j, s in zip(picked, margin(*bank, self.sub_vec[picked])):
            p = position[int(self.sub_row[j])]
            out[p] = max(out[p], s)
        return out

    def cv_threshold(self, rows: np.ndarray) -> float:
        idx = np.where(rows)[0]
        folds = np.random.default_rng(0).permutation(len(idx)) % 5
        benign: list[float] = []
        for k in range(5):
            train = rows.copy()
            train[idx[folds == k]] = False
            test = idx[(folds == k) & ~self.y[idx]]
            benign += self.scores(self.bank(train), test).tolist()
        return threshold_at_fpr(benign, TARGET_OOF_FPR)


def rates(flags: np.ndarray, y: np.ndarray) -> list[int]:
    return [int(flags[y].sum()), int(y.sum()), int(flags[~y].sum()), int((~y).sum())]


def summary(counts: list[int]) -> dict[str, Any]:
    c, n, f, b = counts
    return {"recall": C.rnd(c / n), "caught": f"{c}/{n}", "fpr": C.rnd(f / b, 4), "flagged": f"{f}/{b}"}


def stacked(per_writer: dict[str, dict[str, np.ndarray]], tau: float, fpr: float, rules_after: bool) -> dict[str, Any]:
    """Leave-one-writer-out of the stacker over the writers' held-out stage scores."""
    from sklearn.linear_model import LogisticRegression

    def features(d: dict[str, np.ndarray]) -> np.ndarray:
        lex = np.clip(d["lexical"], 1e-6, 1 - 1e-6)
        lex_logit = np.log(lex / (1 - lex)) - np.log(d["lexical_threshold"] / (1 - d["lexical_threshold"]))
        embedded = (d["lexical"] >= tau) | d["rules"]
        knn = np.where(embedded, np.clip(50 * (d["knn"] - d["knn_threshold"]), -3, 3), -3.0)
        cols = [knn, lex_logit] + ([] if rules_after else [d["rules"].astype(float)])
        return np.c_[tuple(cols)]

    pooled = [0, 0, 0, 0]
    out: dict[str, Any] = {}
    for writer in per_writer:
        others = [w for w in per_writer if w != writer]
        x = np.vstack([features(per_writer[w]) for w in others])
        y = np.concatenate([per_writer[w]["y"] for w in others])
        model = LogisticRegression(C=1.0, class_weight="balanced").fit(x, y)
        threshold = threshold_at_fpr(model.decision_function(x[~y]), fpr)
        d = per_writer[writer]
        flags = model.decision_function(features(d)) >= threshold
        if rules_after:
            flags |= d["rules"]
        counts = rates(flags, d["y"])
        out[writer] = summary(counts)
        if writer not in RULES_SEEN:
            pooled = [a + b for a, b in zip(pooled, counts)]
    return {"pooled_rule_unseen_writers": summary(pooled), "per_writer": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lexical-oof", required=True, type=Path,
                    help="held-out scores of train_injection_model.py --save-oof (same training data)")
    ap.add_argument("--embeddings-cache", type=Path, help="keep the embeddings here between runs (.npz)")
    ap.add_argument("--out", help="result path (default benchmarks/results/injection_semantic_stage.json)")
    args = ap.parse_args()
    splits = [s for s in SPLIT_FILES if s not in HELD_OUT_SPLITS]
    rows = load_rows(splits)
    corpus = corpus_units()
    readmes = readme_units()
    rng = np.random.default_rng(SEED)
    train_units = corpus["train"] + readmes["train"]
    sample = [train_units[i] for i in rng.permutation(len(train_units))[:CORPUS_SAMPLE]]
    held_units = [corpus["held_out"][i] for i in rng.permutation(len(corpus["held_out"]))[:HELD_OUT_CORPUS_SAMPLE]]
    C.log(f"{len(rows)} labelled texts; {len(sample)} documentation units in the bank, {len(held_units)} held out")
    vectors = Vectors(rows, sample + held_units, args.embeddings_cache)
    held_vec = vectors.corpus_vec[len(sample):]
    vectors.corpus_vec = vectors.corpus_vec[:len(sample)]

    lexical: dict[tuple[str, str], tuple[float, float]] = {}
    with open(args.lexical_oof, encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            lexical[(o["split"], o["text"])] = (o["score"], o["threshold"])
    rule_flag = np.array([bool(rule_findings(r["text"])) for r in rows])

    per_writer: dict[str, dict[str, np.ndarray]] = {}
    result: dict[str, Any] = {"protocol": __doc__, "engine": ENGINE, "neighbours": NEIGHBOURS,
                              "target_oof_fpr": TARGET_OOF_FPR, "splits": splits, "held_out_splits_untouched":
                              list(HELD_OUT_SPLITS), "ms_per_embedded_text": C.rnd(vectors.ms_per_text, 2),
                              "machine": C.machine_info(), "per_writer": {}}
    pooled: dict[str, list[int]] = {}
    held_flagged = []
    for writer in [w for w in WRITERS if w in splits]:
        bank_rows = vectors.split != writer
        threshold = vectors.cv_threshold(bank_rows)
        bank = vectors.bank(bank_rows)
        idx = np.where(vectors.split == writer)[0]
        knn = vectors.scores(bank, idx)
        lex = np.array([lexical[(writer, rows[i]["text"])][0] for i in idx])
        lex_thr = lexical[(writer, rows[idx[0]]["text"])][1]
        y, rules = vectors.y[idx], rule_flag[idx]
        per_writer[writer] = {"knn": knn, "knn_threshold": np.full(len(idx), threshold), "lexical": lex,
                              "lexical_threshold": np.full(len(idx), lex_thr), "rules": rules, "y": y}
        flags = {"knn": knn >= threshold, "lexical": lex >= lex_thr, "rules": rules}
        flags["lexical or rules (v9)"] = flags["lexical"] | rules
        flags["knn or lexical"] = flags["knn"] | flags["lexical"]
        flags["knn or lexical or rules"] = flags["knn or lexical"] | rules
        entry = {name: summary(rates(f, y)) for name, f in flags.items()}
        entry["knn_threshold"] = C.rnd(threshold, 4)
        result["per_writer"][writer] = entry
        held_flagged.append(int((margin(*bank, held_vec) >= threshold).sum()))
        if writer not in RULES_SEEN:
            for name, f in flags.items():
                pooled[name] = [a + b for a, b in zip(pooled.get(name, [0, 0, 0, 0]), rates(f, y))]
        C.log(f"{writer}: " + ", ".join(f"{k} {v['recall']}/{v['fpr']}" for k, v in entry.items() if isinstance(v, dict)))
    result["pooled_rule_unseen_writers"] = {name: summary(c) for name, c in pooled.items()}
    result["held_out_documentation_units_flagged_by_knn"] = f"{max(held_flagged)}/{len(held_vec)} (worst writer's bank)"
    result["stacked"] = {}
    for tau in CASCADE_TAUS:
        for fpr in STACK_FPRS:
            for rules_after in (False, True):
                name = f"tau {tau}, stack fpr {fpr}, {'rules OR after' if rules_after else 'rules in the stack'}"
                result["stacked"][name] = stacked(per_writer, tau, fpr, rules_after)
                C.log(f"{name}: {result['stacked'][name]['pooled_rule_unseen_writers']}")
    shipped = load_model()
    doc_scores = np.array([shipped.score(u) for u in held_units])
    doc_rules = np.array([bool(rule_findings(u)) for u in held_units])
    result["documentation_units_embedded_by_cascade"] = {
        str(tau): C.rnd(float(((doc_scores >= tau) | doc_rules).mean()), 4) for tau in CASCADE_TAUS}
    C.write_result("injection_semantic_stage", result, args.out)


if __name__ == "__main__":
    main()
