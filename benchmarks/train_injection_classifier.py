"""Train and cross-validate a semantic second stage for the injection detector.

The idea: a sentence classifier (logistic regression on multilingual-e5-small vectors)
that flags paraphrased instructions the patterns of ``beleg.ingest.injection`` miss, run at
ingest on the sentences that pass a cheap word gate. It is **not shipped**: in 5-fold
cross-validation it does not reach the target (recall >= 0.95 at FPR <= 0.01), so the
weights are not written by default and the package has no semantic stage; the figures are
in ``benchmarks/results/injection_classifier_training.json`` and docs/benchmarks.md.

Reproducible (seeded, deterministic folds) and offline. Training data, and nothing else:

* the labelled splits the detector was developed on: ``dev`` (dev.jsonl), ``dev-2``
  (test.jsonl) and ``dev-3`` (dev-semantic.jsonl: paraphrase styles the patterns miss and
  hard benign sentences, written by engineer L for this classifier);
* benign sentences cut from the demo corpus chunks (the forum's moderator notice, a real
  injection, excluded) and from the XQuAD dev paragraphs (en + de). A fixed quarter of
  them (by a hash of the sentence) is held out of training and only used to report FPR.

``blind.jsonl`` is never read here.

Model: logistic regression (L2, fit by Newton's method in numpy) on the multilingual-e5-small
``embed_queries`` vector of the normalized text; classes weighted to equal total weight.
The L2 strength is chosen by 5-fold cross-validation, and the threshold is the lowest one
whose out-of-fold FPR on the labelled benign texts and on the training corpus sentences
is at most 1 % (so a held-out FPR has room below the 2 % target). A labelled text counts as
flagged as at run time: any of its gated sentences reaches the threshold.

    python benchmarks/train_injection_classifier.py            # CV figures (~3 min to embed on 2 cores, cached after)
    python benchmarks/train_injection_classifier.py --compare  # also an RBF SVM and an MLP (needs sklearn)
    python benchmarks/train_injection_classifier.py --write W.json  # weights, only if the CV target is met
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common as C
import numpy as np

from beleg.backends.embedders import DEFAULT_EMBEDDER, load_embedder
from beleg.ingest.chunking import ChunkingConfig, chunk_document
from beleg.ingest.injection import detect_instructions
from beleg.ingest.injection_normalize import normalize
from beleg.ingest.readers import reader_for, supported_suffixes

SEED = 20261201
FOLDS = 5
L2_GRID = (1.0, 10.0, 100.0)
TARGET_CV_FPR = 0.01
TARGET_RECALL = 0.95
DATA = C.REPO_ROOT / "tests" / "data" / "injection"
TRAIN_FILES = {"dev": "dev.jsonl", "dev-2": "test.jsonl", "dev-3": "dev-semantic.jsonl"}
HELD_OUT_SHARE = 0.25
CACHE = Path.home() / ".cache" / "beleg-train" / "injection_vectors.npz"
MODERATOR_NOTICE = "Important notice from a moderator"


# ---------------------------------------------------------------------- candidate run-time pieces
# What ingest would run if the classifier were shipped: sentences cut from the *normalized*
# text (obfuscation undone; offsets mapped back), and a cheap word gate so that only
# sentences that could address a model are embedded. Kept here, not in the package, until
# the classifier meets its target (it does not yet; see docs/benchmarks.md).

# A sentence ends at . ! ? followed by space, at a blank line, or before a line that starts a
# block (heading, list item, quote, table row). Other line breaks are spaces, as in Markdown,
# so an instruction spread over several short lines stays one sentence.
_SENTENCE_BREAK = re.compile(
    r"(?<=[.!?])[\"')\]*_]*[ \t]+|\s*\n(?:[ \t]*\n)+\s*|\s*\n(?=[ \t]*(?:[#>|*+-]|\d+[.)]\s))|(?<=[.!?])\s*\n\s*")
_WORD = re.compile(r"[^\W\d_]+")
# The gate. English words match whole (with endings); German nouns also inside compounds
# ("Systemvorgaben", "Zugangsschlüssel"), so those stems carry no leading word boundary.
_GATE_WORDS = re.compile(
    r"\b(?:you\w*|u|ya|thou|du|dich|dir|dein\w*|euch|eu(?:er|re)\w*|sie|ihnen|ihr\w*|"
    r"assistant\w*|assistent\w*|ai|a\.i|ki|bot\w*|chatbot\w*|llm\w*|gpt\w*|model\w*|modell\w*|"
    r"sprachmodell\w*|agent\w*|copilot|claude|gemini|system\w*|"
    r"users?|nutzer\w*|benutzer\w*|anwender\w*|people|anyone|someone|whoever|reader\w*|jemand\w*|"
    r"persona\w*|role\w*|rolle\w*|mode|modus|character|identity|identität|jailbreak\w*|dan|"
    r"from\s+now\s+on|no\s+longer|anymore|ab\s+sofort|ab\s+jetzt|von\s+nun\s+an|nicht\s+mehr|"
    r"previous\w*|earlier|above|prior|before|bisherig\w*|vorherig\w*|vorhin|oben|obig\w*|context|kontext|"
    r"say|says|said|tell|answer\w*|respond\w*|reply|replies|claim\w*|state|insist\w*|"
    r"sag\w*|antwort\w*|behaupt\w*|"
    r"disclaimer\w*|caveat\w*|citation\w*|cite\w*|sources?|references?|warnings?|"
    r"instruction\w*|prompt\w*|rules?|guideline\w*|directive\w*|polic(?:y|ies)|guardrail\w*|"
    r"restriction\w*|constraint\w*|configuration|setup|programming|operator\w*|"
    r"password\w*|passcode\w*|keys?|tokens?|secrets?|credentials?|cookies?|history|conversation\w*|"
    r"chat\w*|session\w*|environment)\b"
    r"|(?:anweisung|regel|vorgabe|richtlinie|einschränkung|konfiguration|passw|schlüssel|geheim|"
    r"zugangs|anmelde|verlauf|gespräch|quelle|haftung|hinweis|warnung|beleg|betreiber|filter)",
    re.IGNORECASE,
)
# An imperative verb opening the sentence (after "please"/"now"/"bitte"/"jetzt").
_GATE_IMPERATIVE = re.compile(
    r"^\W*(?:(?:please|now|bitte|jetzt|also|and|und|then|dann)\W+)*(?:"
    r"ignore|disregard|forget|skip|drop|omit|leave|stop|quit|switch|enter|become|be|act|pretend|play|"
    r"roleplay|behave|take|change|turn|activate|engage|enable|disable|print|show|reveal|output|dump|"
    r"repeat|write|list|send|post|forward|copy|collect|gather|find|"
    r"extract|encode|summari[sz]e|render|include|insert|put|append|add|remove|hide|never|always|"
    r"don'?t|do|make|recommend|override|bypass|obey|follow|use|treat|assume|"
    r"ignoriere|ignorier|vergiss|verwirf|missachte|überspringe|lass|hör|höre|wechsle|wechsel|sei|spiel|"
    r"spiele|verhalte|benimm|gib|zeig|zeige|nenne|schreib|schreibe|sende|schick|schicke|"
    r"leite|kopiere|sammle|such|suche|nimm|füge|hänge|entferne|verschweige|erwähne|"
    r"empfiehl|wiederhole|aktiviere|befolge|folge|tu|tue|mach|mache)\b",
    re.IGNORECASE,
)
_PLACEHOLDER_URL = re.compile(r"\{[^{}\s]{1,40}\}|https?://", re.IGNORECASE)


def gate(sentence: str, obfuscated: bool = False) -> bool:
    """Whether a (normalized) sentence is worth classifying; hidden text is always checked."""
    return obfuscated or bool(_GATE_WORDS.search(sentence) or _GATE_IMPERATIVE.match(sentence)
                              or _PLACEHOLDER_URL.search(sentence))


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence: ``text`` as classified (normalized), ``start``/``end`` in the original."""

    text: str
    start: int
    end: int
    obfuscated: bool


