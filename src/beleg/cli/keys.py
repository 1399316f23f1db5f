"""``beleg keys add``: a new API key for ``beleg serve``, printed once; only its sha256 is stored."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError

#: beleg.server.auth.SCOPES, spelt out: building the parser (every beleg command) must not import
#: the server package; tests/test_startup_imports.py checks that the two agree.
SCOPES = ("read", "ingest", "admin")


def add_parser(sub: Any) -> None:
    """Register ``beleg keys add|list`` on the top-level subparsers."""
    p = sub.add_parser("keys", help="API keys of 'beleg serve' (stored as sha256 hashes in auth.toml)")
    keys_sub = p.add_subparsers(dest="keys_command", required=True, metavar="SUBCOMMAND")
    a = keys_sub.add_parser("add", help="create a key, print it once and append its hash to the auth file")
    a.add_argument("--auth", type=Path, required=True, metavar="auth.toml",
                   help="the auth file (created with mode 0600 if missing)")
    a.add_argument("--user", required=True, help="user id the key acts as (matched against documents' acl)")
    a.add_argument("--tenant", help="tenant of the key; without one it sees only documents without a tenant")
    a.add_argument("--group", action="append", default=[], help="group or role (repeatable)")
    a.add_argument("--scope", action="append", choices=SCOPES, default=None,
                   help="read, ingest or admin (repeatable; default read; admin may do everything)")
    a.add_argument("--json", action="store_true", help="print {key, sha256, user, tenant, groups, scopes}")
    ls = keys_sub.add_parser("list", help="the keys in an auth file (hash prefix, user, tenant, groups, scopes)")
    ls.add_argument("--auth", type=Path, required=True, metavar="auth.toml")
    ls.add_argument("--json", action="store_true")


def cmd_keys(args: argparse.Namespace) -> int:
    from beleg.server.auth import load_auth

    if args.keys_command == "list":
        config = load_auth(args.auth)
        rows: list[dict[str, Any]] = [{"sha256": k.sha256[:12], "user": k.user, "tenant": k.tenant, "groups": list(k.groups),
                 "scopes": sorted(k.scopes)} for k in config.keys]
        if args.json:
            print(json.dumps(rows, indent=2))
        for row in rows if not args.json else []:
            print(f"{row['sha256']}…  user={row['user']} tenant={row['tenant'] or '-'} "
                  f"groups={','.join(row['groups'] or []) or '-'} scopes={','.join(row['scopes'] or [])}")
        return 0
    return _add(args)


def _add(args: argparse.Namespace) -> int:
    from beleg.server.auth import hash_key, load_auth, new_key

    if args.auth.exists():
        load_auth(args.auth)  # refuse to append to a file that is already broken
    key = new_key()
    scopes = sorted(set(args.scope or ["read"]))
    entry = {"sha256": hash_key(key), "user": args.user, "tenant": args.tenant, "groups": args.group,
             "scopes": scopes}
    block = "\n[[keys]]\n" + "".join(f"{name} = {_toml(value)}\n" for name, value in entry.items() if value is not None)
    _append_private(args.auth, block)
    load_auth(args.auth)  # what was written reads back
    if args.json:
        print(json.dumps({"key": key, **entry}, indent=2))
    else:
        print(key)
        print(f"added a key for user {args.user!r} (tenant {args.tenant or '-'}, scopes {', '.join(scopes)}) to "
              f"{args.auth}; the key is shown only now, store it safely", file=sys.stderr)
    return 0


def _toml(value: Any) -> str:
    """A TOML value: JSON strings and arrays of strings are valid TOML basic strings and arrays."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
    raise ConfigError(f"cannot write {value!r} to the auth file")


def _append_private(path: Path, text: str) -> None:
    """Append to ``path``, creating it readable by its owner only (0600)."""
    if path.parent and not path.parent.exists():
        raise ConfigError(f"folder {path.parent} does not exist; create it or pass another --auth path")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)
