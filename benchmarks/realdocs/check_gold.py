#!/usr/bin/env python3
"""Validate a realdocs gold set (default benchmarks/realdocs/iobroker.gold.yaml) against its materialised corpus.

Checks (every problem is listed, exit status 1 if there is any):
  * the questions load with Beleg's own loader (``beleg.evaluate.datasets.load_gold``);
  * unique ids, known types and languages, at least ``MIN_QUESTIONS`` questions, at least
    ``MIN_UNANSWERABLE`` unanswerable ones, both languages asked;
  * every ``doc`` exists, every ``section`` is part of a heading of that doc;
  * every answerable question has a grade-2 document and gold strings, and one of its
    gold strings occurs in one of its grade-2 documents, under the same matching rule the
    answer evaluation uses (``beleg.evaluate.answers.contains_gold``): the strings are
    copied from the pages, so this catches a typo or a page that changed upstream;
  * a cross-lingual question is asked in a language that no grade-2 document is in, and a
    listed page's counterpart in the other language (``de/x.md`` ↔ ``en/x.md``), when the
    corpus has it, is listed too (so a page that also answers is never missed);
  * an unanswerable question has ``relevant: []`` and no answer.

Usage:  python benchmarks/realdocs/check_gold.py [--gold FILE]
The corpus must exist (python benchmarks/realdocs/fetch_iobroker.py, or fetch_contao.py for contao.gold.yaml).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from beleg.errors import BelegError
from beleg.evaluate.answers import contains_gold
from beleg.evaluate.datasets import load_gold

HERE = Path(__file__).resolve().parent
DEFAULT_GOLD = HERE / "iobroker.gold.yaml"
TYPES = {"identifier", "fact", "how-to", "version-specific", "cross-lingual", "unanswerable"}
LANGUAGES = {"en", "de"}
MIN_QUESTIONS = 50
MIN_UNANSWERABLE = 10
QUESTION_KEYS = {"id", "question", "language", "type", "relevant", "answer", "notes"}
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$")
#: A fence line opens or closes a code block; "```text```" on one line is inline code, not a fence.
FENCE = re.compile(r"^[ \t]*(```|~~~)(?!.*(```|~~~))")
FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---[ \t]*\r?\n", re.DOTALL)


def read_page(path: Path) -> tuple[dict[str, Any], str, list[str]]:
    """(front matter, body, headings outside code fences) of one corpus page."""
    text = path.read_text(encoding="utf-8")
    m = FRONT_MATTER.match(text)
    meta = (yaml.safe_load(m.group(1)) or {}) if m else {}
    body = text[m.end():] if m else text
    heads, in_fence = [], False
    for line in body.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (h := HEADING.match(line)):
            heads.append(h.group(1))
    return meta, body, heads


def check_question(q: dict[str, Any], corpus: Path, problems: list[str]) -> None:
    where = f"question {q.get('id')}"
    for key in sorted(set(q) - QUESTION_KEYS):
        problems.append(f"{where}: unexpected key {key!r}")
    if q.get("language") not in LANGUAGES:
        problems.append(f"{where}: language {q.get('language')!r} is not one of {sorted(LANGUAGES)}")
    qtype = q.get("type")
    if qtype not in TYPES:
        problems.append(f"{where}: type {qtype!r} is not one of {sorted(TYPES)}")
    relevant = q.get("relevant") or []
    answer = q.get("answer")
    if qtype == "unanswerable":
        if relevant or answer is not None:
            problems.append(f"{where}: an unanswerable question needs relevant: [] and no answer")
        return
    if not isinstance(answer, list) or not answer or not all(isinstance(a, str) and a for a in answer):
        problems.append(f"{where}: answer must be a non-empty list of strings copied from the page")
        answer = []
    grade2_bodies, grade2_langs = [], set()
    for rel in relevant:
        doc = str(rel.get("doc"))
        path = corpus / doc
        if not path.is_file():
            problems.append(f"{where}: {doc} is not in the corpus")
            continue
        meta, body, heads = read_page(path)
        section = rel.get("section")
        if section and not any(str(section).lower() in h.lower() for h in heads):
            problems.append(f"{where}: section {section!r} matches no heading of {doc}")
        if rel.get("grade") == 2:
            grade2_bodies.append(body)
            grade2_langs.add(meta.get("language"))
    if not grade2_bodies:
        problems.append(f"{where}: no grade-2 document")
    elif answer and not any(contains_gold(body, answer) for body in grade2_bodies):
        problems.append(f"{where}: none of {answer!r} occurs in a grade-2 document")
    if qtype == "cross-lingual" and q.get("language") in grade2_langs:
        problems.append(f"{where}: cross-lingual, but a grade-2 document is in the question's language")
    listed = {str(rel.get("doc")) for rel in relevant}
    for doc in sorted(listed):
        other = counterpart(doc)
        if other and other not in listed and (corpus / other).is_file():
            problems.append(f"{where}: {doc} is listed but its counterpart {other} is not (add it with its grade)")


def counterpart(doc: str) -> str | None:
    """The same page in the other language (``de/x.md`` ↔ ``en/x.md``), None for other paths."""
    lang, sep, rest = doc.partition("/")
    others = sorted(LANGUAGES - {lang})
    return f"{others[0]}/{rest}" if sep and lang in LANGUAGES and len(others) == 1 else None


def check(gold_path: Path) -> tuple[list[str], Counter]:
    problems: list[str] = []
    data = yaml.safe_load(gold_path.read_text(encoding="utf-8"))
    corpus = (gold_path.parent / str(data.get("corpus"))).resolve()
    if not corpus.is_dir():
        return [f"corpus folder {corpus} is missing: run benchmarks/realdocs/fetch_iobroker.py or fetch_contao.py"], Counter()
    try:
        load_gold(gold_path)
    except BelegError as exc:
        problems.append(f"Beleg's loader rejects the gold set: {exc}")
    questions = data.get("questions") or []
    ids = Counter(str(q.get("id")) for q in questions)
    problems += [f"question {qid}: duplicate id" for qid, n in ids.items() if n > 1]
    for q in questions:
        check_question(q, corpus, problems)
    counts = Counter(f"{q.get('type')}/{q.get('language')}" for q in questions)
    if len(questions) < MIN_QUESTIONS:
        problems.append(f"{len(questions)} questions; at least {MIN_QUESTIONS} required")
    unanswerable = sum(1 for q in questions if q.get("type") == "unanswerable")
    if unanswerable < MIN_UNANSWERABLE:
        problems.append(f"{unanswerable} unanswerable questions; at least {MIN_UNANSWERABLE} required")
    for lang in sorted(LANGUAGES):
        if not any(q.get("language") == lang for q in questions):
            problems.append(f"no question in {lang}")
    return problems, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", type=Path, default=DEFAULT_GOLD)
    args = ap.parse_args()
    problems, counts = check(args.gold)
    print("questions: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
          + f"; total {sum(counts.values())}")
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