def sentence_spans(text: str) -> list[Sentence]:
    """The sentences of ``text`` cut from its normalized form; pieces under two words skipped."""
    norm = normalize(text)
    out, pos = [], 0
    for m in [*_SENTENCE_BREAK.finditer(norm.text), None]:
        end = len(norm.text) if m is None else m.start()
        raw = norm.text[pos:end]
        lead = len(raw) - len(raw.lstrip())
        piece = " ".join(raw.split())
        if len(_WORD.findall(piece)) >= 2:
            a, b = pos + lead, pos + len(raw.rstrip())
            start, stop = norm.original_span(a, b)
            out.append(Sentence(piece, start, stop, " ".join(text[start:stop].split()) != piece))
        if m is not None:
            pos = m.end()
    return out


# ---------------------------------------------------------------------- data
def labelled_rows() -> list[dict[str, Any]]:
    rows = []
    for split, name in TRAIN_FILES.items():
        with open(DATA / name, encoding="utf-8") as fh:
            rows += [{**json.loads(line), "split": split} for line in fh if line.strip()]
    return rows


def demo_chunk_texts() -> list[str]:
    texts = []
    for path in sorted(C.DEMO_CORPUS.rglob("*")):
        if path.is_file() and path.suffix.lower() in supported_suffixes():
            parsed = reader_for(path).read(path.read_bytes(), path)
            texts += [c.text for c in chunk_document(path.stem, parsed, path.stem, ChunkingConfig())
                      if MODERATOR_NOTICE not in c.text]
    return texts


