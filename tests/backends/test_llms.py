"""LLM backends over real HTTP against the fake servers in ``beleg.testing``, plus config,
registry and ScriptedLLM.

Every backend test goes through a real socket: request bodies and headers are checked as
the server received them, and failures are produced by the server, not by patching the
client.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from beleg.backends.llms import LLM, LLMConfig, Message, load_llm, resolve_llm_config
from beleg.errors import (
    ConfigError,
    LLMAuthError,
    LLMError,
    LLMResponseError,
    LLMUnavailableError,
)
from beleg.testing import (
    FakeAnthropicServer,
    FakeOpenAIServer,
    ScriptedLLM,
    delay,
    disconnect,
    garbage,
    status,
)

KEY = "sk-test-0123456789"
CHAT = [Message("system", "Answer briefly."), Message("user", "What is Beleg?")]
FAST = {"backoff_base_s": 0.0}


@dataclass
class Provider:
    """One provider's fake server and a client pointed at it."""

    name: str
    server: FakeOpenAIServer | FakeAnthropicServer
    key_env: str

    def llm(self, **overrides: object) -> LLM:
        spec = f"{self.name}:test-model"
        return load_llm(spec, **{"base_url": self.server.base_url, "api_key": KEY, **FAST, **overrides})


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    server_cls = FakeOpenAIServer if request.param == "openai" else FakeAnthropicServer
    with server_cls(responder=lambda messages: "A small RAG library.", api_key=KEY) as server:
        yield Provider(request.param, server, f"{request.param.upper()}_API_KEY")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- OpenAI wire format -----------------------------------------------------------------------


def test_openai_request_and_response() -> None:
    with FakeOpenAIServer(["Beleg answers with evidence."], api_key=KEY) as server:
        llm = load_llm("openai:gpt-test", base_url=server.base_url, api_key=KEY)
        result = llm.complete(CHAT, max_tokens=50, temperature=0.3)

    assert result.text == "Beleg answers with evidence."
    assert (result.model, result.finish_reason, result.attempts) == ("gpt-test", "stop", 1)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (5, 4)
    assert result.latency_s > 0
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "Answer briefly."},
                     {"role": "user", "content": "What is Beleg?"}],
        "max_tokens": 50,
        "temperature": 0.3,
    }


def test_openai_streaming_delivers_deltas_in_order_with_usage() -> None:
    tokens: list[str] = []
    with FakeOpenAIServer(["Streaming works word by word."]) as server:
        llm = load_llm("ollama:llama3.1:8b", base_url=server.base_url)
        result = llm.complete(CHAT, on_token=tokens.append)

    assert tokens == ["Streaming ", "works ", "word ", "by ", "word."]
    assert result.text == "".join(tokens)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (5, 5)
    assert result.finish_reason == "stop"
    body = server.requests[0].json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "llama3.1:8b"
    assert "authorization" not in server.requests[0].headers  # no key configured, none sent


def test_config_defaults_reach_the_request() -> None:
    with FakeOpenAIServer(["ok"]) as server:
        llm = load_llm(LLMConfig(spec="vllm:m", base_url=server.base_url, max_tokens=77, temperature=0.5))
        llm.complete([Message("user", "hi")])
    assert (server.requests[0].json["max_tokens"], server.requests[0].json["temperature"]) == (77, 0.5)


# -- Anthropic wire format --------------------------------------------------------------------


def test_anthropic_request_and_response() -> None:
    chat = [Message("system", "Be brief."), Message("system", "Cite sources."), *CHAT[1:]]
    with FakeAnthropicServer(["Beleg answers with evidence."], api_key=KEY) as server:
        llm = load_llm("anthropic:claude-test", base_url=server.base_url, api_key=KEY)
        result = llm.complete(chat, max_tokens=64, temperature=0.2)

    assert result.text == "Beleg answers with evidence."
    assert (result.model, result.finish_reason) == ("claude-test", "end_turn")
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 4)
    [request] = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.json == {
        "model": "claude-test",
        "max_tokens": 64,
        "temperature": 0.2,
        "messages": [{"role": "user", "content": "What is Beleg?"}],
        "system": "Be brief.\n\nCite sources.",
    }
    assert server.llm.calls[0][0] == Message("system", "Be brief.\n\nCite sources.")


