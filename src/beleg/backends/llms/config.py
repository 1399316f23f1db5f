"""Which LLM to use, gathered from CLI options, environment variables and ``beleg.toml``.

Beleg works offline by default, so "no LLM configured" is a normal state and
:func:`resolve_llm_config` returns ``None`` for it rather than raising. Values are merged
per key with the precedence CLI > environment > file, so a file can hold the team's
defaults and one shell can still point at another server.

Keys belong in the environment, not in files that get committed: the file names the
variable that holds the key (``api_key_env``). A literal ``api_key`` in the file is read
too, for throwaway local setups, but is logged as a warning.

Example ``beleg.toml``::

    [llm]
    spec = "ollama:llama3.1:8b"
    base_url = "http://gpu-box:11434/v1"
    timeout_s = 120
"""

from __future__ import annotations

import difflib
import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError

logger = logging.getLogger(__name__)

#: Environment variable → LLMConfig field.
ENV_VARS: dict[str, str] = {
    "BELEG_LLM": "spec",
    "BELEG_LLM_BASE_URL": "base_url",
    "BELEG_LLM_API_KEY": "api_key",
    "BELEG_LLM_TIMEOUT": "timeout_s",
    "BELEG_LLM_MAX_RETRIES": "max_retries",
    "BELEG_LLM_THREADS": "threads",
    "BELEG_LLM_CONTEXT": "context_size",
}
#: Provider prefix → the provider's own key variable, used when no Beleg key is set.
#: Only the providers' own hosts get their key: ``openai-compatible`` may point at a third
#: party, which must never receive an OpenAI key by accident.
PROVIDER_KEY_ENV: dict[str, str] = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_FILE_KEYS = ("spec", "provider", "model", "base_url", "api_key", "api_key_env", "timeout_s", "max_retries",
              "max_tokens", "temperature", "threads", "context_size")
