"""Metadata for every document: declared values, ingest rules and explicit defaults.

Precedence, lowest first: defaults < rules (in file order; ``--meta`` is a rule that
matches everything) < what the file itself declares (front matter, ``<meta>``, PDF/DOCX
properties). Unknown ``status`` and ``authority`` stay ``"unknown"``: a document is never
silently promoted to "current".
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from beleg.errors import ConfigError
from beleg.yamlfile import read_yaml
from beleg.index.analyzer import SUPPORTED_LANGUAGES, detect_language

#: Keys with a meaning to Beleg. Other keys are kept and filterable as they are.
KNOWN_KEYS = ("title", "product", "version", "status", "authority", "language", "date", "tenant", "acl")
STATUSES = ("current", "historical", "draft", "unknown")
LIST_KEYS = ("acl", "tags")


@dataclass(frozen=True, slots=True)
class MetadataRule:
    """Attach ``metadata`` to every file whose path (as ingested) matches ``match`` (a glob)."""

    match: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def applies_to(self, source: str) -> bool:
        posix = source.replace("\\", "/")
        return fnmatch.fnmatch(posix, self.match) or fnmatch.fnmatch(Path(posix).name, self.match)


def load_rules(path: str | Path) -> list[MetadataRule]:
    """Read a YAML rules file: ``rules: [{match: "manuals/*.pdf", metadata: {...}}, ...]``."""
    p = Path(path)
    data = read_yaml(p, "rules file")
    rules = (data or {}).get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        raise ConfigError(f"rules file {p} must contain 'rules:' with a list of {{match, metadata}} entries")
    out = []
    for i, rule in enumerate(rules, 1):
        if not isinstance(rule, dict) or "match" not in rule or not isinstance(rule.get("metadata", {}), dict):
            raise ConfigError(f"rules file {p}, rule {i}: expected {{match: GLOB, metadata: {{key: value}}}}, got {rule!r}")
        out.append(MetadataRule(str(rule["match"]), normalize(rule.get("metadata") or {})))
    return out


def parse_assignments(pairs: list[str]) -> dict[str, Any]:
    """``["product=ferrolink", "acl=a,b"]`` → ``{"product": "ferrolink", "acl": ["a", "b"]}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {pair!r}")
        out[key.strip().lower()] = value.strip()
    return normalize(out)


def normalize(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Make declared metadata comparable: lower-case keys, ISO dates, string versions, list ACLs."""
    out: dict[str, Any] = {}
    for raw_key, value in meta.items():
        key = str(raw_key).strip().lower()
        if value is None:
            continue
        if isinstance(value, (dt.date, dt.datetime)):
            value = value.isoformat()
        if key == "version":
            value = str(value)
        elif key in LIST_KEYS:
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            elif isinstance(value, (list, tuple)):
                value = [str(v) for v in value]
            else:
                value = [str(value)]
        elif key in ("status", "authority", "language", "product", "tenant") and isinstance(value, str):
            value = value.strip().lower()
        out[key] = value
    return out


def resolve(
    source: str,
    declared: Mapping[str, Any],
    text: str,
    title: str | None,
    rules: list[MetadataRule],
) -> dict[str, Any]:
    """The final metadata of one document (see module docstring for precedence)."""
    meta: dict[str, Any] = {"status": "unknown", "authority": "unknown"}
    for rule in rules:
        if rule.applies_to(source):
            meta.update(rule.metadata)
    meta.update(normalize(declared))
    if not meta.get("title"):
        meta["title"] = title or Path(source).stem
    if meta.get("language") not in SUPPORTED_LANGUAGES:
        declared_language = meta.get("language")
        meta["language"] = detect_language(text)
        if declared_language:
            # Keep what the file said; analysis falls back to the detected language.
            meta["declared_language"] = declared_language
    if meta["status"] not in STATUSES:
        meta["declared_status"] = meta["status"]
        meta["status"] = "unknown"
    if meta.get("acl") == []:
        raise ConfigError(
            f"{source}: 'acl: []' would make the document visible to nobody; remove the key for public documents"
        )
    return meta