def corpus_sentences() -> dict[str, list[str]]:
    """Benign sentences, unique, split into ``train`` and ``held_out`` by a hash of the text."""
    return corpus_pieces(lambda text: [s.text for s in sentence_spans(text)])


def corpus_pieces(cut: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """The demo chunks (the moderator's notice left out) and XQuAD paragraphs cut by ``cut``,
    unique, split into ``train`` and ``held_out`` by :func:`held_out_by_hash`."""
    texts = demo_chunk_texts() + [p.context for p in C.load_xquad(["en", "de"])]
    seen: set[str] = set()
    out: dict[str, list[str]] = {"train": [], "held_out": []}
    for text in texts:
        for piece in cut(text):
            if piece not in seen:
                seen.add(piece)
                out["held_out" if held_out_by_hash(piece) else "train"].append(piece)
    return out


def held_out_by_hash(key: str) -> bool:
    """Whether ``key`` falls in the held-out share: a fixed split by the key's hash, the same on every machine."""
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF < HELD_OUT_SHARE


def row_sentences(text: str) -> list[str]:
    """What run time classifies of a labelled text: its gated sentences."""
    return [s.text for s in sentence_spans(text) if gate(s.text, s.obfuscated)]


# ---------------------------------------------------------------------- vectors
class Vectors:
    """Embeddings by text, cached on disk between runs (keyed by the model fingerprint)."""

    def __init__(self) -> None:
        self.embedder = load_embedder(DEFAULT_EMBEDDER)
        self.table: dict[str, np.ndarray] = {}
        if CACHE.exists():
            data = np.load(CACHE, allow_pickle=False)
            if str(data["fingerprint"]) == self.embedder.fingerprint:
                self.table = dict(zip(data["texts"].tolist(), data["vectors"]))

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.table})
        if missing:
            C.log(f"embedding {len(missing)} texts")
            for t, v in zip(missing, self.embedder.embed_queries(missing)):
                self.table[t] = v
            CACHE.parent.mkdir(parents=True, exist_ok=True)
            keys = sorted(self.table)
            np.savez(CACHE, fingerprint=np.array(self.embedder.fingerprint), texts=np.array(keys),
                     vectors=np.stack([self.table[k] for k in keys]))
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self.table[t] for t in texts])


# ---------------------------------------------------------------------- model
def fit(x: np.ndarray, y: np.ndarray, l2: float, iters: int = 30) -> tuple[np.ndarray, float]:
    """Weighted L2 logistic regression by Newton's method; classes weigh the same in total.

    Features are standardised first (e5 vectors vary little per dimension, so an L2 penalty
    on raw vectors mostly shrinks everything); the scaling is folded back into the returned
    weights and bias, which apply to raw vectors.
    """
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mu) / sd
    n, d = z.shape
    w_pos = 0.5 * n / max(1, y.sum())
    w_neg = 0.5 * n / max(1, n - y.sum())
    sw = np.where(y == 1, w_pos, w_neg)
    zb = np.hstack([z, np.ones((n, 1))])
    beta = np.zeros(d + 1)
    reg = np.full(d + 1, l2)
    reg[-1] = 0.0  # the bias is not penalised
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(zb @ beta)))
        grad = zb.T @ (sw * (p - y)) + reg * beta
        hess = (zb * (sw * p * (1 - p))[:, None]).T @ zb + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    w = beta[:-1] / sd
    return w, float(beta[-1] - w @ mu)


