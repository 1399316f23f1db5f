"""``beleg llm serve PATH.gguf``: a local model as an OpenAI-compatible endpoint for other tools.

The same llama.cpp server that ``--llm local:`` runs in-process, bound to 127.0.0.1 only,
with an API key that every request must send (``Authorization: Bearer KEY``) and CORS off
(no browser page can read its answers). Other Beleg processes use it with
``--llm llamacpp:MODEL --llm-base-url http://127.0.0.1:PORT/v1`` and the key in
``BELEG_LLM_API_KEY``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, ModelError, missing_dependency

DEFAULT_PORT = 8088
LOOPBACK = "127.0.0.1"


def add_parser(sub: Any) -> None:
    """Register ``beleg llm serve`` on the top-level subparsers."""
    p = sub.add_parser("llm", help="local LLM tools: serve a GGUF model as an OpenAI-compatible endpoint")
    llm_sub = p.add_subparsers(dest="llm_command", required=True, metavar="SUBCOMMAND")
    s = llm_sub.add_parser("serve", help="serve a GGUF model on 127.0.0.1 with an API key (OpenAI format)")
    s.add_argument("model", metavar="PATH.gguf", help="the GGUF model file")
    s.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    s.add_argument("--key-file", type=Path, metavar="FILE",
                   help="file holding the API key; created with a new random key (mode 0600) if it does not exist "
                        "(default: a new key for this run, printed once)")
    s.add_argument("--threads", type=int, default=None, metavar="N", help="CPU threads (default 1)")
    s.add_argument("--context-size", type=int, default=None, metavar="TOKENS", help="context window (default 4096)")


def cmd_llm(args: argparse.Namespace) -> int:
    if args.llm_command != "serve":  # argparse allows only the subcommands registered above
        raise ConfigError(f"unknown llm subcommand {args.llm_command!r}; expected: serve")
    key, where = read_or_create_key(args.key_file)
    server = start_server(args.model, port=args.port, api_key=key, threads=args.threads,
                          context_size=args.context_size)
    print(f"serving {args.model} at http://{LOOPBACK}:{args.port}/v1 (OpenAI chat completions; "
          f"send 'Authorization: Bearer <key>'; key {where}); Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    finally:
        del server
    return 0


def read_or_create_key(key_file: Path | None) -> tuple[str, str]:
    """The API key and a phrase saying where it is; a missing key file is created (0600)."""
    if key_file is None:
        key = secrets.token_urlsafe(32)
        return key, f"for this run: {key}"
    if key_file.exists():
        key = key_file.read_text(encoding="utf-8").strip()
        if len(key) < 16 or any(c.isspace() for c in key):
            raise ConfigError(f"key file {str(key_file)!r} holds no usable key (expected one line of at least 16 "
                              "characters without spaces); delete it to have a new one written")
        return key, f"in {key_file}"
    key = secrets.token_urlsafe(32)
    fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(key + "\n")
    return key, f"written to {key_file}"


def start_server(model: str, *, port: int, api_key: str, threads: int | None = None,
                 context_size: int | None = None) -> Any:
    """Load ``model`` and listen on 127.0.0.1:``port``; returns the running server (it stops
    when the object is garbage-collected).

    Raises:
        ModelError: The model file is unusable (see :func:`check_model_file`) or does not load.
        ConfigError: The port is out of range.
    """
    from beleg.backends.llms.local import DEFAULT_CONTEXT, DEFAULT_THREADS, check_model_file, server_params

    if not 1 <= port <= 65535:
        raise ConfigError(f"--port must be between 1 and 65535, got {port}")
    if not api_key:
        raise ConfigError("beleg llm serve needs an API key; none was given")
    check_model_file(model)
    try:
        import xllamacpp
    except ImportError as exc:
        raise missing_dependency("xllamacpp", "local") from exc
    params = server_params(xllamacpp, model, threads=threads or DEFAULT_THREADS,
                           context_size=context_size or DEFAULT_CONTEXT, hostname=LOOPBACK, api_key=api_key,
                           port=port)
    try:
        return xllamacpp.Server(params)
    except RuntimeError as exc:
        raise ModelError(f"llama.cpp could not serve {model!r} on {LOOPBACK}:{port}: {exc}; "
                         "is the port free and the file a complete GGUF model?") from exc


__all__ = ["add_parser", "cmd_llm", "read_or_create_key", "start_server"]
