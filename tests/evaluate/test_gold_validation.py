"""Malformed gold sets fail with one ConfigError that names the file, the question and the fix.

Each case is a problem an outside tester found: before, it ended in a traceback (KeyError,
ValueError, TypeError) or was misread silently (a duplicate id, ``question: null`` asked
as "None", a negative grade turning a question into an expected refusal, a typo'd key).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from beleg.cli.main import main
from beleg.errors import ConfigError
from beleg.evaluate.datasets import load_beir, load_gold, load_squad

ROOT = Path(__file__).resolve().parents[2]
GOOD = '  - {id: a1, question: "What is the maximum flow temperature?", relevant: [{doc: specs.md, grade: 2}]}\n'


def _gold(tmp_path: Path, questions: str, header: str = "version: 1\ncorpus: corpus\n") -> Path:
    (tmp_path / "corpus").mkdir(exist_ok=True)
    (tmp_path / "corpus" / "specs.md").write_text("# Specs\n\nThe maximum flow temperature is 62 °C.\n",
                                                  encoding="utf-8")
    path = tmp_path / "gold.yaml"
    path.write_text(header + "questions:\n" + questions, encoding="utf-8")
    return path


def _error(tmp_path: Path, questions: str, header: str = "version: 1\ncorpus: corpus\n") -> str:
    path = _gold(tmp_path, questions, header)
    with pytest.raises(ConfigError) as info:
        load_gold(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message


def test_a_question_without_id_is_named_by_its_position(tmp_path: Path) -> None:
    message = _error(tmp_path, GOOD + '  - {question: "What is the minimum flow rate?", relevant: []}\n')
    assert "question #2 ('What is the minimum flow rate?') has no 'id'" in message


def test_a_grade_that_is_not_0_1_or_2_is_refused(tmp_path: Path) -> None:
    for grade in ("high", "-3", "3", "2.0", "yes"):
        message = _error(tmp_path, f'  - {{id: a1, question: "Q?", relevant: [{{doc: specs.md, grade: {grade}}}]}}\n')
        assert "question a1: relevant #1: grade" in message and "is not one of 0, 1, 2" in message, grade


def test_a_relevant_entry_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    message = _error(tmp_path, '  - {id: a1, question: "Q?", relevant: ["specs.md"]}\n')
    assert "question a1: relevant #1 is 'specs.md'; expected a mapping such as {doc:" in message
    message = _error(tmp_path, '  - {id: a1, question: "Q?", relevant: specs.md}\n')
    assert "question a1: relevant is 'specs.md'; expected a list" in message
    message = _error(tmp_path, '  - {id: a1, question: "Q?", relevant: [{grade: 2}]}\n')
    assert "question a1: relevant #1 has no 'doc'" in message


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    message = _error(tmp_path, GOOD + GOOD.replace("maximum flow temperature", "minimum flow rate"))
    assert "question a1 (#2): question #1 has the same id" in message


@pytest.mark.parametrize("value", ["null", '""', '"   "', "42"])
def test_an_empty_or_missing_question_text_is_refused(tmp_path: Path, value: str) -> None:
    message = _error(tmp_path, f"  - {{id: a1, question: {value}, relevant: [{{doc: specs.md, grade: 2}}]}}\n")
    assert "question a1 has question" in message and "expected the question text" in message
    assert "has no 'question'" in _error(tmp_path, "  - {id: a1, relevant: []}\n")


def test_unknown_keys_are_refused_with_the_allowed_keys(tmp_path: Path) -> None:
    message = _error(tmp_path, '  - {id: a1, question: "Q?", typ: fact, relevant: []}\n')
    assert "question a1: unknown key 'typ' (did you mean 'type'?); the keys are id, question, language, type" in message
    assert "(did you mean 'answer'?)" in _error(tmp_path, '  - {id: a1, question: "Q?", answers: ["62 °C"]}\n')
    message = _error(tmp_path, '  - {id: a1, question: "Q?", relevant: [{doc: specs.md, grad: 2}]}\n')
    assert "relevant #1: unknown key 'grad' (did you mean 'grade'?); the keys are doc, section, grade" in message
    message = _error(tmp_path, '  - {id: a1, question: "Q?", principal: {group: [ops]}}\n')
    assert "principal: unknown key 'group' (did you mean 'groups'?)" in message
    message = _error(tmp_path, GOOD, header="version: 1\ncorpus: corpus\nquestion: []\n")
    assert "unknown key 'question' (did you mean 'questions'?); the keys are version, corpus, questions" in message


def test_a_governing_document_must_be_in_the_corpus_as_relevant_documents_must(tmp_path: Path) -> None:
    message = _error(tmp_path, '  - {id: a1, question: "Q?", type: conflict, governing: contract.md, relevant: []}\n')
    assert f"question a1: governing names contract.md, which is not in {tmp_path / 'corpus'}" in message
    message = _error(tmp_path, '  - {id: a1, question: "Q?", relevant: [{doc: contract.md, grade: 2}]}\n')
    assert f"question a1 names contract.md, which is not in {tmp_path / 'corpus'}" in message


@pytest.mark.parametrize("doc", ["../corpus/specs.md", "./specs.md", "/abs/specs.md"])
def test_a_document_path_must_be_written_relative_to_the_corpus_folder(tmp_path: Path, doc: str) -> None:
    # Retrieved documents are named relative to the corpus folder; any other spelling of
    # the same file would never match one.
    message = _error(tmp_path, f'  - {{id: a1, question: "Q?", relevant: [{{doc: "{doc}", grade: 2}}]}}\n')
    assert f"question a1 names '{doc}', which is not written as a path inside the corpus folder" in message


def test_values_of_the_wrong_kind_are_refused(tmp_path: Path) -> None:
    # A YAML number loses its written form: 3.50 would be looked for as "3.5".
    assert "answer 3.5 is not text" in _error(tmp_path, '  - {id: a1, question: "Q?", answer: 3.50}\n')
    assert "context is 'What?'; expected" in _error(tmp_path, '  - {id: a1, question: "Q?", context: "What?"}\n')
    assert "type is 42; expected text" in _error(tmp_path, '  - {id: a1, question: "Q?", type: 42}\n')
    assert "question a1: filters: unknown operator '=>'" in _error(
        tmp_path, '  - {id: a1, question: "Q?", filters: {version: {"=>": "2.4"}}}\n')
    assert "question #1 is 'What?'; expected a mapping" in _error(tmp_path, '  - "What?"\n')
    assert "version '2' is not a gold set version" in _error(tmp_path, GOOD, header="version: 2\ncorpus: corpus\n")


def test_the_gold_sets_in_the_repository_still_load(tmp_path: Path) -> None:
    assert len(load_gold(ROOT / "demo" / "gold.yaml").queries) == 97
    # The realdocs corpora are fetched, not checked in: their questions are loaded over a
    # corpus folder that holds an empty file for each document they name.
    for path in sorted((ROOT / "benchmarks" / "realdocs").glob("*.gold.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        corpus = tmp_path / path.stem
        corpus.mkdir()
        for q in data["questions"]:
            for doc in [r["doc"] for r in q.get("relevant") or []] + ([q["governing"]] if "governing" in q else []):
                (corpus / doc).parent.mkdir(parents=True, exist_ok=True)
                (corpus / doc).touch()
        gold = tmp_path / path.name
        gold.write_text(path.read_text(encoding="utf-8").replace(f"corpus: {data['corpus']}", f"corpus: {corpus}"),
                        encoding="utf-8")
        assert len(load_gold(gold).queries) == len(data["questions"]) >= 50, path


def test_the_cli_prints_one_line_naming_the_file_and_question(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    gold = _gold(tmp_path, '  - {id: a1, question: "Q?", relevant: [{doc: specs.md, grade: high}]}\n')
    code = main(["eval", "--gold", str(gold), "--answers", "--cache-dir", str(tmp_path / "cache"), "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith(f"beleg: error: {gold}: question a1: relevant #1: grade 'high'")


# ---------------------------------------------------------------------- SQuAD and BEIR files
def _squad(tmp_path: Path, qas: list[object], name: str = "squad.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"data": [{"title": "T", "paragraphs": [{"context": "Text.", "qas": qas}]}]}),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("qas", "expected"), [
    ([{"question": "Q?", "answers": []}], "data[0].paragraphs[0].qas[0] has id empty (null)"),
    ([{"id": "x", "answers": []}], "data[0].paragraphs[0].qas[0] (question x) has question empty (null)"),
    ([{"id": "x", "question": "Q?", "answers": ["Text"]}], "(question x) has answers[0] 'Text'; expected an answer such as"),
    (["Q?"], "data[0].paragraphs[0].qas[0] is 'Q?'; expected {'id'"),
    ([{"id": "x", "question": "Q?"}, {"id": "x", "question": "R?"}], "qas[1] (question x): an earlier question has the same id"),
])
def test_a_malformed_squad_question_is_named_by_its_place(tmp_path: Path, qas: list[object], expected: str) -> None:
    path = _squad(tmp_path, qas)
    with pytest.raises(ConfigError) as info:
        load_squad([path])
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


def test_a_squad_paragraph_without_qas_or_context_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "Text."}]}]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"data\[0\]\.paragraphs\[0\] is not a paragraph with 'qas"):
        load_squad([path])
    path.write_text(json.dumps({"data": [{"paragraphs": [{"qas": []}]}]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"data\[0\]\.paragraphs\[0\] has context empty \(null\)"):
        load_squad([path])
    path.write_text(json.dumps({"data": [{"title": "T"}]}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"data\[0\] is not an article with 'paragraphs"):
        load_squad([path])


def test_a_beir_folder_with_a_bad_score_or_record_is_refused(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "Text."}\n', encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1"}\n', encoding="utf-8")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"test\.tsv:2: expected 'query-id<TAB>corpus-id<TAB>score' with an integer"):
        load_beir(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td1\t1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"queries\.jsonl:1: the record has no 'text'"):
        load_beir(tmp_path)
