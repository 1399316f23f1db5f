"""Choose how the detector's stages combine (v12), on the validation writers only.

Detector v11 sent the fine-tuned encoder only the windows the lexical stage scored at least
0.1 (or that held a rule finding), and kept every rule finding the lexical stage did not veto.
On the held-out splits most of what it still missed lay in windows the encoder never read,
and most of what it flagged wrongly came from the rules. This script measures, on the
writers the shipped encoder never trained on (:data:`COMBINATION_WRITERS`: since v14 its
validation writers and the held-out splits scored since; in no training data of the encoder or
of the lexical stage used here), every combination of

* ``gate``: the lexical window score from which the encoder reads a window (0 = every window
  the lexical stage reads, i.e. every paragraph its word gate opens);
* ``threshold``: the encoder's flag level;
* ``read_ungated``: whether the encoder also reads the paragraphs the lexical stage's word gate
  leaves out (v11 never read them);
* ``rule_veto``: a rule finding the lexical veto may drop (a kind it judges, in sentences of at
  least ``RULE_VETO_MIN_WORDS`` words) is dropped when the
  encoder scores every window and sentence around it below this level (0 = no encoder veto);

and reports recall and false-positive rate per combination, plus the paragraphs of two real
documentation sets that no model here was trained on (mailcow, Paperless) each flags. The
held-out split is never read here.

    python benchmarks/injection_combination.py       # after injection_encoder.py --write; ~10 min

The encoder is the shipped one (``src/beleg/ingest/data/injection_encoder.npz``, as run time
reads it); the lexical stage is retrained without the validation writers, as
``injection_encoder.py`` does for its v10 comparison.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections import Counter
from typing import Any

import _common as C
import numpy as np
from injection_detector import realdocs_paragraphs
from injection_encoder import FP_CHECK_SETS, OUT_MODEL, VALIDATION_WRITERS, rates, training_and_validation
from train_injection_model import train as train_lexical

from beleg.ingest.injection import _unit, _vetoable, _vetoed, rule_findings
from beleg.ingest.injection_encoder import load_encoder
from beleg.ingest.injection_learned import read, ungated_windows

#: The writers the combination is chosen on: every split the shipped encoder never trained on and
#: that is not held out (v13's encoder: its validation writers, and blind-11, blind-12 and blind-13,
#: each scored once before it was read; blind-13 since v15). v13's combination was chosen on train-f and blind-6
#: alone; a choice on more writers depends less on one writer's style.
COMBINATION_WRITERS = (*VALIDATION_WRITERS, "blind-11", "blind-12", "blind-13")
GATES = (0.1, 0.05, 0.02, 0.0)
RULE_VETOES = (0.0, 0.01, 0.02, 0.05, 0.1)
THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995)


def row_facts(text: str, lexical: Any, encoder: Any) -> dict[str, Any]:
    """What each stage sees in one text, enough to replay every combination."""
    reading = read(text, lexical)
    rules = rule_findings(text)
    windows = reading.windows
    inside = {(a, b): [(sa, sb) for sa, sb, _ in reading.sentences if a <= sa and sb <= b and (sa, sb) != (a, b)]
              for a, b, _ in windows}
    spans = list(dict.fromkeys(s for w, parts in inside.items() for s in (w, *parts)))
    read_, whole = encoder.read([_unit(text, a, b) for a, b in spans]) if spans else ([], [])
    scores = dict(zip(spans, read_))
    whole_spans = {s for s, w in zip(spans, whole) if w}
    win = [{"lex": best, "rule": any(f.start < b and a < f.end for f in rules),
            "enc": max([scores[(a, b)], *(scores[s] for s in inside[(a, b)])])} for a, b, best in windows]
    kept = []
    for f in rules:
        if _vetoed(f, text, reading):
            continue
        vetoable = _vetoable(f, text, reading)
        around = [scores[s] for s in spans if s[0] < f.end and f.start < s[1] and s in whole_spans]
        kept.append({"vetoable": vetoable, "enc": max(around) if around else None})
    beyond = [span for w, parts in ungated_windows(text) for span in dict.fromkeys([w, *parts])]
    ungated = max(encoder.scores([_unit(text, a, b) for a, b in beyond]), default=0.0) if beyond else 0.0
    return {"windows": win, "rules": kept, "learned": bool(reading.spans), "ungated": float(ungated)}


def stages(facts: dict[str, Any], gate: float, threshold: float, rule_veto: float, read_ungated: bool) -> list[str]:
    """The stages that flag the text under this combination."""
    out = []
    if any(not r["vetoable"] or r["enc"] is None or r["enc"] >= rule_veto for r in facts["rules"]):
        out.append("rules")
    if facts["learned"]:
        out.append("learned")
    if any((w["lex"] >= gate or w["rule"]) and w["enc"] >= threshold for w in facts["windows"]):
        out.append("encoder")
    if read_ungated and facts["ungated"] >= threshold:
        out.append("encoder_ungated")
    return out


def flagged(facts: dict[str, Any], gate: float, threshold: float, rule_veto: float, read_ungated: bool) -> bool:
    return bool(stages(facts, gate, threshold, rule_veto, read_ungated))


def choose(table: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule, fixed before the held-out split was scored: both targets met on the validation
    writers pooled (recall >= 0.95, FPR <= 0.02), then (since v14) the widest margin: the most
    standard errors by which the nearer of the two targets is met, then the fewest paragraphs of
    the outside documentation flagged, then the lowest veto level.

    Until v13 the highest recall came second, which picks the combination at the edge of the
    false-positive target; a held-out writer then lands on either side of it. v12's choice met it
    pooled at 14/738 and missed it on its held-out writer (9/366). On v14's four writers that rule
    would trade 2 more injections caught for 7 more benign texts flagged (29/1467, 0.0198). No
    combination meets both targets on each writer alone (``per_writer``; train-f's benign rows
    never fall to 2 %), so that stricter rule was not an option."""
    def share(count: str) -> tuple[float, int]:  # "15/738" exactly, not the rounded rate (0.0203 is not <= 0.02)
        hit, n = count.split("/")
        return int(hit) / int(n), int(n)

    def outside(row: dict[str, Any]) -> int:
        return sum(int(v.split("/")[0]) for k, v in row.items() if k.endswith("_paragraphs_flagged"))

    def margin(row: dict[str, Any]) -> float:
        (recall, n), (fpr, m) = share(row["caught"]), share(row["flagged"])
        return min((recall - 0.95) / math.sqrt(0.95 * 0.05 / n), (0.02 - fpr) / math.sqrt(0.02 * 0.98 / m))

    ok = [r for r in table if margin(r) >= 0.0]
    return min(ok, key=lambda r: (-round(margin(r), 6), outside(r), r["rule_veto"])) if ok else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="result path (default benchmarks/results/injection_combination.json)")
    args = ap.parse_args()
    encoder = load_encoder()
    with np.load(OUT_MODEL) as shipped:  # the writers the shipped encoder was validated on, not trained on
        validated_on = json.loads(bytes(shipped["meta"]).decode())["trained"]["validation_writers"]
    if set(validated_on) - set(COMBINATION_WRITERS):
        raise SystemExit(f"the shipped encoder was validated on {validated_on}: choose on those writers too")
    train_rows, val_rows, corpus = training_and_validation(COMBINATION_WRITERS)
    lexical = train_lexical(train_rows, corpus["train"])
    C.log(f"lexical stage retrained without {COMBINATION_WRITERS}; scoring {len(val_rows)} validation rows")
    y = np.array([r["label"] == "injection" for r in val_rows])
    writer = np.array([r["split"] for r in val_rows])
    facts = [row_facts(r["text"], lexical, encoder) for r in val_rows]
    unread = int(sum(1 for f, inj in zip(facts, y) if inj and not f["windows"]))
    docs = {name: [row_facts(p, lexical, encoder) for p in realdocs_paragraphs(name)] for name in FP_CHECK_SETS}
    C.log("scored; replaying combinations")
    table = []
    for gate, threshold, veto, ungated in itertools.product(GATES, THRESHOLDS, RULE_VETOES, (False, True)):
        flags = np.array([flagged(f, gate, threshold, veto, ungated) for f in facts])
        row = {"gate": gate, "threshold": threshold, "rule_veto": veto, "read_ungated": ungated, **rates(flags, y)}
        row["per_writer"] = {w: rates(flags[writer == w], y[writer == w]) for w in COMBINATION_WRITERS}
        # Which stages flag the benign rows (a row may count under several).
        row["false_positives_by_stage"] = dict(Counter(s for f, inj in zip(facts, y) if not inj
                                                       for s in stages(f, gate, threshold, veto, ungated)))
        for name, paragraphs in docs.items():
            row[f"{name}_paragraphs_flagged"] = \
                f"{sum(flagged(f, gate, threshold, veto, ungated) for f in paragraphs)}/{len(paragraphs)}"
        table.append(row)
    result = {"protocol": __doc__, "validation_writers": list(COMBINATION_WRITERS),
              "encoder_threshold_shipped": encoder.threshold,
              "validation_injections_in_no_window": f"{unread}/{int(y.sum())}", "chosen": choose(table),
              "combinations": table}
    C.write_result("injection_combination", result, args.out)


if __name__ == "__main__":
    main()
