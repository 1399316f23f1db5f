"""Gold sets for evaluation: BEIR folders, SQuAD-format JSON and Beleg's own YAML gold set.

Each loader returns a :class:`Dataset` with the corpus (as texts, or a folder to ingest),
queries and graded qrels that use the dataset's *own* ids, so runs and TREC files can be
checked with any standard tool.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from beleg.errors import ConfigError, FilterError
from beleg.index.filters import to_expr
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


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, each a JSON object with the ``required`` keys."""
    records = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ConfigError(f"{path}:{n}: expected a JSON object, got {_shown(record)}")
                missing = [key for key in required if key not in record]
                if missing:
                    raise ConfigError(f"{path}:{n}: the record has no {', '.join(map(repr, missing))}; "
                                      f"expected an object with {', '.join(map(repr, required))}")
                records.append(record)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON lines: {exc}") from None
    return records


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
        if len(parts) < 3 or not parts[2].strip().lstrip("-").isdigit():
            raise ConfigError(f"{qrels_path}:{n}: expected 'query-id<TAB>corpus-id<TAB>score' with an integer score")
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    corpus = [
        TextSource(source=str(d["_id"]), text=str(d.get("text", "")), title=str(d.get("title") or "") or None,
                   doc_id=str(d["_id"]), metadata=dict(d.get("metadata") or {}))
        for d in _read_jsonl(root / "corpus.jsonl", ("_id",))
    ]
    queries = [Query(str(q["_id"]), str(q["text"])) for q in _read_jsonl(root / "queries.jsonl", ("_id", "text"))
               if str(q["_id"]) in qrels]
    return Dataset(f"beir:{root.name}:{split}", queries, qrels, documents=corpus)


@dataclass(frozen=True, slots=True)
class _SquadQuestion:
    qid: str
    text: str
    answers: list[str]


#: One SQuAD article as read: its title and its paragraphs, each with its questions.
_SquadArticle = tuple[str, list[tuple[str, list[_SquadQuestion]]]]
_SQUAD_SHAPE = "{'data': [{'title': ..., 'paragraphs': [{'context': ..., 'qas': [{'id': ..., 'question': ...}]}]}]}"