def test_anthropic_streaming_events() -> None:
    tokens: list[str] = []
    with FakeAnthropicServer(["one two three four"]) as server:
        llm = load_llm("anthropic:claude-test", base_url=server.base_url, api_key=KEY)
        result = llm.complete(CHAT, max_tokens=3, on_token=tokens.append)

    assert tokens == ["one ", "two ", "three "]
    assert result.text == "one two three "
    assert result.finish_reason == "max_tokens"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (5, 3)
    assert server.requests[0].json["stream"] is True


# -- failures, for both providers ---------------------------------------------------------------


def test_plain_and_streamed_answers_agree(provider: Provider) -> None:
    llm = provider.llm()
    tokens: list[str] = []
    plain, streamed = llm.complete(CHAT), llm.complete(CHAT, on_token=tokens.append)
    assert plain.text == streamed.text == "".join(tokens) == "A small RAG library."
    assert plain.usage == streamed.usage


@pytest.mark.parametrize("stream", [False, True])
def test_503_is_retried(provider: Provider, stream: bool) -> None:
    provider.server.fail(status(503))
    result = provider.llm().complete(CHAT, on_token=(lambda _: None) if stream else None)
    assert result.text == "A small RAG library."
    assert result.attempts == 2
    assert len(provider.server.requests) == 2


def test_429_waits_for_retry_after(provider: Provider) -> None:
    provider.server.fail(status(429, retry_after=0), status(429, retry_after=0.1))
    result = provider.llm().complete(CHAT)
    assert result.attempts == 3
    assert result.latency_s >= 0.1  # the server's Retry-After was honoured, not the zero backoff


def test_server_errors_give_up_after_max_retries(provider: Provider) -> None:
    provider.server.fail(*[status(500, message="boom")] * 3)
    with pytest.raises(LLMResponseError, match=r"HTTP 500 after 3 attempts: boom"):
        provider.llm(max_retries=2).complete(CHAT)
    assert len(provider.server.requests) == 3


def test_401_is_an_auth_error_without_retry(provider: Provider) -> None:
    with pytest.raises(LLMAuthError, match=provider.key_env) as info:
        provider.llm(api_key="sk-wrong-key").complete(CHAT)
    assert "sk-wrong-key" not in str(info.value)
    assert len(provider.server.requests) == 1


def test_the_key_is_scrubbed_from_quoted_server_text(provider: Provider) -> None:
    provider.server.fail(status(400, message=f"key {KEY} may not use this model"))
    with pytest.raises(LLMResponseError, match=r"HTTP 400: key \*\*\* may not use this model") as info:
        provider.llm().complete(CHAT)
    assert KEY not in str(info.value)


def test_404_model_not_found_surfaces(provider: Provider) -> None:
    provider.server.fail(status(404, message="model 'test-model' not found"))
    with pytest.raises(LLMResponseError, match=r"HTTP 404: model 'test-model' not found\. Check the model name"):
        provider.llm().complete(CHAT)
    assert len(provider.server.requests) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_garbage_is_a_response_error(provider: Provider, stream: bool) -> None:
    provider.server.fail(garbage())
    with pytest.raises(LLMResponseError, match="not JSON"):
        provider.llm().complete(CHAT, on_token=(lambda _: None) if stream else None)


def test_json_answer_to_a_stream_request_is_not_an_empty_reply(provider: Provider) -> None:
    provider.server.fail(status(200, message="streaming is off"))  # a 200 JSON body, no events
    with pytest.raises(LLMResponseError, match=r"without any events \(application/json\).*streaming is off"):
        provider.llm().complete(CHAT, on_token=lambda _: None)


def test_timeout_then_success(provider: Provider) -> None:
    provider.server.fail(delay(2.0))
    # Generous enough that the undelayed retry answers in time on a loaded machine.
    result = provider.llm(timeout_s=0.3, max_retries=1).complete(CHAT)
    assert result.attempts == 2


def test_timeout_after_all_retries_is_unavailable(provider: Provider) -> None:
    provider.server.fail(delay(2.0), delay(2.0))
    with pytest.raises(LLMUnavailableError, match=r"did not answer within 0\.1s \(2 attempts\); is the server running"):
        provider.llm(timeout_s=0.1, max_retries=1).complete(CHAT)


def test_dropped_connection_is_retried(provider: Provider) -> None:
    provider.server.fail(disconnect())
    assert provider.llm().complete(CHAT).attempts == 2