def probs(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w + b))) if len(x) else np.zeros(0)


def text_score(sentences: list[str], vec: Vectors, w: np.ndarray, b: float) -> float:
    """A labelled text's score as run time sees it: the highest of its gated sentences (0 if none)."""
    return float(probs(vec(sentences), w, b).max()) if sentences else 0.0


def folds_of(n: int, labels: np.ndarray, seed: int) -> np.ndarray:
    """Stratified fold number per item (deterministic)."""
    rng = np.random.default_rng(seed)
    fold = np.empty(n, dtype=int)
    for cls in (0, 1):
        idx = np.flatnonzero(labels == cls)
        rng.shuffle(idx)
        fold[idx] = np.arange(len(idx)) % FOLDS
    return fold


def threshold_for(benign_scores: list[np.ndarray], target: float) -> float:
    """The lowest threshold at which every benign score set has FPR <= target."""
    cut = 0.0
    for scores in benign_scores:
        s = np.sort(scores)[::-1]
        allowed = int(np.floor(target * len(s)))  # this many may reach the threshold
        # the threshold must exceed the (allowed+1)-th highest score
        cut = max(cut, float(np.nextafter(s[allowed], 1.0)) if allowed < len(s) else 0.0)
    return cut


def cross_validate(rows: list[dict[str, Any]], corpus: list[str], vec: Vectors, l2: float) -> dict[str, Any]:
    """Out-of-fold scores of the labelled texts (run-time rule) and of the corpus sentences."""
    y_rows = np.array([r["label"] == "injection" for r in rows], dtype=float)
    fold_rows = folds_of(len(rows), y_rows, SEED)
    fold_corpus = folds_of(len(corpus), np.zeros(len(corpus)), SEED + 1)
    x_rows = vec([r["norm"] for r in rows])
    x_corpus = vec(corpus)
    row_scores = np.zeros(len(rows))
    corpus_scores = np.zeros(len(corpus))
    for k in range(FOLDS):
        tr_r, tr_c = fold_rows != k, fold_corpus != k
        x = np.vstack([x_rows[tr_r], x_corpus[tr_c]])
        y = np.concatenate([y_rows[tr_r], np.zeros(int(tr_c.sum()))])
        w, b = fit(x, y, l2)
        for i in np.flatnonzero(~tr_r):
            row_scores[i] = text_score(rows[i]["sentences"], vec, w, b)
        corpus_scores[~tr_c] = probs(x_corpus[~tr_c], w, b)
    return {"rows": row_scores, "corpus": corpus_scores, "y": y_rows}


def summarize(rows: list[dict[str, Any]], scores: np.ndarray, threshold: float) -> dict[str, Any]:
    """Recall/FPR of classifier alone and combined with the regex, overall and per language and split."""
    def part(sel: list[int]) -> dict[str, Any]:
        inj = [i for i in sel if rows[i]["label"] == "injection"]
        ben = [i for i in sel if rows[i]["label"] == "benign"]
        sem = lambda i: scores[i] >= threshold  # noqa: E731
        comb = lambda i: sem(i) or rows[i]["regex"]  # noqa: E731
        return {
            "injections": len(inj), "benign": len(ben),
            "semantic_recall": C.rnd(sum(map(sem, inj)) / len(inj)) if inj else None,
            "semantic_fpr": C.rnd(sum(map(sem, ben)) / len(ben)) if ben else None,
            "combined_recall": C.rnd(sum(map(comb, inj)) / len(inj)) if inj else None,
            "combined_caught": sum(map(comb, inj)),
            "combined_fpr": C.rnd(sum(map(comb, ben)) / len(ben)) if ben else None,
            "combined_false_positives": sum(map(comb, ben)),
        }
    everything = list(range(len(rows)))
    out = {"all": part(everything)}
    for key in ("lang", "split"):
        for value in sorted({r[key] for r in rows}):
            out[f"{key}={value}"] = part([i for i in everything if rows[i][key] == value])
    out["combined_misses"] = [rows[i]["text"] for i in everything
                              if rows[i]["label"] == "injection" and not (scores[i] >= threshold or rows[i]["regex"])]
    out["combined_false_positive_texts"] = [rows[i]["text"] for i in everything
                                            if rows[i]["label"] == "benign" and (scores[i] >= threshold or rows[i]["regex"])]
    return out