def _read_squad(path: Path) -> list[_SquadArticle]:
    """The articles of a SQuAD-format file, checked; a problem names its place as a JSON path."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ConfigError(f"{path} is not SQuAD-format JSON: expected {_SQUAD_SHAPE}")
    articles: list[_SquadArticle] = []
    seen: set[str] = set()
    for a, article in enumerate(data["data"]):
        where = f"{path}: data[{a}]"
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise ConfigError(f"{where} is not an article with 'paragraphs: [...]'; expected {_SQUAD_SHAPE}")
        paragraphs = []
        for p, para in enumerate(article["paragraphs"]):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            if not isinstance(para, dict) or not isinstance(para.get("qas"), list):
                raise ConfigError(f"{where} is not a paragraph with 'qas: [...]'; expected {_SQUAD_SHAPE}")
            context = para.get("context")
            if not isinstance(context, str) or not context.strip():
                raise ConfigError(f"{where} has context {_shown(context)}; expected the paragraph's text")
            questions = []
            for n, qa in enumerate(para["qas"]):
                question = _squad_question(qa, f"{where}.qas[{n}]")
                if question.qid in seen:
                    raise ConfigError(f"{where}.qas[{n}] (question {question.qid}): an earlier question has the "
                                      "same id; give each question its own id")
                seen.add(question.qid)
                questions.append(question)
            paragraphs.append((context, questions))
        articles.append((str(article.get("title", "")), paragraphs))
    return articles


def _squad_question(qa: Any, where: str) -> _SquadQuestion:
    if not isinstance(qa, dict):
        raise ConfigError(f"{where} is {_shown(qa)}; expected {{'id': ..., 'question': ..., 'answers': [...]}}")
    qid = qa.get("id")
    # bool is an int subclass; JSON true is no id.
    if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
        raise ConfigError(f"{where} has id {_shown(qid)}; expected a unique text id")
    where = f"{where} (question {qid})"
    text = qa.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"{where} has question {_shown(text)}; expected the question text")
    answers = qa.get("answers", [])
    if not isinstance(answers, list):
        raise ConfigError(f"{where} has answers {_shown(answers)}; expected a list such as "
                          "[{'text': '1821', 'answer_start': 42}]")
    for n, answer in enumerate(answers):
        if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
            raise ConfigError(f"{where} has answers[{n}] {_shown(answer)}; expected an answer such as "
                              "{'text': '1821', 'answer_start': 42}")
    return _SquadQuestion(str(qid), text, [x["text"] for x in answers])


def load_squad(corpus_files: list[str | Path], queries_file: str | Path | None = None) -> Dataset:
    """SQuAD-format JSON: each paragraph is a document, each question's paragraph is relevant.

    Several ``corpus_files`` (e.g. the English and German XQuAD files) make one mixed
    corpus; paragraphs at the same (article, paragraph) position are parallel, and all
    of them are relevant to a question about that position. ``queries_file`` picks the
    questions (default: the first corpus file), which gives cross-lingual variants:
    German questions over the English paragraphs, and so on.

    Raises:
        ConfigError: a file cannot be read or is not SQuAD-format JSON; the message names
            the file and the place in it (``data[3].paragraphs[2].qas[5]``).
    """
    files = [Path(f) for f in corpus_files]
    if not files:
        raise ConfigError("give at least one SQuAD file")
    read = {f: _read_squad(f) for f in files}
    docs: list[TextSource] = []
    by_position: dict[tuple[int, int], list[str]] = {}
    for f in files:
        tag = f.stem
        for a, (title, paragraphs) in enumerate(read[f]):
            for p, (context, _) in enumerate(paragraphs):
                doc_id = f"{tag}:{a}-{p}"
                docs.append(TextSource(source=doc_id, text=context, title=title.replace("_", " ") or None,
                                       doc_id=doc_id))
                by_position.setdefault((a, p), []).append(doc_id)
    qfile = Path(queries_file) if queries_file else files[0]
    # Parallel files share question ids: an answer taken from a paragraph is correct in the
    # paragraph's language too (German question, English paragraph: "1821" or "Juli 1821").
    corpus_answers: dict[str, list[str]] = {}
    for f in files:
        if f == qfile:
            continue
        for _, paragraphs in read[f]:
            for _, questions in paragraphs:
                for question in questions:
                    corpus_answers.setdefault(question.qid, []).extend(question.answers)
    queries, qrels = [], {}
    for a, (_, paragraphs) in enumerate(read[qfile] if qfile in read else _read_squad(qfile)):
        for p, (_, questions) in enumerate(paragraphs):
            for question in questions:
                relevant = by_position.get((a, p))
                if not relevant:
                    raise ConfigError(f"{qfile} has a question for article {a}, paragraph {p}, which no corpus file has")
                answers = list(question.answers)
                answers += [x for x in corpus_answers.get(question.qid, []) if x not in answers]
                queries.append(Query(question.qid, question.text, {"answers": answers}))
                qrels[question.qid] = {d: 1 for d in relevant}
    name = "squad:" + "+".join(f.stem for f in files) + (f"<-{qfile.stem}" if qfile not in files[:1] else "")
    return Dataset(name, queries, qrels, documents=docs)


#: The keys of a YAML gold set, of each of its questions and of each ``relevant`` entry.
#: Anything else is refused: a misspelt key (``typ:``, ``answers:``) would otherwise be
#: carried along unread, and the question scored without what it was meant to say.
GOLD_KEYS = ("version", "corpus", "questions")
QUESTION_KEYS = ("id", "question", "language", "type", "relevant", "answer", "notes", "filters", "context",
                 "governing", "principal")
RELEVANT_KEYS = ("doc", "section", "grade")
PRINCIPAL_KEYS = ("user", "tenant", "groups")
#: Relevance grades: 2 = the document answers the question, 1 = related or partial,
#: 0 = judged and not relevant. Metrics count a document as relevant from grade 1 on, so a
#: grade outside these (a negative one, a typo like 22) would silently change what a
#: question expects: with no grade >= 1 it becomes an expected refusal.
GRADES = (0, 1, 2)


def load_gold(path: str | Path) -> Dataset:
    """Beleg's YAML gold set (see ``demo/gold.yaml``): document-level graded qrels.

    Unanswerable questions keep an empty qrels entry; metrics treat them separately.

    Raises:
        ConfigError: the file cannot be read, is not valid YAML, or breaks the format
            (docs/answer-evaluation.md, "The gold set file"); the message names the file,
            the question (its id, or its position when it has none) and what is expected.
    """
    p = Path(path)
    data = read_yaml(p, "gold set")
    if isinstance(data, dict):
        _refuse_unknown_keys(data, GOLD_KEYS, str(p))
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise ConfigError(f"{p}: expected a mapping with 'questions: [...]'")
    if data.get("version", "1") != "1":
        raise ConfigError(f"{p}: version {data['version']!r} is not a gold set version Beleg reads; expected 'version: 1'")
    corpus_name = data.get("corpus", "corpus")
    if not isinstance(corpus_name, str) or not corpus_name.strip():
        raise ConfigError(f"{p}: corpus {corpus_name!r} is not a folder name; expected a path relative to the gold "
                          "file, such as 'corpus: corpus'")
    corpus = (p.parent / corpus_name).resolve()
    if not corpus.is_dir():
        raise ConfigError(f"{p}: corpus folder {corpus} does not exist")
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    sections: dict[str, list[tuple[str, str, int]]] = {}
    positions: dict[str, int] = {}
    for position, q in enumerate(data["questions"], 1):
        query, judgments, judged_sections = _gold_question(q, position, p, corpus)
        if query.qid in positions:
            # Two questions under one id would share one qrels entry and one result row.
            raise ConfigError(f"{p}: question {query.qid} (#{position}): question #{positions[query.qid]} has the "
                              "same id; give each question its own id")
        positions[query.qid] = position
        queries.append(query)
        qrels[query.qid] = judgments
        if judged_sections:
            sections[query.qid] = judged_sections
    return Dataset(f"gold:{p.stem}", queries, qrels, corpus_dir=corpus, sections=sections)


def _gold_question(q: Any, position: int, path: Path, corpus: Path
                   ) -> tuple[Query, dict[str, int], list[tuple[str, str, int]]]:
    """One question of a gold set, checked: (query, doc → grade, section judgments)."""
    where = f"{path}: question #{position}"
    if not isinstance(q, dict):
        raise ConfigError(f"{where} is {_shown(q)}; expected a mapping such as "
                          "{id: q1, question: \"...\", relevant: [{doc: a.md, grade: 2}]}")
    qid = q.get("id")
    if not isinstance(qid, str) or not qid.strip():
        asked = f" ({_shown(q['question'])})" if isinstance(q.get("question"), str) else ""
        problem = "has no 'id'" if qid is None else f"has id {_shown(qid)}"
        raise ConfigError(f"{where}{asked} {problem}; expected a unique text id such as 'id: q1'")
    where = f"{path}: question {qid}"
    _refuse_unknown_keys(q, QUESTION_KEYS, where)
    text = q.get("question")
    if not isinstance(text, str) or not text.strip():
        problem = "has no 'question'" if "question" not in q else f"has question {_shown(text)}"
        raise ConfigError(f"{where} {problem}; expected the question text, such as 'question: \"What does E-4012 mean?\"'")
    for key in ("language", "type", "notes"):
        if key in q and not isinstance(q[key], str):
            raise ConfigError(f"{where}: {key} is {_shown(q[key])}; expected text")
    _check_text_list(q.get("answer"), "answer", where, "a string or a list of strings, such as answer: [\"72 hours\"]")
    if q.get("context") is not None and not isinstance(q["context"], list):
        raise ConfigError(f"{where}: context is {_shown(q['context'])}; expected the earlier turns of the "
                          "conversation as a list, such as context: [\"What is the retry window?\"]")
    _check_text_list(q.get("context"), "context", where, "a list of earlier questions")
    _check_principal(q.get("principal"), where)
    _check_filters(q.get("filters"), where)
    if "governing" in q:
        _check_doc(q["governing"], corpus, f"{where}: governing")
    judgments: dict[str, int] = {}
    judged_sections: list[tuple[str, str, int]] = []
    relevant = q.get("relevant")
    if relevant is not None and not isinstance(relevant, list):
        raise ConfigError(f"{where}: relevant is {_shown(relevant)}; expected a list such as "
                          "[{doc: reference/errors.md, grade: 2}], or [] for an unanswerable question")
    for n, rel in enumerate(relevant or [], 1):
        rel_where = f"{where}: relevant #{n}"
        if not isinstance(rel, dict):
            raise ConfigError(f"{rel_where} is {_shown(rel)}; expected a mapping such as "
                              "{doc: reference/errors.md, grade: 2}")
        _refuse_unknown_keys(rel, RELEVANT_KEYS, rel_where)
        if "doc" not in rel:
            raise ConfigError(f"{rel_where} has no 'doc'; expected the document's path in the corpus folder")
        doc = _check_doc(rel["doc"], corpus, where)
        grade = rel.get("grade", 1)
        # bool is an int subclass ('grade: yes' would pass as 1), and 2.0 == 2.
        if type(grade) is not int or grade not in GRADES:
            raise ConfigError(f"{rel_where}: grade {_shown(grade)} is not one of {', '.join(map(str, GRADES))}; "
                              "2 = the document answers the question, 1 = related or partial, 0 = not relevant")
        judgments[doc] = max(judgments.get(doc, 0), grade)
        section = rel.get("section")
        if section is not None:
            if not isinstance(section, str) or not section.strip():
                raise ConfigError(f"{rel_where}: section is {_shown(section)}; expected text that is part of a "
                                  "heading of the document, or no 'section'")
            judged_sections.append((doc, section, grade))
    info = {k: v for k, v in q.items() if k not in ("id", "question", "relevant")}
    return Query(qid, text, info), judgments, judged_sections


def _check_doc(doc: Any, corpus: Path, where: str) -> str:
    """``doc`` as the path of a file in ``corpus``, written the way the evaluation names documents."""
    if not isinstance(doc, str) or not doc.strip():
        raise ConfigError(f"{where} names doc {_shown(doc)}; expected the path of a file in the corpus folder, "
                          "such as 'reference/errors.md'")
    # Retrieved documents are named by their path relative to the corpus folder; a doc
    # written any other way ('./a.md', '../corpus/a.md', an absolute path) would never match
    # one, and the question would be scored as failing.
    canonical = PurePosixPath(doc)
    if canonical.is_absolute() or ".." in canonical.parts or canonical.as_posix() != doc:
        raise ConfigError(f"{where} names {doc!r}, which is not written as a path inside the corpus folder {corpus}; "
                          "expected a relative path without '.', '..' or a leading '/', such as 'reference/errors.md'")
    if not (corpus / doc).is_file():
        raise ConfigError(f"{where} names {doc}, which is not in {corpus}")
    return doc


def _check_text_list(value: Any, key: str, where: str, example: str) -> None:
    """``value`` is absent, or one non-empty string or a list of them."""
    items = [] if value is None else value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, str) or not item.strip():
            # A YAML number loses its written form ('answer: 3.50' reads as 3.5).
            raise ConfigError(f"{where}: {key} {_shown(item)} is not text; expected {example} "
                              "(numbers in quotes, so that they keep their written form)")


def _check_principal(principal: Any, where: str) -> None:
    if principal is None:
        return
    if not isinstance(principal, dict):
        raise ConfigError(f"{where}: principal is {_shown(principal)}; expected a mapping such as "
                          "{tenant: nordwind, groups: [ops-nordwind]}")
    _refuse_unknown_keys(principal, PRINCIPAL_KEYS, f"{where}: principal")
    for key in ("user", "tenant"):
        if principal.get(key) is not None and not isinstance(principal[key], str):
            raise ConfigError(f"{where}: principal {key} is {_shown(principal[key])}; expected text")
    groups = principal.get("groups")
    if groups is not None and not (isinstance(groups, list) and all(isinstance(g, str) and g for g in groups)):
        raise ConfigError(f"{where}: principal groups is {_shown(groups)}; expected a list of group names")


def _check_filters(filters: Any, where: str) -> None:
    """The filters parse (a mapping or a ``--where`` expression) before any question is asked."""
    try:
        to_expr(filters)
    except FilterError as exc:
        raise ConfigError(f"{where}: filters: {exc}") from None


def _refuse_unknown_keys(mapping: dict[Any, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"{where}: unknown key {_shown(key)}{hint}; the keys are {', '.join(allowed)}")


def _shown(value: Any) -> str:
    """A value as an error message shows it: short, with its kind when that is the problem."""
    if value is None:
        return "empty (null)"
    if isinstance(value, (dict, list)):
        return f"a {'mapping' if isinstance(value, dict) else 'list'}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
