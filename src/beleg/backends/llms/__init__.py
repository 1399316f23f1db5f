"""LLM backends, looked up by ``provider:model`` spec strings.

Every provider is one row of :data:`LLMS`; the class is imported only when asked for.
Local servers that speak the OpenAI format get their own prefix purely for the default
base URL, so ``"ollama:llama3.1:8b"`` works without further settings.

Example:
    >>> llm = load_llm("ollama:llama3.1:8b")  # doctest: +SKIP
    >>> llm.complete([Message("user", "Say hi")]).text  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
from typing import Any

from beleg.backends.llms.base import LLM, Completion, Message, Usage
from beleg.backends.llms.config import LLMConfig, resolve_llm_config
from beleg.errors import ConfigError

_OPENAI = ("beleg.backends.llms.openai_compat", "OpenAICompatibleLLM")

#: prefix → (module, class, default base URL, env var of the required key or None, description)
LLMS: dict[str, tuple[str, str, str | None, str | None, str]] = {
    "openai": (*_OPENAI, "https://api.openai.com/v1", "OPENAI_API_KEY", "OpenAI's hosted models"),
    "openai-compatible": (*_OPENAI, None, None, "any server with an OpenAI-style /chat/completions (base_url required)"),
    "ollama": (*_OPENAI, "http://localhost:11434/v1", None, "a local Ollama server"),
    "vllm": (*_OPENAI, "http://localhost:8000/v1", None, "a vLLM OpenAI-compatible server"),
    "llamacpp": (*_OPENAI, "http://localhost:8080/v1", None, "llama.cpp's llama-server"),
    "lmstudio": (*_OPENAI, "http://localhost:1234/v1", None, "LM Studio's local server"),
    "anthropic": ("beleg.backends.llms.anthropic", "AnthropicLLM", "https://api.anthropic.com", "ANTHROPIC_API_KEY",
                  "Anthropic's Claude models (Messages API)"),
    "local": ("beleg.backends.llms.local", "LocalLLM", None, None,
              "a GGUF model file run in-process by llama.cpp (local:PATH.gguf; pip install \"beleg[local]\")"),
}
#: Providers that run in this process: no base URL, and the local-only options apply.
IN_PROCESS = frozenset({"local"})
#: LLMConfig fields that only in-process providers take.
LOCAL_OPTIONS = ("threads", "context_size")


def register_llm(prefix: str, module: str, cls: str, default_base_url: str | None, key_env: str | None,
                 description: str) -> None:
    """Make ``prefix:MODEL`` specs load ``module.cls`` (plugins use this too)."""
    LLMS[prefix] = (module, cls, default_base_url, key_env, description)


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"ollama:llama3.1:8b"`` into ``("ollama", "llama3.1:8b")``.

    Raises:
        ConfigError: No such provider (with a "Did you mean") or no model named.
    """
    provider, sep, model = spec.strip().partition(":")
    if provider not in LLMS:
        close = difflib.get_close_matches(provider, LLMS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        form = "" if sep else " (specs look like 'provider:model')"
        raise ConfigError(f"unknown LLM provider {provider!r} in {spec!r}{form}; "
                          f"available: {', '.join(LLMS)}.{hint}")
    if not model.strip():
        raise ConfigError(f"LLM spec {spec!r} names no model; expected '{provider}:MODEL'")
    return provider, model.strip()


def load_llm(config_or_spec: LLMConfig | str, **overrides: Any) -> LLM:
    """Build the backend a config or spec string names, without touching the network.

    Args:
        config_or_spec: An :class:`LLMConfig` (see :func:`resolve_llm_config`) or a spec.
        **overrides: :class:`LLMConfig` fields to replace (``base_url``, ``api_key``,
            ``timeout_s`` …); other keywords go to the backend class (``backoff_base_s``).

    Without an explicit key, the provider's own variable (``OPENAI_API_KEY``,
    ``ANTHROPIC_API_KEY``) is read from the environment.

    Raises:
        ConfigError: Unknown provider, no model, no base URL for ``openai-compatible``, or
            a provider that needs a key and has none.
    """
    config = LLMConfig(spec=config_or_spec) if isinstance(config_or_spec, str) else config_or_spec
    fields = {f.name for f in dataclasses.fields(LLMConfig)}
    config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if k in fields})
    extra = {k: v for k, v in overrides.items() if k not in fields}
    provider, model = parse_spec(config.spec)
    module, cls, default_url, key_env, _ = LLMS[provider]
    base_url = config.base_url or default_url
    local = {key: getattr(config, key) for key in LOCAL_OPTIONS if getattr(config, key) is not None}
    if provider in IN_PROCESS:
        extra = {**local, **extra}
    elif local:
        raise ConfigError(f"{', '.join(local)} apply only to local models (local:PATH.gguf), not to {config.spec!r}")
    if base_url is None and provider not in IN_PROCESS:
        raise ConfigError(f"{config.spec!r} needs a base URL: set BELEG_LLM_BASE_URL, [llm].base_url in "
                          "beleg.toml or pass base_url=, e.g. 'http://localhost:8000/v1'")
    api_key = (config.api_key or (os.environ.get(key_env, "") if key_env else "")).strip() or None
    if api_key and any(c.isspace() or not c.isprintable() for c in api_key):
        raise ConfigError(f"the API key for {config.spec!r} contains whitespace or control characters; "
                          "check how it was pasted into the environment or config")
    if key_env and not api_key:
        raise ConfigError(f"{config.spec!r} needs an API key: set {key_env} (or BELEG_LLM_API_KEY)")
    backend = getattr(importlib.import_module(module), cls)
    llm: LLM = backend(model, base_url=base_url, api_key=api_key, name=config.spec.strip(), key_env=key_env,
                       timeout_s=config.timeout_s, max_retries=config.max_retries, max_tokens=config.max_tokens,
                       temperature=config.temperature, **extra)
    return llm


__all__ = ["LLM", "LLMS", "Completion", "LLMConfig", "Message", "Usage", "load_llm", "parse_spec",
           "register_llm", "resolve_llm_config"]
