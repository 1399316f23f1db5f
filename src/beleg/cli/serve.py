"""``beleg serve``: the HTTP API and the web page over one index (see docs/server.md)."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError, missing_dependency

#: The environment variable that hands the settings to each worker process (--workers N).
SETTINGS_ENV = "BELEG_SERVE_SETTINGS"


def add_parser(sub: Any) -> None:
    """Register ``beleg serve`` on the top-level subparsers."""
    from beleg.cli.main import _index_arg, _llm_args, _verifier_args

    p = sub.add_parser("serve", help="run the authenticated HTTP API and the web page over an index")
    _index_arg(p)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --auth)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument("--auth", type=Path, metavar="auth.toml",
                   help="API keys and JWT settings; without it only loopback is allowed and every request "
                        "is anonymous (public documents only, read scope)")
    p.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (each loads the model)")
    p.add_argument("--read-threads", type=int, default=2, metavar="N",
                   help="threads serving reads per process, each with its own connection (default 2)")
    g = p.add_argument_group("limits")
    g.add_argument("--max-body-mb", type=float, default=16.0, help="largest request body, uploads included (413)")
    g.add_argument("--rate", type=float, default=20.0, metavar="PER_SECOND", help="requests per second per key (429)")
    g.add_argument("--burst", type=int, default=40, help="burst allowed above --rate per key")
    g.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="allow browser calls from this origin (repeatable; default: CORS off)")
    g.add_argument("--audit-log", type=Path, metavar="FILE",
                   help="append one JSON line per request: who, what, which documents (default off)")
    g.add_argument("--metrics-public", action="store_true",
                   help="serve /metrics without credentials (default: an operator's key, admin scope and no "
                        "tenant, since the counters show every tenant's activity)")
    g.add_argument("--upload-dir", type=Path, metavar="DIR", help="where uploaded files are kept "
                                                                   "(default: INDEX-uploads beside the index)")
    _llm_args(p, "LLM for answers and strategies (without one, answers are extractive, offline)")
    _verifier_args(p)


def check_bind(host: str, auth: Path | None) -> None:
    """Refuse to serve anything but loopback without authentication."""
    if auth is not None:
        return
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ConfigError(f"--host {host} is not a loopback address, and without --auth every caller would be "
                          "anonymous; pass --auth auth.toml (create keys with 'beleg keys add') or bind 127.0.0.1")


def check_port(host: str, port: int) -> None:
    """Refuse, in one line, a port this process cannot listen on, before "serving" is printed
    (uvicorn would only log its own error after it). Bound the way uvicorn binds (SO_REUSEADDR),
    so a port another program merely left in TIME_WAIT is not refused."""
    import errno
    import socket

    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a port number; give one in 1-65535, e.g. 8080")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host} cannot be resolved ({exc.strerror}); give an address such as 127.0.0.1") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is in use (another server, perhaps another "
                                  "'beleg serve', listens there); stop it or pass another --port") from None
            raise ConfigError(f"cannot listen on {host} port {port}: {exc.strerror or exc}; "
                              "pass another --host or --port") from None


def cmd_serve(args: argparse.Namespace) -> int:
    from beleg.kb import default_index_dir

    check_bind(args.host, args.auth)
    check_port(args.host, args.port)
    if args.workers < 1 or args.read_threads < 1:
        raise ConfigError(f"--workers and --read-threads must be at least 1, got {args.workers} and {args.read_threads}")
    try:
        import uvicorn
    except ImportError as exc:
        raise missing_dependency("uvicorn", "server", exc) from exc
    settings = {"index": str(args.index or default_index_dir()), "auth": str(args.auth) if args.auth else None,
                "max_body_bytes": int(args.max_body_mb * 2**20), "rate": args.rate, "burst": args.burst,
                "cors": args.cors_origin, "read_threads": args.read_threads, "audit_log": str(args.audit_log) if args.audit_log else None,
                "upload_dir": str(args.upload_dir) if args.upload_dir else None, "metrics_public": args.metrics_public,
                "llm": {"spec": args.llm, "base_url": args.llm_base_url, "timeout_s": args.llm_timeout,
                        "config": str(args.config) if args.config else None},
                "verifier": {"spec": args.verifier, "base_url": args.verifier_base_url}}
    from beleg.server.worker import shown_location

    print(f"beleg: serving {shown_location(settings['index'])} on http://{args.host}:{args.port} "
          f"({'keys from ' + str(args.auth) if args.auth else 'no --auth: anonymous, loopback only'})", file=sys.stderr)
    if args.workers == 1:
        uvicorn.run(app_from_settings(settings), host=args.host, port=args.port, log_level="warning")
    else:
        os.environ[SETTINGS_ENV] = json.dumps(settings)
        uvicorn.run("beleg.cli.serve:app_from_environment", factory=True, host=args.host, port=args.port,
                    workers=args.workers, log_level="warning")
    return 0


def app_from_environment() -> Any:
    """The app of one worker process (uvicorn ``--workers``), from :data:`SETTINGS_ENV`."""
    return app_from_settings(json.loads(os.environ[SETTINGS_ENV]))


def app_from_settings(settings: dict[str, Any]) -> Any:
    from beleg.answer.answerer import AnswerOptions
    from beleg.answer.evidence import GovernancePolicy
    from beleg.backends.llms.config import read_config_table
    from beleg.cli.main import _llm_from
    from beleg.index.postgres.config import is_postgres_url
    from beleg.kb import KnowledgeBase
    from beleg.server import ServerSettings, create_app
    from beleg.server.auth import AuthConfig, load_auth
    from beleg.service import Service

    auth = load_auth(settings["auth"]) if settings["auth"] else AuthConfig(anonymous_scopes=frozenset({"read"}))
    llm_cfg = settings["llm"]
    config_file = Path(llm_cfg["config"]) if llm_cfg["config"] else None
    llm = _llm_from(llm_cfg["spec"], llm_cfg["base_url"], llm_cfg["timeout_s"], config_file)
    policy = GovernancePolicy.from_json(read_config_table("governance", config_file))
    checker = settings.get("verifier") or {}
    verifier = _llm_from(checker["spec"], checker.get("base_url")) if checker.get("spec") else None
    server_settings = ServerSettings(
        max_body_bytes=settings["max_body_bytes"], rate_per_second=settings["rate"], burst=settings["burst"],
        cors_origins=tuple(settings["cors"]), audit_log=Path(settings["audit_log"]) if settings["audit_log"] else None,
        upload_dir=Path(settings["upload_dir"]) if settings["upload_dir"] else None,
        answer_options=AnswerOptions(policy=policy, verifier=verifier), read_threads=settings["read_threads"],
        metrics_public=bool(settings.get("metrics_public")))
    index = settings["index"]  # a folder, or a postgresql:// URL (KnowledgeBase opens that backend)
    kb = KnowledgeBase(index if is_postgres_url(index) else Path(index), create=False)
    try:
        return create_app(Service(kb, llm=llm), auth, server_settings)
    finally:
        kb.close()  # the app reopened it on its own threads
