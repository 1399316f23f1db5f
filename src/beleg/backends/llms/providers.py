"""What each LLM spec prefix stands for: a backend class and the settings it fills in.

:data:`beleg.backends.llms.LLMS` maps a prefix to one of these objects. Several prefixes
share a class: the local servers that speak OpenAI's format (Ollama, vLLM, llama.cpp,
LM Studio) differ only in their default base URL, so ``"ollama:llama3.1:8b"`` works
without further settings. Nothing here imports a backend; :meth:`Provider.backend_class`
does, when a spec of that provider is loaded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from beleg.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Provider:
    """A backend class and the defaults :func:`~beleg.backends.llms.load_llm` gives it.

    Attributes:
        backend: The class, or ``"package.module:Class"`` to import it on first use. Its constructor takes the model name and
            the keywords ``base_url, api_key, name, key_env, timeout_s, max_retries,
            max_tokens, temperature`` (see :class:`~beleg.backends.llms.openai_compat.OpenAICompatibleLLM`).
        default_base_url: Used when no base URL is configured; None: one must be given
            (unless the backend runs in process).
        key_env: The environment variable holding the API key; when set, a key is required.
        in_process: The model runs in this process: no base URL, and the local-only options
            (``threads``, ``context_size``) apply.
    """

    backend: str | type
    default_base_url: str | None = None
    key_env: str | None = None
    in_process: bool = False

    def backend_class(self) -> Any:
        if isinstance(self.backend, type):
            return self.backend
        module, _, attr = self.backend.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except AttributeError:
            raise ConfigError(f"LLM backend {self.backend!r} does not exist: {module} has no {attr!r}") from None

    @classmethod
    def of(cls, target: Any) -> Provider:
        """A registered target as a provider: a :class:`Provider` as it is, a backend class
        (what a plugin usually registers) with its optional class attributes
        ``default_base_url``, ``key_env`` and ``in_process``."""
        if isinstance(target, Provider):
            return target
        if not isinstance(target, type):
            raise ConfigError(f"an LLM provider must be registered as a Provider or a backend class, "
                              f"got {type(target).__name__} {target!r}")
        return cls(target, getattr(target, "default_base_url", None),
                   getattr(target, "key_env", None), bool(getattr(target, "in_process", False)))


_OPENAI_FORMAT = "beleg.backends.llms.openai_compat:OpenAICompatibleLLM"

OPENAI = Provider(_OPENAI_FORMAT, "https://api.openai.com/v1", "OPENAI_API_KEY")
OPENAI_COMPATIBLE = Provider(_OPENAI_FORMAT)
OLLAMA = Provider(_OPENAI_FORMAT, "http://localhost:11434/v1")
VLLM = Provider(_OPENAI_FORMAT, "http://localhost:8000/v1")
LLAMACPP = Provider(_OPENAI_FORMAT, "http://localhost:8080/v1")
LMSTUDIO = Provider(_OPENAI_FORMAT, "http://localhost:1234/v1")
ANTHROPIC = Provider("beleg.backends.llms.anthropic:AnthropicLLM", "https://api.anthropic.com", "ANTHROPIC_API_KEY")
LOCAL = Provider("beleg.backends.llms.local:LocalLLM", in_process=True)
