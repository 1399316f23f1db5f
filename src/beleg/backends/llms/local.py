"""A local GGUF model run in-process by llama.cpp (``--llm local:PATH.gguf``), offline.

llama.cpp comes from the ``xllamacpp`` wheel (``pip install "beleg[local]"``): its server
runs inside this process and answers OpenAI-format request dicts
(``Server.handle_chat_completions``), so no port, key or second process is needed.

What this backend adds around it:

- **Checks before loading**, each a one-line :class:`ModelError`: the file exists, starts
  with the GGUF magic bytes, and fits into the memory that is available.
- **A private listener.** xllamacpp's server always opens an HTTP listener (by default on
  127.0.0.1, without a key and with CORS open to every origin, so any web page the user
  visits could drive it). Here it is bound to a Unix socket in a private (0700) temporary
  folder, with a random API key and CORS off; nothing can reach it over TCP.
- **Constrained output.** Beleg's structured calls (rewrite, multi-query, decomposition,
  gap and bridge queries, judge, claim verifier; see :mod:`beleg.backends.llms.formats`)
  are decoded under a grammar or JSON schema, so a small model cannot answer in a format
  the caller cannot parse. Callers can pass their own ``json_schema`` or ``grammar``.
- **Tool calling through a schema.** Small models' chat templates often have no native tool
  calls, and models that have them (Qwen2.5) were seen writing the call as text instead.
  :meth:`LocalLLM.complete_with_tools` therefore describes the tools in the system message
  and constrains the reply to ``{"tool_calls": [...]}`` or ``{"answer": "..."}``.
- **A time budget per call** (``timeout_s``): generation is streamed internally and stopped
  when the budget is spent, as a ModelError (prompt processing before the first token
  cannot be interrupted; its time counts against the budget once generation starts).
- **Prompt caching.** One slot with ``cache_prompt``: a call that starts with the same
  system prompt as the previous one reuses its KV cache (see :attr:`LocalLLM.last_timings`).

Threads default to 1 (:data:`DEFAULT_THREADS`): on a machine whose cores are busy, two
OpenMP threads spin on each other's barriers and generation collapses (measured in
docs/llm.md); set ``BELEG_LLM_THREADS`` or ``[llm].threads`` on an idle multi-core machine.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from beleg.backends.llms.base import Completion, Message, ToolCall, ToolCompletion, Usage
from beleg.backends.llms.formats import format_for, tool_call_schema
from beleg.errors import LLMResponseError, ModelError, missing_dependency

logger = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"
DEFAULT_THREADS = 1
DEFAULT_CONTEXT = 4096
#: Memory needed beyond the file: KV cache and compute buffers at the default context
#: (an estimate; small models need far less, 7B models at 4k context about this much).
MEMORY_HEADROOM = 0.2
MEMORY_EXTRA_BYTES = 256 * 2**20


def check_model_file(path: str | Path, *, available: int | None = None) -> int:
    """Check that ``path`` is a GGUF model that fits into memory; return its size in bytes.

    Args:
        available: Bytes of memory available; read from ``/proc/meminfo`` when None.

    Raises:
        ModelError: Missing file, not a GGUF file, or too little memory.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise ModelError(f"local model {str(file)!r} does not exist or is not a file; "
                         "expected the path of a .gguf model, e.g. --llm local:models/qwen2.5-1.5b.gguf")
    with file.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelError(f"local model {str(file)!r} is not a GGUF file (starts with {magic!r}, expected "
                         f"{GGUF_MAGIC!r}); llama.cpp loads only .gguf models")
    size = file.stat().st_size
    available = available_memory() if available is None else available
    needed = int(size * (1 + MEMORY_HEADROOM)) + MEMORY_EXTRA_BYTES
    if available is not None and needed > available:
        raise ModelError(f"local model {str(file)!r} needs about {needed / 2**30:.1f} GiB of memory "
                         f"({size / 2**30:.2f} GiB file plus context), but only {available / 2**30:.1f} GiB "
                         "is available; close other programs or use a smaller (more quantised) model")
    return size