_CLI_KEYS = ("spec", "base_url", "api_key", "timeout_s", "max_retries", "max_tokens", "temperature", "threads",
             "context_size")


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Everything needed to build an LLM backend with :func:`beleg.backends.llms.load_llm`.

    ``spec`` is ``provider:model`` (``"openai:gpt-4.1-mini"``, ``"ollama:llama3.1:8b"``).
    ``base_url`` ``None`` means the provider's default. ``max_tokens`` and ``temperature``
    are the defaults for calls that do not pass their own.
    """

    spec: str
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 2
    max_tokens: int = 1024
    temperature: float = 0.0
    #: Local models only (``local:PATH.gguf``): CPU threads and context window in tokens.
    threads: int | None = None
    context_size: int | None = None

    def __post_init__(self) -> None:
        # Code builds configs directly too (and load_llm's overrides); a negative timeout
        # should fail here, by name, not deep inside httpx. The spec is load_llm's to check.
        for key in ("base_url", "timeout_s", "max_retries", "max_tokens", "temperature", "threads", "context_size"):
            value = getattr(self, key)
            if value is not None:
                _convert(key, value, f"LLMConfig.{key}")

    def __repr__(self) -> str:
        # Configs end up in logs and tracebacks; the key must not.
        key = None if self.api_key is None else "***"
        return (f"LLMConfig(spec={self.spec!r}, base_url={self.base_url!r}, api_key={key!r}, "
                f"timeout_s={self.timeout_s!r}, max_retries={self.max_retries!r}, "
                f"max_tokens={self.max_tokens!r}, temperature={self.temperature!r}, threads={self.threads!r}, "
                f"context_size={self.context_size!r})")


def resolve_llm_config(cli: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
                       config_file: str | Path | None = None) -> LLMConfig | None:
    """Merge the LLM settings from all sources; ``None`` when no ``spec`` is set anywhere.

    Args:
        cli: Options given on the command line, keyed by :class:`LLMConfig` field name;
            ``None`` values count as "not given" (what argparse leaves for unset options).
        env: Environment to read; defaults to ``os.environ``.
        config_file: TOML file with an ``[llm]`` table. Defaults to ``$BELEG_CONFIG``, else
            ``./beleg.toml`` if it exists.

    Returns:
        The merged config. The key is, in order: CLI ``api_key``, ``BELEG_LLM_API_KEY``,
        the variable the file's ``api_key_env`` names, the file's ``api_key``, then
        ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` for ``openai:`` / ``anthropic:`` specs.

    Raises:
        ConfigError: A value is malformed; the message names its source and key.
    """
    env = os.environ if env is None else env
    layers = [_from_file(config_file, env), _from_env(env), _from_cli(cli or {})]  # low → high
    merged: dict[str, tuple[Any, str]] = {}
    for layer in layers:
        merged.update(layer)
    if "spec" not in merged:
        logger.debug("no LLM configured; LLM features stay off")
        return None
    spec, spec_source = merged["spec"]
    _check_spec(spec, spec_source)
    if "api_key" not in merged:
        provider_env = PROVIDER_KEY_ENV.get(spec.partition(":")[0])
        if provider_env and env.get(provider_env):
            merged["api_key"] = (env[provider_env], f"environment variable {provider_env}")
    values = {key: value for key, (value, _) in merged.items()}
    logger.debug("LLM config: %s", ", ".join(f"{key} from {source}" for key, (_, source) in merged.items()))
    return LLMConfig(**values)


def _from_cli(cli: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for key, value in cli.items():
        if value is None:
            continue
        source = f"CLI option {key}"
        if key not in _CLI_KEYS:
            raise ConfigError(f"unknown LLM option {key!r}; expected one of: {', '.join(_CLI_KEYS)}")
        out[key] = (_convert(key, value, source), source)
    return out


def _from_env(env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    out: dict[str, tuple[Any, str]] = {}
    for var, key in ENV_VARS.items():
        value = env.get(var)
        if value is None or value.strip() == "":
            continue
        source = f"environment variable {var}"
        out[key] = (_convert(key, value.strip(), source), source)
    return out


def _from_file(config_file: str | Path | None, env: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    path = _config_path(config_file, env)
    if path is None:
        return {}
    try:
        with path.open("rb") as fh:
            document = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
    table = document.get("llm")
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [llm] must be a table, got {type(table).__name__}")
    table = _spec_from_provider(table, path)
    out: dict[str, tuple[Any, str]] = {}
    for key, value in table.items():
        source = f"{path} [llm].{key}"
        if key not in _FILE_KEYS:
            close = difflib.get_close_matches(key, _FILE_KEYS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"{path}: unknown key [llm].{key}; expected one of: {', '.join(_FILE_KEYS)}.{hint}")
        if key == "api_key_env":
            continue
        out[key] = (_convert(key, value, source), source)
    if "api_key" in out:
        logger.warning("%s holds a literal API key; prefer api_key_env = \"NAME_OF_ENV_VAR\"", path)
    key_env = table.get("api_key_env")
    if key_env is not None:
        if not isinstance(key_env, str) or not key_env:
            raise ConfigError(f"{path} [llm].api_key_env: expected the name of an environment variable, "
                              f"got {key_env!r}")
        if env.get(key_env):
            out["api_key"] = (env[key_env], f"environment variable {key_env} (named by {path})")
        elif "api_key" not in out:
            logger.warning("%s [llm].api_key_env names %s, which is not set", path, key_env)
    return out


def _spec_from_provider(table: dict[str, Any], path: Path) -> dict[str, Any]:
    """``provider = "local"`` with ``model = "m.gguf"`` is another way to write ``spec = "local:m.gguf"``."""
    if "provider" not in table and "model" not in table:
        return table
    provider, model = table.get("provider"), table.get("model")
    if "spec" in table or not isinstance(provider, str) or not isinstance(model, str) or not provider or not model:
        raise ConfigError(f"{path}: [llm] needs either spec = \"provider:model\" or both provider and model "
                          f"as strings, got provider={provider!r}, model={model!r}, spec={table.get('spec')!r}")
    rest = {k: v for k, v in table.items() if k not in ("provider", "model")}
    return {**rest, "spec": f"{provider}:{model}"}


def config_path(config_file: str | Path | None = None, env: Mapping[str, str] | None = None) -> Path | None:
    """The config file in effect: ``config_file``, else ``$BELEG_CONFIG``, else ``./beleg.toml`` if present."""
    return _config_path(config_file, os.environ if env is None else env)


def read_config_table(name: str, config_file: str | Path | None = None) -> dict[str, Any]:
    """One table (``[governance]``, ...) of the config file in effect; empty when absent."""
    path = config_path(config_file)
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return table


def _config_path(config_file: str | Path | None, env: Mapping[str, str]) -> Path | None:
    if config_file is not None:
        path, origin = Path(config_file), "given config file"
    elif env.get("BELEG_CONFIG"):
        path, origin = Path(env["BELEG_CONFIG"]), "BELEG_CONFIG"
    else:
        default = Path("beleg.toml")
        return default if default.is_file() else None
    if not path.is_file():
        raise ConfigError(f"{origin} {str(path)!r} does not exist or is not a file")
    return path


def _convert(key: str, value: Any, source: str) -> Any:
    """Check and convert one value; strings (environment, CLI) are parsed."""
    checks: dict[str, tuple[Callable[[Any], Any], str]] = {
        "spec": (_text, "'provider:model', e.g. 'openai:gpt-4.1-mini'"),
        "base_url": (_url, "an http(s) URL such as 'http://localhost:11434/v1'"),
        "api_key": (_text, "a non-empty string"),
        "timeout_s": (_positive_float, "a number of seconds > 0"),
        "max_retries": (_non_negative_int, "a whole number >= 0"),
        "max_tokens": (_positive_int, "a whole number >= 1"),
        "temperature": (_temperature, "a number between 0 and 2"),
        "threads": (_positive_int, "a whole number of CPU threads >= 1"),
        "context_size": (_positive_int, "a whole number of tokens >= 1"),
    }
    convert, expected = checks[key]
    try:
        return convert(value)
    except (TypeError, ValueError) as exc:
        shown = "***" if key == "api_key" else repr(value)
        raise ConfigError(f"{source}: expected {expected}, got {shown}") from exc


def _check_spec(spec: str, source: str) -> None:
    # Imported here: the package __init__ imports this module.
    from beleg.backends.llms import parse_spec

    try:
        parse_spec(spec)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(value)
    return value.strip()


def _url(value: Any) -> str:
    text = _text(value)
    if not text.startswith(("http://", "https://")):
        raise ValueError(value)
    return text


def _number(value: Any) -> float:
    if isinstance(value, bool):  # TOML true is not a timeout
        raise TypeError(value)
    return float(value)


def _positive_float(value: Any) -> float:
    number = _number(value)
    if not number > 0:
        raise ValueError(value)
    return number


def _temperature(value: Any) -> float:
    number = _number(value)
    if not 0 <= number <= 2:
        raise ValueError(value)
    return number


def _whole(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise TypeError(value)
    return int(value)


def _non_negative_int(value: Any) -> int:
    number = _whole(value)
    if number < 0:
        raise ValueError(value)
    return number


def _positive_int(value: Any) -> int:
    number = _whole(value)
    if number < 1:
        raise ValueError(value)
    return number


__all__ = ["ENV_VARS", "PROVIDER_KEY_ENV", "LLMConfig", "resolve_llm_config"]