def recall_at_fpr(scores: np.ndarray, y: np.ndarray, fpr: float) -> float:
    """Recall on injections at the lowest threshold whose FPR on the benign texts is <= fpr."""
    threshold = threshold_for([scores[y == 0]], fpr)
    return C.rnd(float((scores[y == 1] >= threshold).mean()))


class _NumpyLogistic:
    """:func:`fit` behind sklearn's fit/decision_function, as the baseline of the comparison."""

    def __init__(self, l2: float) -> None:
        self.l2 = l2

    def fit(self, x: np.ndarray, y: np.ndarray) -> _NumpyLogistic:
        self.w, self.b = fit(x, y.astype(float), self.l2)
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        return x @ self.w + self.b


def compare_nonlinear(rows: list[dict[str, Any]], corpus: list[str], vec: Vectors, cv_l2: float) -> dict[str, Any]:
    """Whole-text recall at 1 %/2 % FPR on the labelled benign texts, same folds, for the numpy
    logistic regression, an RBF SVM and an MLP (sklearn, if installed): does a non-linear model
    on the same vectors separate better than the linear one?"""
    try:
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC
    except ImportError:
        return {"skipped": "sklearn is not installed"}
    y = np.array([r["label"] == "injection" for r in rows], dtype=int)
    x, xc = vec([r["norm"] for r in rows]), vec(corpus)
    fold = folds_of(len(rows), y.astype(float), SEED)
    models = {
        "logistic_numpy": lambda: _NumpyLogistic(cv_l2),
        "svm_rbf": lambda: make_pipeline(StandardScaler(), SVC(C=10, class_weight="balanced")),
        "mlp_128": lambda: make_pipeline(StandardScaler(), MLPClassifier((128,), alpha=1e-3, max_iter=500,
                                                                         random_state=SEED % 2**31)),
    }
    out: dict[str, Any] = {}
    for name, make in models.items():
        scores = np.zeros(len(rows))
        for k in range(FOLDS):
            model = make()
            model.fit(np.vstack([x[fold != k], xc]), np.concatenate([y[fold != k], np.zeros(len(xc), int)]))
            held = fold == k
            scores[held] = (model.decision_function(x[held]) if hasattr(model, "decision_function")
                            else model.predict_proba(x[held])[:, 1])
        out[name] = {"recall_at_cv_fpr_0.01": recall_at_fpr(scores, y, 0.01),
                     "recall_at_cv_fpr_0.02": recall_at_fpr(scores, y, 0.02)}
        C.log(f"{name}: {out[name]}")
    return out