@pytest.mark.parametrize("spec", ["openai-compatible:m", "anthropic:m"])
def test_connection_refused_is_unavailable(spec: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    llm = load_llm(spec, base_url=url, api_key=KEY, max_retries=1, **FAST)
    with pytest.raises(LLMUnavailableError, match=r"could not reach http://127\.0\.0\.1:\d+/.* \(2 attempts\): "
                                                  r"connection refused; is the server running"):
        llm.complete(CHAT)


# -- config ----------------------------------------------------------------------------------------


@pytest.fixture
def toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no stray ./beleg.toml from the repo
    path = tmp_path / "team.toml"
    path.write_text('[llm]\nspec = "ollama:llama3.1:8b"\nbase_url = "http://gpu-box:11434/v1"\n'
                    'timeout_s = 120\nmax_retries = 5\nmax_tokens = 300\napi_key_env = "TEAM_KEY"\n')
    return path


def test_precedence_cli_over_env_over_file(toml: Path) -> None:
    env = {"BELEG_LLM": "vllm:qwen", "BELEG_LLM_TIMEOUT": "30", "TEAM_KEY": "sk-team"}
    config = resolve_llm_config({"spec": "openai:gpt-4.1-mini", "timeout_s": None, "max_retries": "1"}, env, toml)
    assert config == LLMConfig(spec="openai:gpt-4.1-mini", base_url="http://gpu-box:11434/v1", api_key="sk-team",
                               timeout_s=30.0, max_retries=1, max_tokens=300)
    assert resolve_llm_config(None, env, toml).spec == "vllm:qwen"  # type: ignore[union-attr]
    assert resolve_llm_config(None, {}, toml).spec == "ollama:llama3.1:8b"  # type: ignore[union-attr]


def test_config_file_from_beleg_config_and_cwd(toml: Path) -> None:
    assert resolve_llm_config(env={"BELEG_CONFIG": str(toml)}).spec == "ollama:llama3.1:8b"  # type: ignore[union-attr]
    assert resolve_llm_config(env={}) is None
    (toml.parent / "beleg.toml").write_text('[llm]\nspec = "lmstudio:phi"\n')
    assert resolve_llm_config(env={}).spec == "lmstudio:phi"  # type: ignore[union-attr]


def test_nothing_configured_means_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_llm_config({"spec": None}, {"BELEG_LLM_BASE_URL": "http://x:1/v1", "OPENAI_API_KEY": "k"}) is None


@pytest.mark.parametrize(("spec", "env", "key"), [
    ("openai:gpt", {"OPENAI_API_KEY": "sk-o"}, "sk-o"),
    ("anthropic:claude", {"ANTHROPIC_API_KEY": "sk-a"}, "sk-a"),
    ("openai:gpt", {"OPENAI_API_KEY": "sk-o", "BELEG_LLM_API_KEY": "sk-b"}, "sk-b"),
    ("openai-compatible:m", {"OPENAI_API_KEY": "sk-o"}, None),  # never leak the OpenAI key to a third party
    ("ollama:m", {"ANTHROPIC_API_KEY": "sk-a"}, None),
])
def test_key_fallbacks(spec: str, env: dict[str, str], key: str | None, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_llm_config({"spec": spec}, env).api_key == key  # type: ignore[union-attr]


def test_repr_hides_the_key() -> None:
    config = LLMConfig(spec="openai:gpt", api_key="sk-secret-value")
    assert "sk-secret-value" not in repr(config) and "api_key='***'" in repr(config)
    assert "sk-secret-value" not in repr(load_llm(config))


@pytest.mark.parametrize(("env", "file", "message"), [
    ({"BELEG_LLM_TIMEOUT": "soon"}, "", r"environment variable BELEG_LLM_TIMEOUT: expected a number of seconds"),
    ({"BELEG_LLM_MAX_RETRIES": "2.5"}, "", r"BELEG_LLM_MAX_RETRIES: expected a whole number >= 0, got '2.5'"),
    ({"BELEG_LLM": "opneai:gpt"}, "", r"environment variable BELEG_LLM: unknown LLM provider .* Did you mean 'openai'"),
    ({}, 'spec = "ollama:m"\nmax_retries = -1', r"\[llm\]\.max_retries: expected a whole number >= 0, got -1"),
    ({}, 'spec = "ollama:m"\ntemprature = 0.2', r"unknown key \[llm\]\.temprature.* Did you mean 'temperature'"),
    ({}, 'spec = "ollama:m"\nbase_url = "localhost:11434"', r"\[llm\]\.base_url: expected an http\(s\) URL"),
    ({}, "spec = [", r"is not valid TOML"),
])
def test_bad_values_name_their_source(env: dict[str, str], file: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "beleg.toml"
    path.write_text(f"[llm]\n{file}\n" if file else "")
    with pytest.raises(ConfigError, match=message):
        resolve_llm_config({}, env, path)


def test_configs_built_in_code_are_checked_too() -> None:
    with pytest.raises(ConfigError, match=r"LLMConfig.timeout_s: expected a number of seconds > 0, got -1"):
        LLMConfig(spec="ollama:m", timeout_s=-1)
    with pytest.raises(ConfigError, match=r"LLMConfig.max_retries"):
        load_llm("ollama:m", max_retries=-2)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="BELEG_CONFIG .*does not exist"):
        resolve_llm_config(env={"BELEG_CONFIG": str(tmp_path / "nope.toml")})


# -- registry --------------------------------------------------------------------------------------


def test_unknown_provider_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown LLM provider 'antropic'.*Did you mean 'anthropic'\?"):
        load_llm("antropic:claude")


@pytest.mark.parametrize("spec", ["ollama:", "ollama"])
def test_spec_without_model(spec: str) -> None:
    with pytest.raises(ConfigError, match="model|provider:model"):
        load_llm(spec)


def test_missing_key_is_raised_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeOpenAIServer(["unused"]) as server, \
            pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        load_llm("openai:gpt-4.1-mini", base_url=server.base_url)
    assert server.requests == []
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        load_llm("anthropic:claude-test")


def test_key_with_inner_whitespace_is_rejected_without_echoing_it() -> None:
    assert load_llm("openai:gpt", api_key=" sk-ok\n").complete is not None  # surrounding whitespace is trimmed
    with pytest.raises(ConfigError, match="whitespace") as info:
        load_llm("openai:gpt", api_key="sk-abc\ndef")
    assert "sk-abc" not in str(info.value)


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="needs a base URL"):
        load_llm("openai-compatible:m")


def test_registry_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    expected = {"ollama:llama3.1:8b": "http://localhost:11434/v1", "vllm:m": "http://localhost:8000/v1",
                "llamacpp:m": "http://localhost:8080/v1", "lmstudio:m": "http://localhost:1234/v1",
                "openai:gpt-4.1-mini": "https://api.openai.com/v1"}
    for spec, url in expected.items():
        llm = load_llm(spec)
        assert isinstance(llm, LLM)
        assert (llm.name, llm.base_url) == (spec, url)  # type: ignore[attr-defined]
    assert load_llm("anthropic:claude-x", api_key=KEY).base_url == "https://api.anthropic.com"  # type: ignore[attr-defined]


def test_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match=r"base_url: expected an http\(s\) URL"):
        load_llm("ollama:m", base_url="localhost:11434")