def available_memory() -> int | None:
    """``MemAvailable`` from /proc/meminfo in bytes; None where there is no /proc (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    logger.info("cannot read available memory (no /proc/meminfo); the local model's memory check is skipped")
    return None


class LocalLLM:
    """A GGUF model run by llama.cpp in this process.

    Args:
        model: Path of the ``.gguf`` file.
        name: Spec shown in traces; defaults to ``"local:MODEL"``.
        timeout_s: Time budget of one call in seconds.
        max_tokens, temperature: Defaults for calls that do not pass them.
        threads: CPU threads for llama.cpp (default :data:`DEFAULT_THREADS`).
        context_size: Context window in tokens (default :data:`DEFAULT_CONTEXT`).
        base_url, api_key, key_env, max_retries: Accepted for the common constructor of
            :func:`~beleg.backends.llms.load_llm`; a local model has no URL, key or retries.

    The file is checked here; the model is loaded on the first call (seconds for a 1 GB
    model), so building the backend stays cheap.

    Raises:
        ModelError: The file is missing, not GGUF, or too big for the memory available.
        MissingDependencyError: xllamacpp is not installed.
    """

    #: Answers that fail the citation checks are refused, not shown marked unverified
    #: (:attr:`beleg.answer.answerer.AnswerOptions.refuse_unverified`): small local models
    #: invent answers with citations far more often than hosted ones.
    refuse_unverified = True

    def __init__(self, model: str, *, name: str | None = None, timeout_s: float = 60.0, max_tokens: int = 1024,
                 temperature: float = 0.0, threads: int | None = None, context_size: int | None = None,
                 base_url: str | None = None, api_key: str | None = None, key_env: str | None = None,
                 max_retries: int = 0) -> None:
        del base_url, api_key, key_env, max_retries  # see the docstring
        self.model = model
        self.name = name or f"local:{model}"
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.threads = DEFAULT_THREADS if threads is None else threads
        self.context_size = DEFAULT_CONTEXT if context_size is None else context_size
        self.size_bytes = check_model_file(model)
        #: The ``timings`` and ``usage`` llama.cpp reported for the last call
        #: (``cache_n``: prompt tokens reused from the previous call).
        self.last_timings: dict[str, Any] = {}
        self._server: Any = None
        self._socket_dir: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ public API
    def complete(self, messages: Sequence[Message], *, max_tokens: int | None = None,
                 temperature: float | None = None, on_token: Callable[[str], None] | None = None,
                 json_schema: dict[str, Any] | None = None, grammar: str | None = None) -> Completion:
        """The model's reply; constrained by ``json_schema`` / ``grammar`` when given, else by
        the format Beleg's structured call with these messages expects (if any).

        Raises:
            ModelError: The call exceeded ``timeout_s``, or llama.cpp failed.
            LLMResponseError: The request did not fit (e.g. longer than the context).
        """
        body = self._body(messages, max_tokens, temperature)
        if json_schema is None and grammar is None:
            fmt = format_for(messages)
            if fmt is not None:
                json_schema, grammar = fmt.json_schema, fmt.grammar
                logger.debug("%s: %s call, output constrained", self.name, fmt.name)
        _constrain(body, json_schema, grammar)
        return self._run(body, on_token)

    def complete_with_tools(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], *,
                            max_tokens: int | None = None, temperature: float | None = None,
                            tool_choice: str | dict[str, Any] | None = None) -> ToolCompletion:
        """One tool-calling turn, emulated: the tools are described in the system message and
        the reply is constrained to ``{"tool_calls": [...]}`` or ``{"answer": "..."}``.

        ``tool_choice="none"`` asks for an answer only; other choices allow both.
        """
        if tool_choice == "none" or not tools:
            completion = self.complete(messages, max_tokens=max_tokens, temperature=temperature)
            return ToolCompletion(completion.text, (), completion.model, completion.usage,
                                  completion.finish_reason, completion.latency_s)
        wire = _with_tool_instructions(messages, tools)
        body = self._body(wire, max_tokens, temperature, prepared=True)
        _constrain(body, tool_call_schema(tools), None)
        completion = self._run(body, None)
        text, calls = parse_emulated_turn(completion.text, self._turn)
        finish = "tool_calls" if calls else completion.finish_reason
        return ToolCompletion(text, calls, completion.model, completion.usage, finish, completion.latency_s)

    def close(self) -> None:
        """Free the model and remove the private socket folder."""
        with self._lock:
            self._server = None
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)
                self._socket_dir = None

    def __repr__(self) -> str:
        return f"LocalLLM(name={self.name!r}, threads={self.threads}, context_size={self.context_size})"

    # ------------------------------------------------------------------ internals
    _turn = 0

    def _body(self, messages: Sequence[Message] | Sequence[dict[str, Any]], max_tokens: int | None,
              temperature: float | None, *, prepared: bool = False) -> dict[str, Any]:
        # prepared: already in wire form (dicts), e.g. with the emulated tool instructions added
        wire = list(messages) if prepared else [_wire(m) for m in messages]  # type: ignore[arg-type]
        return {"messages": wire, "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
                "temperature": self.temperature if temperature is None else temperature,
                "cache_prompt": True, "stream": True, "stream_options": {"include_usage": True}}

    def _run(self, body: dict[str, Any], on_token: Callable[[str], None] | None) -> Completion:
        with self._lock:
            server = self._load()
            self._turn += 1
            start = time.perf_counter()
            deadline = start + self.timeout_s
            state = _StreamState()

            def on_chunk(chunk: dict[str, Any]) -> bool:
                state.take(chunk, on_token)
                if time.perf_counter() > deadline:
                    state.timed_out = True
                return state.timed_out  # True stops the generation

            try:
                server.handle_chat_completions(body, on_chunk)
            except Exception as exc:  # llama.cpp's errors arrive as RuntimeError with its text
                raise ModelError(f"{self.name} failed: {exc}") from exc
            latency = time.perf_counter() - start
        if state.error is not None:
            message = state.error.get("message", state.error) if isinstance(state.error, dict) else state.error
            raise LLMResponseError(f"{self.name} rejected the request: {message}")
        if state.timed_out:
            raise ModelError(f"{self.name} exceeded its time budget of {self.timeout_s:g} s "
                             f"({state.completion_tokens()} tokens written); raise BELEG_LLM_TIMEOUT or "
                             "[llm].timeout_s, shorten the prompt, or use a smaller model")
        self.last_timings = {**state.timings, "usage": state.usage}
        usage = Usage(int(state.usage.get("prompt_tokens") or 0), int(state.usage.get("completion_tokens") or 0))
        logger.debug("%s: %d+%d tokens in %.2fs (%s cached)", self.name, usage.prompt_tokens,
                     usage.completion_tokens, latency, state.timings.get("cache_n"))
        return Completion(text="".join(state.parts), model=self.name, usage=usage, finish_reason=state.finish,
                          latency_s=latency)

    def _load(self) -> Any:
        if self._server is not None:
            return self._server
        try:
            import xllamacpp
        except ImportError as exc:
            raise missing_dependency("xllamacpp", "local") from exc
        self._socket_dir = tempfile.mkdtemp(prefix="beleg-llm-")  # mkdtemp makes it 0700
        params = server_params(xllamacpp, self.model, threads=self.threads, context_size=self.context_size,
                               hostname=os.path.join(self._socket_dir, "llama.sock"),
                               api_key=secrets.token_urlsafe(24))
        start = time.perf_counter()
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp could not load {self.model!r}: {exc}; is it a complete, "
                             "supported GGUF model?") from exc
        logger.info("%s loaded in %.1fs (%d threads, context %d)", self.name, time.perf_counter() - start,
                    self.threads, self.context_size)
        return self._server


def server_params(xllamacpp: Any, model: str, *, threads: int, context_size: int, hostname: str, api_key: str,
                  port: int = 0) -> Any:
    """llama.cpp server parameters with Beleg's defaults: one slot with prompt caching,
    quiet logs, no web UI, no metrics, CORS off, an API key on the listener."""
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_ctx = context_size
    params.n_parallel = 1  # one slot: consecutive calls share its KV cache (prompt caching)
    params.cache_prompt = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.warmup = False
    params.verbosity = -1  # no llama.cpp log lines on stderr
    params.hostnames = [hostname]
    params.port = port
    params.api_keys = [api_key]
    params.cors_origins = ""  # no Access-Control-Allow-Origin for any browser origin
    params.cors_credentials = False
    params.ui = False
    params.endpoint_metrics = False
    params.endpoint_slots = False
    return params


class _StreamState:
    """What the streamed chunks of one call added up to."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.usage: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}
        self.finish: str | None = None
        self.error: Any = None
        self.timed_out = False

    def take(self, chunk: dict[str, Any], on_token: Callable[[str], None] | None) -> None:
        if "error" in chunk:
            self.error = chunk["error"]
            return
        self.usage = chunk.get("usage") or self.usage
        self.timings = chunk.get("timings") or self.timings
        for choice in chunk.get("choices") or []:
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                self.parts.append(delta)
                if on_token is not None:
                    on_token(delta)
            self.finish = choice.get("finish_reason") or self.finish

    def completion_tokens(self) -> int:
        return len(self.parts)