def meets_cv_target(summary: dict[str, Any]) -> bool:
    """Recall >= 0.95 with FPR <= 0.01 in CV, overall and on dev-3 (the split the patterns
    were not tuned on; on dev and dev-2 the patterns alone score 1.0, which proves nothing)."""
    parts = [summary["all"], summary["split=dev-3"]]
    return all(p["combined_recall"] >= TARGET_RECALL and p["combined_fpr"] <= TARGET_CV_FPR for p in parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", type=Path, metavar="PATH",
                    help="write the weights JSON there (refused unless the CV target is met, see --force)")
    ap.add_argument("--force", action="store_true", help="write the weights even if the CV target is not met")
    ap.add_argument("--compare", action="store_true", help="also cross-validate an RBF SVM and an MLP (sklearn)")
    args = ap.parse_args()

    rows = labelled_rows()
    for r in rows:
        r["norm"] = " ".join(normalize(r["text"]).text.split())
        r["sentences"] = row_sentences(r["text"])
        r["regex"] = bool(detect_instructions(r["text"]))
    corpus = corpus_sentences()
    C.log(f"{len(rows)} labelled texts, {len(corpus['train'])} corpus sentences for training, "
          f"{len(corpus['held_out'])} held out")
    vec = Vectors()
    vec([r["norm"] for r in rows] + [s for r in rows for s in r["sentences"]] + corpus["train"] + corpus["held_out"])

    injections = [r for r in rows if r["label"] == "injection"]
    gate_recall = sum(bool(r["sentences"]) for r in injections) / len(injections)
    gate_misses = [r["text"] for r in injections if not r["sentences"]]
    all_corpus = corpus["train"] + corpus["held_out"]
    gate_pass_corpus = sum(gate(s) for s in all_corpus) / len(all_corpus)

    cv: dict[str, Any] = {}
    best = None
    for l2 in L2_GRID:
        res = cross_validate(rows, corpus["train"], vec, l2)
        threshold = threshold_for([res["rows"][res["y"] == 0], res["corpus"]], TARGET_CV_FPR)
        summary = summarize(rows, res["rows"], threshold)
        summary["threshold"] = C.rnd(threshold, 4)
        summary["corpus_sentence_fpr"] = C.rnd(float((res["corpus"] >= threshold).mean()), 4)
        summary["semantic_recall_at_cv_fpr_0.02"] = recall_at_fpr(res["rows"], res["y"], 0.02)
        cv[str(l2)] = summary
        C.log(f"l2={l2}: threshold {threshold:.3f}, CV semantic recall {summary['all']['semantic_recall']}, "
              f"combined recall {summary['all']['combined_recall']} (dev-3 {summary['split=dev-3']['combined_recall']}), "
              f"combined FPR {summary['all']['combined_fpr']}, corpus FPR {summary['corpus_sentence_fpr']}")
        key = (summary["all"]["combined_recall"], -summary["all"]["combined_fpr"])
        if best is None or key > best[0]:
            best = (key, l2, threshold)
    assert best is not None
    _, l2, threshold = best
    met = meets_cv_target(cv[str(l2)])

    x = np.vstack([vec([r["norm"] for r in rows]), vec(corpus["train"])])
    y = np.concatenate([[float(r["label"] == "injection") for r in rows], np.zeros(len(corpus["train"]))])
    w, b = fit(x, y, l2)
    held_probs = probs(vec(corpus["held_out"]), w, b)
    flagged_held_out = [s for s, p in zip(corpus["held_out"], held_probs) if p >= threshold]
    report = {
        "seed": SEED, "folds": FOLDS, "l2_grid": L2_GRID, "chosen_l2": l2, "threshold": C.rnd(threshold, 4),
        "target": {"recall": TARGET_RECALL, "cv_fpr": TARGET_CV_FPR}, "meets_cv_target": met,
        "training": {"labelled": len(rows), "injections": len(injections),
                     "corpus_sentences": len(corpus["train"]), "held_out_corpus_sentences": len(corpus["held_out"])},
        "gate": {"recall_on_labelled_injections": C.rnd(gate_recall, 4), "misses": gate_misses,
                 "share_of_corpus_sentences_passing": C.rnd(gate_pass_corpus, 4)},
        "held_out_corpus_fpr": C.rnd(len(flagged_held_out) / len(corpus["held_out"]), 4),
        "held_out_corpus_flagged": flagged_held_out,
        "cv": cv,
    }
    if args.compare:
        report["nonlinear_comparison_row_level"] = compare_nonlinear(rows, corpus["train"], vec, l2)
    C.log(f"chosen l2={l2}, threshold {threshold:.4f}, CV target met: {met}; gate recall {gate_recall:.3f}, "
          f"gate passes {gate_pass_corpus:.2f} of corpus sentences; held-out corpus FPR "
          f"{len(flagged_held_out)}/{len(corpus['held_out'])}")
    C.write_result("injection_classifier_training", {"machine": C.machine_info(), **report}, None)
    if args.write is None:
        return
    if not met and not args.force:
        raise SystemExit(f"not writing {args.write}: the CV target (recall >= {TARGET_RECALL} at FPR <= "
                         f"{TARGET_CV_FPR}) is not met; pass --force to write the weights anyway")
    weights = {
        "version": "1", "embedder": DEFAULT_EMBEDDER, "fingerprint": vec.embedder.fingerprint,
        "embed": "embed_queries", "threshold": round(threshold, 6), "bias": round(b, 6),
        "weights": [round(float(v), 6) for v in w],
        "trained_by": "benchmarks/train_injection_classifier.py", "seed": SEED, "l2": l2,
    }
    args.write.write_text(json.dumps(weights) + "\n", encoding="utf-8")
    C.log(f"wrote {args.write}")


if __name__ == "__main__":
    main()
