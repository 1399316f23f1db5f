"""LLM backends, looked up by ``provider:model`` spec strings.

Every provider is one row of :data:`LLMS`, a :class:`~beleg.registry.Registry` whose rows
name a :class:`~beleg.backends.llms.providers.Provider` (backend class, default base URL,
key variable); the backend is imported only when asked for. Local servers that speak the
OpenAI format get their own prefix purely for the default base URL, so
``"ollama:llama3.1:8b"`` works without further settings. Another package adds a provider
through an entry point in the ``beleg.llms`` group, or with ``LLMS.register``; the target
is a ``Provider`` or a backend class (whose optional class attributes ``default_base_url``,
``key_env`` and ``in_process`` say the same)::

    [project.entry-points."beleg.llms"]
    mycloud = "my_package.llm:MyCloudLLM"

Example:
    >>> llm = load_llm("ollama:llama3.1:8b")  # doctest: +SKIP
    >>> llm.complete([Message("user", "Say hi")]).text  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from beleg.backends.llms.base import LLM, Completion, Message, Usage
from beleg.backends.llms.config import LLMConfig, resolve_llm_config
from beleg.backends.llms.providers import Provider
from beleg.errors import ConfigError
from beleg.registry import Registry

_PROVIDERS = "beleg.backends.llms.providers"

#: Spec prefix → the :class:`Provider` it stands for.
LLMS = Registry("llms", {
    "openai": (_PROVIDERS, "OPENAI", "OpenAI's hosted models"),
    "openai-compatible": (_PROVIDERS, "OPENAI_COMPATIBLE",
                          "any server with an OpenAI-style /chat/completions (base_url required)"),
    "ollama": (_PROVIDERS, "OLLAMA", "a local Ollama server"),
    "vllm": (_PROVIDERS, "VLLM", "a vLLM OpenAI-compatible server"),
    "llamacpp": (_PROVIDERS, "LLAMACPP", "llama.cpp's llama-server"),
    "lmstudio": (_PROVIDERS, "LMSTUDIO", "LM Studio's local server"),
    "anthropic": (_PROVIDERS, "ANTHROPIC", "Anthropic's Claude models (Messages API)"),
    "local": (_PROVIDERS, "LOCAL",
              "a GGUF model file run in-process by llama.cpp (local:PATH.gguf; pip install \"beleg[local]\")"),
}, noun="LLM provider")
#: LLMConfig fields that only in-process providers take.
LOCAL_OPTIONS = ("threads", "context_size")


def provider(prefix: str) -> Provider:
    """The :class:`Provider` registered for ``prefix`` (imports no backend)."""
    return Provider.of(LLMS.load(prefix))


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``"ollama:llama3.1:8b"`` into ``("ollama", "llama3.1:8b")``.

    Raises:
        ConfigError: No such provider (with a "Did you mean") or no model named.
    """
    prefix, sep, model = spec.strip().partition(":")
    if prefix not in LLMS:
        form = "" if sep else " (specs look like 'provider:model')"
        raise ConfigError(f"unknown LLM provider {prefix!r} in {spec!r}{form}; "
                          f"available: {', '.join(LLMS)}.{LLMS.hint(prefix)}")
    if not model.strip():
        raise ConfigError(f"LLM spec {spec!r} names no model; expected '{prefix}:MODEL'")
    return prefix, model.strip()


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
    prefix, model = parse_spec(config.spec)
    chosen = provider(prefix)
    key_env = chosen.key_env
    base_url = config.base_url or chosen.default_base_url
    local = {key: getattr(config, key) for key in LOCAL_OPTIONS if getattr(config, key) is not None}
    if chosen.in_process:
        extra = {**local, **extra}
    elif local:
        raise ConfigError(f"{', '.join(local)} apply only to local models (local:PATH.gguf), not to {config.spec!r}")
    if base_url is None and not chosen.in_process:
        raise ConfigError(f"{config.spec!r} needs a base URL: set BELEG_LLM_BASE_URL, [llm].base_url in "
                          "beleg.toml or pass base_url=, e.g. 'http://localhost:8000/v1'")
    api_key = (config.api_key or (os.environ.get(key_env, "") if key_env else "")).strip() or None
    if api_key and any(c.isspace() or not c.isprintable() for c in api_key):
        raise ConfigError(f"the API key for {config.spec!r} contains whitespace or control characters; "
                          "check how it was pasted into the environment or config")
    if key_env and not api_key:
        raise ConfigError(f"{config.spec!r} needs an API key: set {key_env} (or BELEG_LLM_API_KEY)")
    backend = chosen.backend_class()
    llm: LLM = backend(model, base_url=base_url, api_key=api_key, name=config.spec.strip(), key_env=key_env,
                       timeout_s=config.timeout_s, max_retries=config.max_retries, max_tokens=config.max_tokens,
                       temperature=config.temperature, **extra)
    return llm


__all__ = ["LLM", "LLMS", "Completion", "LLMConfig", "Message", "Provider", "Usage", "load_llm", "parse_spec",
           "provider", "resolve_llm_config"]