def _constrain(body: dict[str, Any], json_schema: dict[str, Any] | None, grammar: str | None) -> None:
    if json_schema is not None and grammar is not None:
        raise ValueError("pass json_schema or grammar, not both")
    if json_schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema}}
    elif grammar is not None:
        body["grammar"] = grammar


def _wire(m: Message) -> dict[str, Any]:
    """A message as a chat template without tool support can render it: assistant tool
    calls as the JSON the emulation asks for, tool results as user messages."""
    if m.role == "tool":
        return {"role": "user", "content": f"Result of tool call {m.tool_call_id or ''}:\n{m.content}"}
    if m.tool_calls:
        calls = [{"name": c.name, "arguments": c.arguments if c.invalid_arguments is None else c.invalid_arguments}
                 for c in m.tool_calls]
        return {"role": "assistant", "content": json.dumps({"tool_calls": calls}, ensure_ascii=False)}
    return {"role": m.role, "content": m.content}


TOOLS_INSTRUCTIONS = """You can call these tools:
{tools}

Reply with one JSON object only. To call tools: {{"tool_calls": [{{"name": "TOOL", "arguments": {{...}}}}]}}.
When you have what you need, reply {{"answer": "your final answer"}}."""


def _with_tool_instructions(messages: Sequence[Message], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    described = []
    for tool in tools:
        function = tool.get("function", tool)
        schema = json.dumps(function.get("parameters") or {}, ensure_ascii=False)
        described.append(f"- {function['name']}: {function.get('description', '')} Arguments (JSON schema): {schema}")
    instructions = TOOLS_INSTRUCTIONS.format(tools="\n".join(described))
    wire = [_wire(m) for m in messages]
    # Many templates accept one system message only, at the start: merge into it.
    if wire and wire[0]["role"] == "system":
        wire[0] = {"role": "system", "content": f"{wire[0]['content']}\n\n{instructions}"}
    else:
        wire.insert(0, {"role": "system", "content": instructions})
    return wire


def parse_emulated_turn(text: str, turn: int) -> tuple[str, tuple[ToolCall, ...]]:
    """Read a constrained tool turn: ``(answer text, ())`` or ``("", calls)``.

    The grammar makes other shapes impossible unless generation was cut off (max_tokens);
    such a reply is returned as text with no calls, so the caller sees an unfinished answer.
    """
    try:
        data = json.loads(text)
    except ValueError:
        logger.warning("tool turn is not complete JSON (cut off?): %r", text[:200])
        return text, ()
    if isinstance(data, dict) and isinstance(data.get("tool_calls"), list):
        calls = []
        for i, raw in enumerate(data["tool_calls"]):
            arguments = raw.get("arguments") if isinstance(raw, dict) else None
            name = raw.get("name") if isinstance(raw, dict) else None
            if not isinstance(name, str):
                continue
            if isinstance(arguments, dict):
                calls.append(ToolCall(f"call_{turn}_{i}", name, arguments))
            else:
                calls.append(ToolCall(f"call_{turn}_{i}", name, {}, invalid_arguments=json.dumps(arguments)))
        return "", tuple(calls)
    if isinstance(data, dict) and isinstance(data.get("answer"), str):
        return data["answer"], ()
    return text, ()


__all__ = ["DEFAULT_CONTEXT", "DEFAULT_THREADS", "LocalLLM", "available_memory", "check_model_file",
           "parse_emulated_turn", "server_params"]
