"""Gold sets for evaluation: BEIR folders, SQuAD-format JSON and Beleg's own YAML gold set.

Each loader returns a :class:`Dataset` with the corpus (as texts, or a folder to ingest),
queries and graded qrels that use the dataset's *own* ids, so runs and TREC files can be
checked with any standard tool.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError
from beleg.ingest.pipeline import TextSource
from beleg.yamlfile import read_yaml


@dataclass(frozen=True, slots=True)
class Query:
    qid: str
    text: str
    #: Extra information of the gold set (type, language, filters, context ...).
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Dataset:
    name: str
    queries: list[Query]
    qrels: dict[str, dict[str, int]]
    #: The corpus as texts (BEIR, SQuAD) ...
    documents: list[TextSource] | None = None
    #: ... or as a folder of files whose path relative to it is the document id (gold YAML).
    corpus_dir: Path | None = None
    #: Qrels at section level for the YAML gold set: qid → [(doc id, heading substring, grade)].
    sections: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """A hash of the corpus content (not of the queries): the cache key of its index."""
        h = hashlib.sha256()
        if self.documents is not None:
            for d in self.documents:
                h.update(b"\x1e" + (d.doc_id or d.source).encode() + b"\x1f" + (d.title or "").encode() + b"\x1f" + d.text.encode())
        if self.corpus_dir is not None:
            for p in sorted(self.corpus_dir.rglob("*")):
                if p.is_file():
                    h.update(b"\x1e" + str(p.relative_to(self.corpus_dir)).encode() + b"\x1f" + p.read_bytes())
        return h.hexdigest()[:16]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        with path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON lines: {exc}") from None


def load_beir(folder: str | Path, split: str = "test") -> Dataset:
    """A BEIR folder: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``."""
    root = Path(folder)
    qrels_path = root / "qrels" / f"{split}.tsv"
    for needed in (root / "corpus.jsonl", root / "queries.jsonl", qrels_path):
        if not needed.exists():
            raise ConfigError(f"{root} is not a BEIR folder: {needed.relative_to(root)} is missing")
    qrels: dict[str, dict[str, int]] = {}
    for n, line in enumerate(qrels_path.read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split("\t")
        if n == 1 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # header row
        if len(parts) < 3:
            raise ConfigError(f"{qrels_path}:{n}: expected 'query-id<TAB>corpus-id<TAB>score'")
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    corpus = [
        TextSource(source=str(d["_id"]), text=str(d.get("text", "")), title=str(d.get("title") or "") or None,
                   doc_id=str(d["_id"]), metadata=dict(d.get("metadata") or {}))
        for d in _read_jsonl(root / "corpus.jsonl")
    ]
    queries = [Query(str(q["_id"]), str(q["text"])) for q in _read_jsonl(root / "queries.jsonl") if str(q["_id"]) in qrels]
    return Dataset(f"beir:{root.name}:{split}", queries, qrels, documents=corpus)


def _squad_articles(path: Path) -> list[dict[str, Any]]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))["data"]
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not SQuAD-format JSON ({{'data': [{{'paragraphs': ...}}]}}): {exc}") from None


def load_squad(corpus_files: list[str | Path], queries_file: str | Path | None = None) -> Dataset:
    """SQuAD-format JSON: each paragraph is a document, each question's paragraph is relevant.

    Several ``corpus_files`` (e.g. the English and German XQuAD files) make one mixed
    corpus; paragraphs at the same (article, paragraph) position are parallel, and all
    of them are relevant to a question about that position. ``queries_file`` picks the
    questions (default: the first corpus file), which gives cross-lingual variants:
    German questions over the English paragraphs, and so on.
    """
    files = [Path(f) for f in corpus_files]
    if not files:
        raise ConfigError("give at least one SQuAD file")
    docs: list[TextSource] = []
    by_position: dict[tuple[int, int], list[str]] = {}
    for f in files:
        tag = f.stem
        for a, article in enumerate(_squad_articles(f)):
            title = str(article.get("title", "")).replace("_", " ")
            for p, para in enumerate(article["paragraphs"]):
                doc_id = f"{tag}:{a}-{p}"
                docs.append(TextSource(source=doc_id, text=para["context"], title=title or None, doc_id=doc_id))
                by_position.setdefault((a, p), []).append(doc_id)
    qfile = Path(queries_file) if queries_file else files[0]
    # Parallel files share question ids: an answer taken from a paragraph is correct in the
    # paragraph's language too (German question, English paragraph: "1821" or "Juli 1821").
    corpus_answers: dict[str, list[str]] = {}
    for f in files:
        if f == qfile:
            continue
        for article in _squad_articles(f):
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    corpus_answers.setdefault(str(qa["id"]), []).extend(x["text"] for x in qa.get("answers", []))
    queries, qrels = [], {}
    for a, article in enumerate(_squad_articles(qfile)):
        for p, para in enumerate(article["paragraphs"]):
            for qa in para["qas"]:
                relevant = by_position.get((a, p))
                if not relevant:
                    raise ConfigError(f"{qfile} has a question for article {a}, paragraph {p}, which no corpus file has")
                answers = [x["text"] for x in qa.get("answers", [])]
                answers += [x for x in corpus_answers.get(str(qa["id"]), []) if x not in answers]
                queries.append(Query(str(qa["id"]), qa["question"], {"answers": answers}))
                qrels[str(qa["id"])] = {d: 1 for d in relevant}
    name = "squad:" + "+".join(f.stem for f in files) + (f"<-{qfile.stem}" if qfile not in files[:1] else "")
    return Dataset(name, queries, qrels, documents=docs)


def load_gold(path: str | Path) -> Dataset:
    """Beleg's YAML gold set (see ``demo/gold.yaml``): document-level graded qrels.

    Unanswerable questions keep an empty qrels entry; metrics treat them separately.
    """
    p = Path(path)
    data = read_yaml(p, "gold set")
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise ConfigError(f"{p}: expected a mapping with 'questions: [...]'")
    corpus = (p.parent / str(data.get("corpus", "corpus"))).resolve()
    if not corpus.is_dir():
        raise ConfigError(f"{p}: corpus folder {corpus} does not exist")
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    sections: dict[str, list[tuple[str, str, int]]] = {}
    for q in data["questions"]:
        qid = str(q["id"])
        judgments: dict[str, int] = {}
        for rel in q.get("relevant") or []:
            doc = str(rel["doc"])
            if not (corpus / doc).is_file():
                raise ConfigError(f"{p}: question {qid} names {doc}, which is not in {corpus}")
            grade = int(rel.get("grade", 1))
            judgments[doc] = max(judgments.get(doc, 0), grade)
            if rel.get("section"):
                sections.setdefault(qid, []).append((doc, str(rel["section"]), grade))
        info = {k: v for k, v in q.items() if k not in ("id", "question", "relevant")}
        queries.append(Query(qid, str(q["question"]), info))
        qrels[qid] = judgments
    return Dataset(f"gold:{p.stem}", queries, qrels, corpus_dir=corpus, sections=sections)
