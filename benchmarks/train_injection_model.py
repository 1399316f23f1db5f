"""Train the learned injection stage (detector v6 on) and measure it on writers it never saw.

The model (:mod:`beleg.ingest.injection_learned`) is a logistic regression over TF-IDF word
and character n-grams. Training data: every labelled split in ``tests/data/injection`` except
``HELD_OUT_SPLITS`` of ``injection_detector.py`` (the held-out splits the detector is judged on)
and any named by ``--exclude``, plus benign units from the demo corpus (the moderator's hostile
notice left out), XQuAD and (since v8) the READMEs of three quarters of the
installed packages (by a hash of the package name), cut as run time cuts them
(:func:`scored_units`); the corpus units are split 75/25 by a hash of the text into
training and a held-out check, and (since v9) each training unit counts ``CORPUS_WEIGHT`` times.

The threshold is chosen without the held-out split: the lowest one at which the
out-of-fold (5-fold) false-positive rate on the labelled benign texts is at most 1 %.

Reported (``benchmarks/results/injection_model_training.json``):

* leave-one-writer-out: for each split written by someone who never saw the detector
  (``WRITERS``), train on everything else (threshold by the same CV rule), then recall and
  FPR of the learned stage alone, of the rules alone and of both together on it. The rules
  were developed on blind and blind-2, so their "both" figures are not held-out figures for
  the combined detector; on the other writers' splits they are.
* the shipped model: training size, threshold, held-out corpus units flagged, and a parity
  check against scikit-learn's scores.

    python benchmarks/train_injection_model.py                    # measure only (~3 min)
    python benchmarks/train_injection_model.py --write            # also write the shipped model

Needs scikit-learn (for training only; run time reads the weights with the standard library).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from typing import Any

import _common as C
import numpy as np
from injection_detector import HELD_OUT_SPLITS, SPLIT_FILES, load_rows
from train_injection_classifier import corpus_pieces, held_out_by_hash

from beleg.ingest.injection import detect_instructions, rule_findings
from beleg.ingest.injection_learned import LinearTextModel, grams, learned_spans, load_model, scored_units, text_score
from beleg.ingest.injection_normalize import normalize

MODEL_VERSION = "4"
SEED = 20261202
FOLDS = 5
REGULARIZATION_C = 16.0
TARGET_OOF_FPR = 0.01
#: Splits each written by one person who never saw the detector (the rules were developed on
#: blind and blind-2 afterwards; the others the rules never saw).
WRITERS = ["blind", "blind-2", "blind-3", "blind-4", "train-a", "train-b", "train-c", "blind-5", "blind-6",
           "train-d", "train-e", "train-f"]
RULES_SEEN = {"blind", "blind-2"}
README_UNITS_PER_PACKAGE = 60
#: Each unit of real documentation (demo, XQuAD, READMEs) enters training this many times. v9's
#: new writers pushed the model towards "send", "reply" and "output" in ordinary documentation
#: (6 of 498 held-out README paragraphs flagged with weight 1); weight 2 was chosen among
#: {1, 2} x {60, 200 README units per package} by the held-out README paragraphs and the pinned
#: near-miss tests, before the leave-one-writer-out figures of the choice were measured.
CORPUS_WEIGHT = 2
OUT_MODEL = C.REPO_ROOT / "src" / "beleg" / "ingest" / "data" / "injection_model.json.gz"


def corpus_units() -> dict[str, list[str]]:
    """Benign units (gated windows and their sentences) of the demo corpus and XQuAD, split by a text hash."""
    return corpus_pieces(scored_units)


def readme_units() -> dict[str, Any]:
    """Benign units of the installed packages' descriptions (their READMEs, mostly Markdown with
    links, badges and code): real documentation nobody here wrote, split 75/25 by a hash of the
    package name, so the held-out quarter measures false positives on unseen projects. At most
    ``README_UNITS_PER_PACKAGE`` units per package, so a few long READMEs do not dominate."""
    import importlib.metadata as md

    out: dict[str, Any] = {"train": [], "held_out_paragraphs": [], "packages": []}
    seen: set[str] = set()
    for dist in sorted(md.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        name = (dist.metadata["Name"] or "").lower()
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
        if not name or any(p.startswith(f"{name}==") for p in out["packages"]) or not body.strip():
            continue
        out["packages"].append(f"{name}=={dist.version}")
        paragraphs = [p for p in re.split(r"\n\s*\n", body) if len(p.strip()) >= 40]
        if held_out_by_hash(name):
            out["held_out_paragraphs"] += paragraphs
            continue
        units = []
        for paragraph in paragraphs:
            units += [u for u in scored_units(paragraph) if u not in seen]
            seen.update(units)
        out["train"] += units[:README_UNITS_PER_PACKAGE]
    return out


def row_text(row: dict[str, Any]) -> str:
    return " ".join(normalize(row["text"]).text.split())


def fit(texts: list[str], y: np.ndarray) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(TfidfVectorizer(analyzer=grams, min_df=2, sublinear_tf=True),
                         LogisticRegression(C=REGULARIZATION_C, class_weight="balanced", max_iter=5000))
    return pipe.fit(texts, y)


def training_units(rows: list[dict[str, Any]], corpus: list[str]) -> tuple[list[str], np.ndarray]:
    """Labelled texts whole (injections cannot be labelled sentence by sentence), plus the
    sentences and windows of the benign ones, which run time also scores alone; then the corpus."""
    texts, y = [], []
    for r in rows:
        texts.append(row_text(r))
        y.append(r["label"] == "injection")
        if r["label"] == "benign":
            extra = [u for u in scored_units(r["text"]) if u != texts[-1]]
            texts += extra
            y += [False] * len(extra)
    corpus = corpus * CORPUS_WEIGHT
    return texts + corpus, np.array(y + [False] * len(corpus))


def as_model(pipe: Any, threshold: float) -> LinearTextModel:
    vec, lr = pipe.steps[0][1], pipe.steps[1][1]
    names = vec.get_feature_names_out().tolist()
    return LinearTextModel(idf=dict(zip(names, vec.idf_.tolist())), weights=dict(zip(names, lr.coef_[0].tolist())),
                           bias=float(lr.intercept_[0]), threshold=threshold, version=MODEL_VERSION)


def cv_threshold(rows: list[dict[str, Any]], corpus: list[str]) -> float:
    """The lowest threshold at which the out-of-fold FPR on the labelled benign texts is at most
    TARGET_OOF_FPR, judged by the run-time decision (:func:`text_score`: any window or sentence)."""
    rng = np.random.default_rng(SEED)
    folds = rng.permutation(len(rows)) % FOLDS
    benign_scores = []
    for k in range(FOLDS):
        texts, y = training_units([r for r, f in zip(rows, folds) if f != k], corpus)
        model = as_model(fit(texts, y), 1.0)
        benign_scores += [text_score(r["text"], model) for r, f in zip(rows, folds) if f == k and r["label"] == "benign"]
    return min(0.99, threshold_at_fpr(benign_scores, TARGET_OOF_FPR))


def threshold_at_fpr(benign_scores: Any, fpr: float) -> float:
    """The lowest threshold (flag at or above it) that flags at most ``fpr`` of ``benign_scores``."""
    ranked = np.sort(np.asarray(benign_scores, dtype=float))[::-1]
    return float(np.nextafter(ranked[int(fpr * len(ranked))], np.inf))


def train(rows: list[dict[str, Any]], corpus: list[str]) -> LinearTextModel:
    threshold = cv_threshold(rows, corpus)
    texts, y = training_units(rows, corpus)
    pipe = fit(texts, y)
    model = as_model(pipe, threshold)
    # Run time must score exactly as scikit-learn does; a drift here would silently change the detector.
    sample = texts[::7]
    drift = np.abs(pipe.predict_proba(sample)[:, 1] - [model.score(t) for t in sample]).max()
    if drift > 1e-6:
        raise SystemExit(f"run-time scores differ from scikit-learn's by {drift}")
    return model


def rates(rows: list[dict[str, Any]], flagged: list[bool]) -> dict[str, Any]:
    inj = [f for r, f in zip(rows, flagged) if r["label"] == "injection"]
    ben = [f for r, f in zip(rows, flagged) if r["label"] == "benign"]
    return {"recall": C.rnd(sum(inj) / len(inj)), "caught": f"{sum(inj)}/{len(inj)}",
            "fpr": C.rnd(sum(ben) / len(ben)), "flagged": f"{sum(ben)}/{len(ben)}"}


def judge(model: LinearTextModel, rows: list[dict[str, Any]], scores: list[float]) -> dict[str, Any]:
    """Rates of the learned stage (``scores``: :func:`text_score` of each row), the rules, both as
    the detector combines them (since v10 the model vetoes weak rule findings) and both without the
    veto (v9's combination: either stage flags)."""
    learned = [s >= model.threshold for s in scores]
    rules = [bool(rule_findings(r["text"])) for r in rows]
    both = [bool(detect_instructions(r["text"], model=model)) for r in rows]
    return {"learned": rates(rows, learned), "rules": rates(rows, rules), "both": rates(rows, both),
            "both_without_veto": rates(rows, [a or b for a, b in zip(learned, rules)])}


def pooled(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall and FPR of several splits' counts added up."""
    c, n = (sum(int(p["caught"].split("/")[i]) for p in parts) for i in (0, 1))
    f, b = (sum(int(p["flagged"].split("/")[i]) for p in parts) for i in (0, 1))
    return {"recall": C.rnd(c / n), "caught": f"{c}/{n}", "fpr": C.rnd(f / b), "flagged": f"{f}/{b}"}


def serialize(model: LinearTextModel, meta: dict[str, Any]) -> bytes:
    names = sorted(model.idf)
    data = {"version": model.version, "bias": round(model.bias, 6), "threshold": round(model.threshold, 6),
            "features": names, "idf": [round(model.idf[n], 5) for n in names],
            "weights": [round(model.weights.get(n, 0.0), 5) for n in names], "trained": meta}
    return gzip.compress(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), mtime=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exclude", nargs="*", default=[], help="labelled splits to leave out of training")
    ap.add_argument("--write", action="store_true", help=f"write the shipped model to {OUT_MODEL}")
    ap.add_argument("--out", help="result path (default benchmarks/results/injection_model_training.json)")
    ap.add_argument("--save-oof", help="write each writer's held-out scores (JSON lines) here")
    ap.add_argument("--skip-writers", action="store_true", help="skip the leave-one-writer-out runs")
    args = ap.parse_args()
    # The held-out splits the detector is judged on never enter training.
    splits = [s for s in SPLIT_FILES if s not in args.exclude and s not in HELD_OUT_SPLITS]
    rows = load_rows(splits)
    corpus = corpus_units()
    readmes = readme_units()
    corpus["train"] += readmes["train"]
    C.log(f"{len(rows)} labelled texts from {splits}; corpus units {len(corpus['train'])} + {len(corpus['held_out'])}")
    result: dict[str, Any] = {"protocol": __doc__, "splits": splits, "excluded": args.exclude,
                              "regularization_c": REGULARIZATION_C, "target_oof_fpr": TARGET_OOF_FPR,
                              "corpus_weight": CORPUS_WEIGHT}
    if not args.skip_writers:
        result["leave_one_writer_out"] = {}
        oof: list[dict[str, Any]] = []
        for writer in [w for w in WRITERS if w in splits]:
            model = train([r for r in rows if r["split"] != writer], corpus["train"])
            held = [r for r in rows if r["split"] == writer]
            scores = [text_score(r["text"], model) for r in held]
            result["leave_one_writer_out"][writer] = {"threshold": C.rnd(model.threshold), **judge(model, held, scores)}
            oof += [{"split": writer, "text": r["text"], "label": r["label"], "score": score,
                     "threshold": model.threshold} for r, score in zip(held, scores)]
            C.log(f"{writer}: {result['leave_one_writer_out'][writer]}")
        # Pooled over the writers the rules were never developed on: the combined detector's
        # held-out figure (the learned stage's is held out on every writer).
        unseen = [result["leave_one_writer_out"][w] for w in result["leave_one_writer_out"] if w not in RULES_SEEN]
        if unseen:
            result["pooled_rule_unseen_writers"] = {
                stage: pooled([u[stage] for u in unseen]) for stage in ("learned", "rules", "both", "both_without_veto")}
            C.log(f"pooled over rule-unseen writers: {result['pooled_rule_unseen_writers']}")
        if args.save_oof:
            with open(args.save_oof, "w", encoding="utf-8") as fh:
                fh.writelines(json.dumps(o, ensure_ascii=False) + "\n" for o in oof)
    model = train(rows, corpus["train"])
    held_units = corpus["held_out"]
    check = {"threshold": C.rnd(model.threshold), "features": len(model.idf),
             "labelled_texts": len(rows), "corpus_units": len(corpus["train"]),
             "held_out_corpus_units_flagged": f"{sum(model.score(u) >= model.threshold for u in held_units)}/{len(held_units)}",
             "held_out_readme_paragraphs_flagged": f"{sum(bool(learned_spans(p, model)) for p in readmes['held_out_paragraphs'])}"
                                                   f"/{len(readmes['held_out_paragraphs'])}",
             "readme_packages": readmes["packages"], "readme_units": len(readmes["train"]),
             "labelled_benign_flagged_in_sample": f"{sum(bool(learned_spans(r['text'], model)) for r in rows if r['label'] == 'benign')}"
                                                 f"/{sum(r['label'] == 'benign' for r in rows)}"}
    result["shipped"] = check
    C.log(f"shipped: {check}")
    if args.write:
        OUT_MODEL.parent.mkdir(parents=True, exist_ok=True)
        OUT_MODEL.write_bytes(serialize(model, {"splits": splits, "labelled_texts": len(rows),
                                                "corpus_units": len(corpus["train"]), "seed": SEED,
                                                "readme_packages": readmes["packages"]}))
        C.log(f"wrote {OUT_MODEL} ({OUT_MODEL.stat().st_size} bytes)")
        load_model.cache_clear()
        shipped = load_model()
        drift = max(abs(shipped.score(u) - model.score(u)) for u in held_units)
        check["rounding_drift_on_held_out_units"] = float(f"{drift:.2g}")
    C.write_result("injection_model_training", result, args.out)


if __name__ == "__main__":
    main()
