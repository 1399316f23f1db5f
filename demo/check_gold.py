#!/usr/bin/env python3
"""Validate the bundled demo corpus and its gold question set.

Checks:
  * every corpus file has YAML front matter with exactly the allowed keys and values;
  * every corpus file has a `# Title` line and at least one `##` section;
  * tenant-restricted documents carry an ACL, and a tenant's name appears in no
    document that belongs to another tenant or to nobody;
  * gold.yaml: unique ids, allowed types and keys, every `doc` exists, every
    `section` is a substring of a heading (outside code fences) of that doc,
    type-specific fields are present, and per-type minimum counts are met.

Usage:  python demo/check_gold.py [--words]
Exit status 0 when everything passes, 1 otherwise. Needs only the stdlib and PyYAML.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent

REQUIRED_KEYS = {"title", "product", "version", "status", "authority", "language", "date"}
OPTIONAL_KEYS = {"tenant", "acl"}
VERSIONS = {"1.8", "2.4", "3.0"}
STATUSES = {"current", "historical", "draft"}
AUTHORITIES = {"contract", "reference", "release-notes", "guide", "imported-note", "community"}
LANGUAGES = {"en", "de"}

QUESTION_TYPES = {
    "identifier", "paraphrase", "german", "cross-lingual", "version-specific", "multi-part",
    "follow-up", "multi-hop", "conflict", "tenant", "unanswerable",
}
MINIMUMS = {
    "identifier": 10, "paraphrase": 8, "german": 8, "cross-lingual": 8, "version-specific": 6,
    "multi-part": 4, "follow-up": 4, "multi-hop": 3, "conflict": 4, "tenant": 4, "unanswerable": 10,
}
MIN_QUESTIONS = 70
QUESTION_KEYS = {
    "id", "question", "language", "type", "relevant", "answer", "filters", "principal",
    "context", "governing", "notes",
}
RELEVANT_KEYS = {"doc", "section", "grade"}

FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n", re.DOTALL)
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


class Report:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, msg: str) -> None:
        self.errors.append(msg)


def split_front_matter(text: str) -> tuple[dict | None, str]:
    m = FRONT_MATTER.match(text)
    if not m:
        return None, text
    return yaml.safe_load(m.group(1)) or {}, text[m.end():]


def headings(body: str) -> list[tuple[int, str]]:
    """(level, title) of every ATX heading outside fenced code blocks."""
    out: list[tuple[int, str]] = []
    in_fence = False
    for line in body.splitlines():
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = HEADING.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2)))
    return out


def prose_words(body: str) -> tuple[int, int]:
    """(all words, words outside code fences) of a document body."""
    total = len(body.split())
    prose: list[str] = []
    in_fence = False
    for line in body.splitlines():
        if FENCE.match(line.strip()):
            in_fence = not in_fence
            continue
        if not in_fence:
            prose.append(line)
    return total, len("\n".join(prose).split())


def check_corpus(corpus: Path, rep: Report) -> dict[str, dict]:
    docs: dict[str, dict] = {}
    files = sorted(corpus.rglob("*.md"))
    if not files:
        rep.error(f"no Markdown files under {corpus}")
    for path in files:
        rel = path.relative_to(corpus).as_posix()
        text = path.read_text(encoding="utf-8")
        meta, body = split_front_matter(text)
        if meta is None:
            rep.error(f"{rel}: missing YAML front matter")
            continue
        keys = set(meta)
        for k in sorted(REQUIRED_KEYS - keys):
            rep.error(f"{rel}: front matter lacks '{k}'")
        for k in sorted(keys - REQUIRED_KEYS - OPTIONAL_KEYS):
            rep.error(f"{rel}: unexpected front-matter key '{k}'")
        if not isinstance(meta.get("title"), str) or not meta.get("title", "").strip():
            rep.error(f"{rel}: title must be a non-empty string")
        if meta.get("product") != "ferrolink":
            rep.error(f"{rel}: product must be 'ferrolink', got {meta.get('product')!r}")
        if not isinstance(meta.get("version"), str):
            rep.error(f"{rel}: version must be a quoted string, got {meta.get('version')!r}")
        elif meta["version"] not in VERSIONS:
            rep.error(f"{rel}: version {meta['version']!r} not in {sorted(VERSIONS)}")
        if meta.get("status") not in STATUSES:
            rep.error(f"{rel}: status {meta.get('status')!r} not in {sorted(STATUSES)}")
        if meta.get("authority") not in AUTHORITIES:
            rep.error(f"{rel}: authority {meta.get('authority')!r} not in {sorted(AUTHORITIES)}")
        if meta.get("language") not in LANGUAGES:
            rep.error(f"{rel}: language {meta.get('language')!r} not in {sorted(LANGUAGES)}")
        if not isinstance(meta.get("date"), dt.date):
            rep.error(f"{rel}: date must be an ISO date (YYYY-MM-DD), got {meta.get('date')!r}")
        if "tenant" in meta:
            if not isinstance(meta["tenant"], str) or not meta["tenant"]:
                rep.error(f"{rel}: tenant must be a non-empty string")
            if "acl" not in meta:
                rep.error(f"{rel}: tenant-restricted document has no acl")
        if "acl" in meta:
            acl = meta["acl"]
            if not isinstance(acl, list) or not acl or not all(isinstance(a, str) and a for a in acl):
                rep.error(f"{rel}: acl must be a non-empty list of strings")

        hs = headings(body)
        if not hs or hs[0][0] != 1:
            rep.error(f"{rel}: the first heading must be a '# Title' line")
        if sum(1 for level, _ in hs if level == 1) != 1:
            rep.error(f"{rel}: expected exactly one level-1 heading")
        if not any(level == 2 for level, _ in hs):
            rep.error(f"{rel}: no '##' section")
        total, prose = prose_words(body)
        docs[rel] = {"meta": meta, "headings": [t for _, t in hs], "words": total,
                     "prose_words": prose, "text": body}

    # A tenant's name must not leak into documents outside that tenant.
    tenants = {d["meta"]["tenant"] for d in docs.values() if isinstance(d["meta"].get("tenant"), str)}
    for tenant in sorted(tenants):
        pat = re.compile(re.escape(tenant), re.IGNORECASE)
        for rel, d in docs.items():
            if d["meta"].get("tenant") != tenant and pat.search(d["text"]):
                rep.error(f"{rel}: mentions tenant '{tenant}' but is not restricted to it")
    return docs


def check_gold(gold_path: Path, docs: dict[str, dict], rep: Report) -> Counter:
    counts: Counter = Counter()
    try:
        gold = yaml.safe_load(gold_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        rep.error(f"{gold_path.name}: cannot read: {exc}")
        return counts
    if not isinstance(gold, dict):
        rep.error(f"{gold_path.name}: top level must be a mapping")
        return counts
    if gold.get("version") != 1:
        rep.error(f"{gold_path.name}: version must be 1")
    if gold.get("corpus") != "corpus":
        rep.error(f"{gold_path.name}: corpus must be 'corpus'")
    questions = gold.get("questions")
    if not isinstance(questions, list):
        rep.error(f"{gold_path.name}: 'questions' must be a list")
        return counts

    seen: set[str] = set()
    for i, q in enumerate(questions):
        where = f"question #{i + 1}"
        if not isinstance(q, dict):
            rep.error(f"{where}: must be a mapping")
            continue
        qid = q.get("id")
        where = f"question {qid or '#' + str(i + 1)}"
        if not isinstance(qid, str) or not qid:
            rep.error(f"{where}: missing id")
        elif qid in seen:
            rep.error(f"{where}: duplicate id")
        else:
            seen.add(qid)
        for k in sorted(set(q) - QUESTION_KEYS):
            rep.error(f"{where}: unexpected key '{k}'")
        if not isinstance(q.get("question"), str) or not q["question"].strip():
            rep.error(f"{where}: question text missing")
        if q.get("language") not in LANGUAGES:
            rep.error(f"{where}: language {q.get('language')!r} not in {sorted(LANGUAGES)}")
        qtype = q.get("type")
        if qtype not in QUESTION_TYPES:
            rep.error(f"{where}: type {qtype!r} not allowed")
        else:
            counts[qtype] += 1

        relevant = q.get("relevant")
        if not isinstance(relevant, list):
            rep.error(f"{where}: relevant must be a list")
            relevant = []
        if qtype == "unanswerable":
            if relevant:
                rep.error(f"{where}: unanswerable question must have relevant: []")
            if "answer" in q:
                rep.error(f"{where}: unanswerable question must not have an answer")
        elif not relevant and qtype != "tenant":
            rep.error(f"{where}: relevant is empty but type is {qtype!r}")
        if not relevant and qtype == "tenant" and "answer" in q:
            rep.error(f"{where}: a tenant question the principal may not see must not have an answer")
        if relevant and not any(isinstance(r, dict) and r.get("grade") == 2 for r in relevant):
            rep.error(f"{where}: no relevant entry with grade 2")

        for r in relevant:
            if not isinstance(r, dict):
                rep.error(f"{where}: relevant entry must be a mapping")
                continue
            for k in sorted(set(r) - RELEVANT_KEYS):
                rep.error(f"{where}: relevant entry has unexpected key '{k}'")
            doc = r.get("doc")
            if doc not in docs:
                rep.error(f"{where}: doc {doc!r} does not exist in the corpus")
                continue
            if r.get("grade") not in (1, 2):
                rep.error(f"{where}: grade must be 1 or 2 for {doc}")
            section = r.get("section")
            if section is not None:
                if not isinstance(section, str) or not section:
                    rep.error(f"{where}: section must be a non-empty string for {doc}")
                elif not any(section.lower() in h.lower() for h in docs[doc]["headings"]):
                    rep.error(f"{where}: section {section!r} matches no heading in {doc}")

        answer = q.get("answer")
        if answer is not None and (not isinstance(answer, list) or not answer
                                   or not all(isinstance(a, str) and a for a in answer)):
            rep.error(f"{where}: answer must be a non-empty list of strings")

        filters = q.get("filters")
        if filters is not None:
            if not isinstance(filters, dict) or not filters:
                rep.error(f"{where}: filters must be a non-empty mapping")
            elif "version" in filters and filters["version"] not in VERSIONS:
                rep.error(f"{where}: filter version {filters['version']!r} not in {sorted(VERSIONS)}")
        if qtype == "version-specific" and not (isinstance(filters, dict) and "version" in filters):
            rep.error(f"{where}: version-specific question needs filters: {{version: ...}}")
        if isinstance(filters, dict) and "version" in filters:
            for r in relevant:
                if isinstance(r, dict) and r.get("grade") == 2 and r.get("doc") in docs:
                    if docs[r["doc"]]["meta"].get("version") != filters["version"]:
                        rep.error(f"{where}: grade-2 doc {r['doc']} is not version {filters['version']}")

        principal = q.get("principal")
        if qtype == "tenant":
            if not isinstance(principal, dict) or not principal.get("tenant") or not isinstance(principal.get("groups"), list):
                rep.error(f"{where}: tenant question needs principal with tenant and groups")
        if isinstance(principal, dict):
            groups = set(principal.get("groups") or [])
            for r in relevant:
                if isinstance(r, dict) and r.get("doc") in docs:
                    acl = docs[r["doc"]]["meta"].get("acl")
                    if acl and not groups.intersection(acl):
                        rep.error(f"{where}: principal may not read relevant doc {r['doc']}")
        else:
            for r in relevant:
                if isinstance(r, dict) and r.get("doc") in docs and docs[r["doc"]]["meta"].get("acl"):
                    rep.error(f"{where}: relevant doc {r['doc']} is restricted but the question has no principal")

        context = q.get("context")
        if qtype == "follow-up" and not (isinstance(context, list) and context
                                         and all(isinstance(c, str) and c for c in context)):
            rep.error(f"{where}: follow-up question needs a non-empty context list")
        if context is not None and qtype != "follow-up":
            rep.error(f"{where}: context is only for follow-up questions")

        governing = q.get("governing")
        if qtype == "conflict":
            if governing not in docs:
                rep.error(f"{where}: conflict question needs an existing governing doc, got {governing!r}")
            elif not any(isinstance(r, dict) and r.get("doc") == governing and r.get("grade") == 2
                         for r in relevant):
                rep.error(f"{where}: governing doc {governing} must be a grade-2 relevant entry")
        elif governing is not None:
            rep.error(f"{where}: governing is only for conflict questions")

    if len(questions) < MIN_QUESTIONS:
        rep.error(f"only {len(questions)} questions; at least {MIN_QUESTIONS} required")
    for qtype, minimum in MINIMUMS.items():
        if counts[qtype] < minimum:
            rep.error(f"type {qtype!r}: {counts[qtype]} questions, at least {minimum} required")
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--words", action="store_true", help="print word counts per document")
    ap.add_argument("--gold", default=str(HERE / "gold.yaml"), help="path to gold.yaml")
    args = ap.parse_args()

    rep = Report()
    gold_path = Path(args.gold)
    corpus_name = "corpus"
    try:
        corpus_name = (yaml.safe_load(gold_path.read_text(encoding="utf-8")) or {}).get("corpus", "corpus")
    except (OSError, yaml.YAMLError):
        pass
    corpus = gold_path.parent / corpus_name
    docs = check_corpus(corpus, rep)
    counts = check_gold(gold_path, docs, rep)

    langs = Counter(d["meta"].get("language") for d in docs.values())
    long_docs = [rel for rel, d in docs.items() if d["words"] >= 1500]
    if args.words:
        print(f"{'document':52} {'lang':4} {'words':>6} {'prose':>6}")
        for rel, d in sorted(docs.items()):
            print(f"{rel:52} {d['meta'].get('language', '?'):4} {d['words']:6d} {d['prose_words']:6d}")
        print()
    print(f"documents: {len(docs)} ({', '.join(f'{k}: {v}' for k, v in sorted(langs.items()))}); "
          f"long (>= 1500 words): {len(long_docs)}")
    print("questions: " + ", ".join(f"{t}: {counts[t]}" for t in sorted(QUESTION_TYPES))
          + f"; total {sum(counts.values())}")
    if rep.errors:
        print(f"\n{len(rep.errors)} problem(s):")
        for e in rep.errors:
            print(f"  - {e}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