# -- ScriptedLLM -----------------------------------------------------------------------------------


def test_scripted_replies_then_responder() -> None:
    llm = ScriptedLLM(["first", lambda msgs: f"saw {len(msgs)} messages"], responder=lambda msgs: "default")
    assert isinstance(llm, LLM)
    texts = [llm.complete(CHAT).text for _ in range(4)]
    assert texts == ["first", "saw 2 messages", "default", "default"]
    assert llm.calls == [CHAT] * 4


def test_scripted_exhaustion_is_a_clear_error() -> None:
    llm = ScriptedLLM(["only one"])
    llm.complete(CHAT)
    with pytest.raises(LLMError, match="ScriptedLLM has no reply left for call 2"):
        llm.complete(CHAT)


def test_scripted_usage_streaming_and_truncation() -> None:
    tokens: list[str] = []
    result = ScriptedLLM(["  Two  words\n"], name="scripted:test").complete(CHAT, on_token=tokens.append)
    assert tokens == ["  Two  ", "words\n"] and result.text == "".join(tokens)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.model) == (5, 2, "scripted:test")
    cut = ScriptedLLM(["a b c d"]).complete(CHAT, max_tokens=2)
    assert (cut.text, cut.finish_reason, cut.usage.completion_tokens) == ("a b ", "length", 2)


def test_fake_server_reports_script_exhaustion_and_bad_routes() -> None:
    with FakeOpenAIServer([]) as server:
        llm = load_llm("ollama:m", base_url=server.base_url, max_retries=0)
        with pytest.raises(LLMResponseError, match="no reply left for call 1"):
            llm.complete(CHAT)
        wrong = load_llm("ollama:m", base_url=server.base_url.removesuffix("/v1"), max_retries=0)
        with pytest.raises(LLMResponseError, match="HTTP 404: no route for POST /chat/completions"):
            wrong.complete(CHAT)
