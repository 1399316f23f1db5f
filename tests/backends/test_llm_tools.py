"""Tool calling in the OpenAI chat-completions wire format, over real HTTP against the fake
server, plus the scripted tool-call replies of ScriptedLLM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from beleg.backends.llms import Message, load_llm
from beleg.backends.llms.base import ToolCall, ToolCompletion, ToolLLM
from beleg.backends.llms.openai_compat import (
    OpenAICompatibleLLM,
    parse_tool_call,
    wire_message,
)
from beleg.errors import LLMError, LLMResponseError
from beleg.testing import FakeOpenAIServer
from beleg.testing.scripted import ScriptedLLM, ToolCallReply

TOOLS: list[dict[str, Any]] = [{
    "type": "function",
    "function": {"name": "keyword_search", "description": "BM25 search",
                 "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                                 "limit": {"type": "integer"}},
                                "required": ["query"]}},
}]
URL = "http://x/v1/chat/completions"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer([
        ToolCallReply.of(("keyword_search", {"query": "E-4290", "limit": 3}), ("keyword_search", {"query": "429"}),
                         text="Searching."),
        "E-4290 means the rate limit was exceeded.",
    ]) as fake:
        yield fake


def _llm(server: FakeOpenAIServer) -> OpenAICompatibleLLM:
    llm = load_llm("openai-compatible:tool-model", base_url=server.base_url, backoff_base_s=0.0)
    assert isinstance(llm, OpenAICompatibleLLM)
    return llm


def test_a_tool_call_round_trip_uses_the_openai_wire_format(server: FakeOpenAIServer) -> None:
    llm = _llm(server)
    assert isinstance(llm, ToolLLM)
    chat = [Message("system", "Find passages."), Message("user", "What is E-4290?")]
    first = llm.complete_with_tools(chat, TOOLS, max_tokens=200)

    assert isinstance(first, ToolCompletion)
    assert first.text == "Searching." and first.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("keyword_search", {"query": "E-4290", "limit": 3}), ("keyword_search", {"query": "429"})]
    assert len({c.id for c in first.tool_calls}) == 2 and all(c.id for c in first.tool_calls)
    assert first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0

    body = server.requests[0].json
    assert body["tools"] == TOOLS and body["max_tokens"] == 200 and "stream" not in body
    assert body["messages"] == [{"role": "system", "content": "Find passages."},
                                {"role": "user", "content": "What is E-4290?"}]

    follow_up = [*chat, first.message(),
                 *(Message("tool", f"result {i}", tool_call_id=c.id) for i, c in enumerate(first.tool_calls))]
    second = llm.complete_with_tools(follow_up, TOOLS)
    assert second.tool_calls == () and second.text == "E-4290 means the rate limit was exceeded."
    assert second.finish_reason == "stop"

    sent = server.requests[1].json["messages"]
    assistant = sent[2]
    assert assistant["role"] == "assistant" and assistant["content"] == "Searching."
    assert [c["type"] for c in assistant["tool_calls"]] == ["function", "function"]
    call = assistant["tool_calls"][0]
    assert call["id"] == first.tool_calls[0].id and call["function"]["name"] == "keyword_search"
    assert isinstance(call["function"]["arguments"], str)  # OpenAI sends arguments as a JSON string
    assert json.loads(call["function"]["arguments"]) == {"query": "E-4290", "limit": 3}
    assert sent[3] == {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "result 0"}
    assert sent[4] == {"role": "tool", "tool_call_id": first.tool_calls[1].id, "content": "result 1"}
    # The scripted model saw the same conversation, tool calls and results included.
    seen = server.llm.calls[1]
    assert seen[2].tool_calls == first.tool_calls and seen[3].role == "tool"
    assert seen[3].tool_call_id == first.tool_calls[0].id
    assert server.llm.tools[1] == TOOLS


def test_the_response_body_carries_tool_calls_like_openai() -> None:
    with FakeOpenAIServer([ToolCallReply.of(("keyword_search", {"query": "x"}))]) as fake:
        answer = httpx.post(f"{fake.base_url}/chat/completions",
                            json={"model": "m", "messages": [{"role": "user", "content": "q"}], "tools": TOOLS}).json()
    message = answer["choices"][0]["message"]
    assert answer["object"] == "chat.completion" and answer["choices"][0]["finish_reason"] == "tool_calls"
    assert message["role"] == "assistant" and message["content"] is None
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["id"] == "call_1_0" and call["function"]["name"] == "keyword_search"
    assert json.loads(call["function"]["arguments"]) == {"query": "x"}
    assert set(answer["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_plain_messages_and_plain_complete_are_unchanged(server: FakeOpenAIServer) -> None:
    assert wire_message(Message("user", "hi")) == {"role": "user", "content": "hi"}
    assert Message("user", "hi") == Message("user", "hi", (), None)
    with FakeOpenAIServer(["Hello."]) as plain:
        llm = load_llm("openai-compatible:m", base_url=plain.base_url)
        assert llm.complete([Message("user", "hi")]).text == "Hello."
        body = plain.requests[0].json
        assert "tools" not in body and body["messages"] == [{"role": "user", "content": "hi"}]


def test_tool_choice_is_passed_through(server: FakeOpenAIServer) -> None:
    _llm(server).complete_with_tools([Message("user", "q")], TOOLS, tool_choice="required")
    assert server.requests[0].json["tool_choice"] == "required"


def test_the_fake_server_rejects_what_openai_rejects(server: FakeOpenAIServer) -> None:
    llm = _llm(server)
    orphan = [Message("user", "q"), Message("tool", "result", tool_call_id="call_x")]
    with pytest.raises(LLMResponseError, match="HTTP 400.*tool_call_id 'call_x' not found"):
        llm.complete_with_tools(orphan, TOOLS)
    unanswered = [Message("user", "q"),
                  Message("assistant", "", tool_calls=(ToolCall("c1", "keyword_search", {"query": "a"}),
                                                       ToolCall("c2", "keyword_search", {"query": "b"}))),
                  Message("tool", "r1", tool_call_id="c1"),
                  Message("user", "next")]
    with pytest.raises(LLMResponseError, match="HTTP 400.*missing: c2"):
        llm.complete_with_tools(unanswered, TOOLS)
    with pytest.raises(LLMResponseError, match="HTTP 400.*tools\\[0\\]"):
        llm.complete_with_tools([Message("user", "q")], [{"name": "keyword_search"}])
    assert server.llm.calls == []  # none of them reached the model


def test_invalid_arguments_are_kept_raw_and_sent_back_unchanged() -> None:
    with FakeOpenAIServer([{"tool_calls": [{"name": "keyword_search", "arguments": "{query: E-4290"}]},
                           "done"]) as fake:
        llm = _llm(fake)
        turn = llm.complete_with_tools([Message("user", "q")], TOOLS)
        (call,) = turn.tool_calls
        assert call.arguments == {} and call.invalid_arguments == "{query: E-4290"
        llm.complete_with_tools([Message("user", "q"), turn.message(),
                                 Message("tool", "error: not JSON", tool_call_id=call.id)], TOOLS)
        sent = fake.requests[1].json["messages"][1]["tool_calls"][0]["function"]["arguments"]
        assert sent == "{query: E-4290"


@pytest.mark.parametrize(("raw", "expected"), [
    ({"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}, ToolCall("a", "f", {"q": 1})),
    ({"id": "a", "function": {"name": "f", "arguments": {"q": 1}}}, ToolCall("a", "f", {"q": 1})),  # Ollama
    ({"function": {"name": "f", "arguments": ""}}, ToolCall("call_2", "f", {})),
    ({"id": "a", "function": {"name": "f", "arguments": "[1, 2]"}}, ToolCall("a", "f", {}, "[1, 2]")),
])
def test_parse_tool_call_variants(raw: dict[str, Any], expected: ToolCall) -> None:
    assert parse_tool_call(raw, 2, URL) == expected


@pytest.mark.parametrize("raw", [{"id": "a"}, {"function": {"arguments": "{}"}}, "call", None])
def test_a_tool_call_without_a_name_is_a_response_error(raw: Any) -> None:
    with pytest.raises(LLMResponseError, match="without a function name"):
        parse_tool_call(raw, 0, URL)


def test_a_malformed_tool_calls_field_is_a_response_error() -> None:
    with FakeOpenAIServer(responder=lambda m: "x") as fake:
        llm = _llm(fake)
        llm._http.post_json = lambda path, body: (  # type: ignore[method-assign]
            {"choices": [{"message": {"content": None, "tool_calls": {"id": "x"}}}]}, 1)
        with pytest.raises(LLMResponseError, match="tool_calls that are not a list"):
            llm.complete_with_tools([Message("user", "q")], TOOLS)


def test_scripted_tool_replies() -> None:
    llm = ScriptedLLM([
        ToolCallReply.of(("a", {"x": 1}), ToolCall("mine", "b", {})),
        {"tool_calls": [{"name": "c", "arguments": '{"y": 2}'}], "text": "thinking"},
        lambda messages: ToolCallReply.of({"name": "d", "arguments": {}, "id": "given"}),
        "final",
        ToolCallReply.of(("e", {})),
    ])
    one = llm.complete_with_tools([Message("user", "q")], TOOLS)
    assert [(c.id, c.name, c.arguments) for c in one.tool_calls] == [("call_1_0", "a", {"x": 1}), ("mine", "b", {})]
    two = llm.complete_with_tools([Message("user", "q")], TOOLS)
    assert two.text == "thinking" and two.tool_calls == (ToolCall("call_2_0", "c", {"y": 2}),)
    three = llm.complete_with_tools([Message("user", "q")], TOOLS)
    assert three.tool_calls[0].id == "given"
    four = llm.complete_with_tools([Message("user", "q")], TOOLS)
    assert four.text == "final" and four.tool_calls == () and four.finish_reason == "stop"
    with pytest.raises(LLMError, match="tool calls need complete_with_tools"):
        llm.complete([Message("user", "q")])
    assert llm.tools[:4] == [TOOLS] * 4 and llm.tools[4] is None
    assert len(llm.calls) == 5


def test_scripted_usage_counts_tool_calls() -> None:
    llm = ScriptedLLM([ToolCallReply.of(("search", {"query": "two words"}))])
    history = [Message("user", "one two three"),
               Message("assistant", "", tool_calls=(ToolCall("c", "search", {"query": "x"}),)),
               Message("tool", "four five", tool_call_id="c")]
    usage = llm.complete_with_tools(history, TOOLS).usage
    assert usage.prompt_tokens == 3 + 2 + 2  # words, {"query": "x"}, tool result
    assert usage.completion_tokens == 3  # {"query": "two words"}
