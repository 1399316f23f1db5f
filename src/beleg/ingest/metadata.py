"""Metadata for every document: declared values, ingest rules and explicit defaults.

Precedence, lowest first: defaults < rules (in file order; ``--meta`` is a rule that
matches everything) < what the file itself declares (front matter, ``<meta>``, PDF/DOCX
properties) < binding rules (an upload's tenant key), which a file may repeat but never
contradict.

Metadata fails closed. The keys that decide who may read a document (``tenant``,
``acl``) must hold a clear value: ``acl:`` left empty, a list where one tenant belongs, or
an ACL that is not a list of names rejects the file instead of quietly making it public.
Tenants and ACL names are compared case-folded (:meth:`beleg.types.Principal.fold`), at
ingest and at query time alike. A ``status`` is mapped onto the governance vocabulary
(``current``, ``historical``, ``draft``) through synonyms (``deprecated`` → ``historical``);
an unknown one stays ``"unknown"`` with the written value in ``declared_status`` (and a
logged warning), so a document is never silently promoted to "current". Status words compare
NFKC-normalised and case-folded (:func:`fold_word`).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import functools
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beleg.errors import ConfigError, IngestError
from beleg.index.analyzer import SUPPORTED_LANGUAGES, detect_language
from beleg.types import Principal

if TYPE_CHECKING:
    import yaml

log = logging.getLogger(__name__)

#: Keys with a meaning to Beleg. Other keys are kept and filterable as they are.
KNOWN_KEYS = ("title", "product", "version", "status", "authority", "language", "date", "tenant", "acl")
STATUSES = ("current", "historical", "draft", "unknown")
LIST_KEYS = ("acl", "tags")
#: Keys that must hold one value: a list or mapping here would be ambiguous (which tenant?).
SCALAR_KEYS = ("tenant", "product", "version", "status", "authority", "language")
#: Keys that decide who may read a document: two spellings of one of them in a file
#: (``tenant:`` and ``"tenant ":``) must agree, since either could be the one that counts.
ACCESS_KEYS = ("tenant", "acl")

#: Written statuses that mean one of the governed ones. Extend it with ``statuses:`` in the
#: rules file or ``status_synonyms`` in ``[governance]`` of beleg.toml.
DEFAULT_STATUS_SYNONYMS: dict[str, str] = {
    **dict.fromkeys(("deprecated", "obsolete", "superseded", "archived", "retired", "legacy", "outdated",
                     "veraltet", "historisch", "abgelöst", "archiviert", "überholt"), "historical"),
    **dict.fromkeys(("preview", "beta", "alpha", "proposed", "wip", "entwurf", "vorschau", "vorläufig"), "draft"),
    **dict.fromkeys(("active", "valid", "released", "stable", "aktuell", "gültig", "gueltig"), "current"),
}


class MetadataError(IngestError, ValueError):
    """A metadata value that would make a document's access or meaning ambiguous."""


def fold_word(value: str) -> str:
    """The comparison form of a governance word (status, authority): NFKC, case-folded, stripped.

    NFKC first, so ``abgelöst`` typed decomposed (macOS) or ``ｄeprecated`` in fullwidth
    letters is the word in the synonym table, not an unknown status that outranks historical.
    """
    return Principal.fold(value)  # the same form as tenant and ACL names


@dataclass(frozen=True, slots=True)
class MetadataRule:
    """Attach ``metadata`` to every file whose path (as ingested) matches ``match`` (a glob).

    A ``binding`` rule is not a default but a fact about the ingest (an upload through a
    tenant's key belongs to that tenant): it outranks what the file declares, and a file
    that declares another value for one of its keys fails instead of being stored.
    """

    match: str
    metadata: dict[str, Any] = field(default_factory=dict)
    binding: bool = False

    def applies_to(self, source: str) -> bool:
        posix = source.replace("\\", "/")
        return fnmatch.fnmatch(posix, self.match) or fnmatch.fnmatch(Path(posix).name, self.match)


@functools.cache
def _written_float_loader() -> type[yaml.SafeLoader]:
    """YAML loader that keeps decimals as written: ``version: 2.10`` stays ``"2.10"``, not 2.1.

    Made on first use: yaml is imported only when a rules file is read, not by every
    process that opens an index (start-up time of a search).
    """
    import yaml

    class WrittenFloatLoader(yaml.SafeLoader):
        pass

    WrittenFloatLoader.add_constructor(
        "tag:yaml.org,2002:float", lambda loader, node: loader.construct_scalar(node))  # type: ignore[arg-type]
    return WrittenFloatLoader


def _read_rules_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_written_float_loader())  # noqa: S506 (a SafeLoader)
    except OSError as exc:
        raise ConfigError(f"cannot read rules file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"rules file {path} is not valid YAML: {exc}") from None


def load_rules(path: str | Path) -> list[MetadataRule]:
    """Read a YAML rules file: ``rules: [{match: "manuals/*.pdf", metadata: {...}}, ...]``."""
    p = Path(path)
    data = _read_rules_yaml(p)
    rules = (data or {}).get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        raise ConfigError(f"rules file {p} must contain 'rules:' with a list of {{match, metadata}} entries")
    out = []
    for i, rule in enumerate(rules, 1):
        if not isinstance(rule, dict) or "match" not in rule or not isinstance(rule.get("metadata", {}), dict):
            raise ConfigError(f"rules file {p}, rule {i}: expected {{match: GLOB, metadata: {{key: value}}}}, got {rule!r}")
        try:
            out.append(MetadataRule(str(rule["match"]), normalize(rule.get("metadata") or {})))
        except MetadataError as exc:
            raise ConfigError(f"rules file {p}, rule {i}: {exc}") from None
    return out


def load_rule_statuses(path: str | Path) -> dict[str, str] | None:
    """The ``statuses: {written: current|historical|draft}`` mapping of a rules file (None when absent)."""
    p = Path(path)
    data = _read_rules_yaml(p)
    statuses = data.get("statuses") if isinstance(data, dict) else None
    if statuses is None:
        return None
    status_vocabulary(statuses, where=f"rules file {p}, statuses")  # validates
    return {str(k): str(v) for k, v in statuses.items()}


def status_vocabulary(*extra: Any, where: str = "status synonyms") -> dict[str, str]:
    """The default synonyms extended by mappings ``{written: current|historical|draft}`` (later wins).

    ``where`` names the origin in errors. A mapping of ``None`` adds nothing.
    """
    vocab = dict(DEFAULT_STATUS_SYNONYMS)
    for mapping in extra:
        if mapping is None:
            continue
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"{where}: expected a mapping like {{deprecated: historical}}, got {mapping!r}")
        for written, meaning in mapping.items():
            target = fold_word(str(meaning))
            if target not in STATUSES[:3]:
                raise ConfigError(f"{where}: {written!r} maps to {meaning!r}; use current, historical or draft")
            vocab[fold_word(str(written))] = target
    return vocab


def parse_assignments(pairs: list[str]) -> dict[str, Any]:
    """``["product=ferrolink", "acl=a,b"]`` → ``{"product": "ferrolink", "acl": ["a", "b"]}``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {pair!r}")
        out[key.strip().lower()] = value.strip()
    try:
        return normalize(out)
    except MetadataError as exc:
        raise ConfigError(f"--meta: {exc}") from None


def _acl_names(key: str, value: Any) -> list[str]:
    """An ACL (or tags) value as a list of names; anything but a string or list of strings is refused."""
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif key != "acl" and not isinstance(value, dict):
        items = [str(value)]
    else:
        raise MetadataError(f"'{key}' must be a name or a list of names, got {type(value).__name__} {value!r}")
    if key != "acl":  # tags do not decide access: any scalar is a tag
        items = [str(v) for v in items if not isinstance(v, (list, tuple, dict))]
    bad = [v for v in items if not isinstance(v, str)]
    if bad:
        raise MetadataError(f"'{key}' must list names (strings), got {bad[0]!r} in {value!r}; quote it")
    names = [v.strip() for v in items if v.strip()]
    if key == "acl":
        if not names:
            raise MetadataError(
                "'acl' is present but empty, which would make the document public; name the groups "
                "(or user:NAME) who may read it, or remove the key for a public document")
        entries = [Principal.acl_entry(n) for n in names]
        ambiguous = [n for n, e in zip(names, entries) if e.startswith("group:")]
        if ambiguous:
            # "group:user:alice" names a group called "user:alice"; stored without its prefix
            # it would read as the user alice. Which one the author meant is anyone's guess.
            raise MetadataError(
                f"'acl' entry {ambiguous[0]!r} is ambiguous: after 'group:' the name itself starts with "
                "'user:' or 'group:'; write user:NAME for a user or name the group without the prefix")
        names = list(dict.fromkeys(entries))
    return names


def _scalar(key: str, value: Any) -> str:
    if isinstance(value, (list, tuple, set, dict)):
        raise MetadataError(f"'{key}' must be one value, got {type(value).__name__} {value!r}")
    if isinstance(value, bool):
        raise MetadataError(f"'{key}' must be a name, got the yes/no value {value!r}; quote it")
    return str(value).strip()


def _document_id(value: Any) -> str:
    """A declared ``id``: one non-blank value, never a Python repr of a list, mapping or yes/no.

    Kept as written otherwise (not stripped): ``" a"`` and ``"a"`` are two ids, as they were
    before this check, so no stored document changes its id.
    """
    _scalar("id", value)  # refuses lists, mappings and yes/no
    if not str(value).strip():
        raise MetadataError("'id' is blank; give the document an id or remove the key")
    return str(value)


def normalize(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Make declared metadata comparable: lower-case keys, ISO dates, string versions, list ACLs.

    Raises:
        MetadataError: ``acl``/``tenant`` present but empty, a list/mapping where one value
            belongs, an ACL that is not a list of names, an ambiguous ACL entry
            (``group:user:alice``), two spellings of ``tenant``/``acl`` that disagree, an ``id``
            or ``title`` that is not one value (or a blank ``id``).
    """
    out: dict[str, Any] = {}
    for raw_key, value in meta.items():
        key = key_name(raw_key)
        _storable(key, raw_key)
        _storable(key, value)
        if key in ACCESS_KEYS and key in out:
            # Two spellings ("tenant" and "tenant "): last-wins would let the one a reader or a
            # check did not look at decide who may read the document.
            given = normalize({key: value})[key]
            if given != out[key]:
                raise MetadataError(f"'{key}' is given twice with different values ({out[key]!r} and {given!r}, "
                                    f"the second as {raw_key!r}); keep one")
            continue
        if value is None or (key in ("tenant", "acl") and isinstance(value, str) and not value.strip()):
            if key in ("tenant", "acl"):
                # Dropping it would make the document visible to everyone: refuse instead.
                raise MetadataError(f"'{key}' is present but empty, which would make the document public; "
                                    f"give it a value or remove the key")
            continue
        if isinstance(value, (dt.date, dt.datetime)):
            value = value.isoformat()
        if key in LIST_KEYS:
            value = _acl_names(key, value)
        elif key in SCALAR_KEYS:
            value = _scalar(key, value)
            if key == "tenant":
                value = Principal.fold(value)
            elif key in ("status", "authority"):
                value = fold_word(value)  # compared with synonym tables and evidence orders
            elif key != "version":
                value = value.lower()
        elif key == "id":
            value = _document_id(value)
        elif key == "title":
            value = _scalar(key, value)
        out[key] = value
    return out


#: Half of a surrogate pair: not a character, so no UTF-8 text (file, index, JSON) can hold it.
#: (Also the readers' check of decoded text; defined here, which a search process loads anyway.)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(key: str, value: Any) -> None:
    """Refuse text that is not Unicode: a lone surrogate ("\\ud800" in YAML, an undecodable
    byte in a command-line argument) cannot be written as UTF-8, so it would fail the whole
    batch's commit instead of this one file."""
    if isinstance(value, str):
        m = LONE_SURROGATE.search(value)
        if m:
            shown = key.encode("utf-8", "backslashreplace").decode("utf-8")  # the key may be the culprit
            raise MetadataError(f"'{shown}' holds {m.group(0).encode('unicode_escape').decode()}, which is not a "
                                "character (a lone surrogate, or a byte that is not UTF-8); fix the value")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _storable(key, k)
            _storable(key, v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _storable(key, v)


def key_name(raw_key: Any) -> str:
    """A metadata key as ingest reads it: ``"Tenant "`` is ``tenant``."""
    return str(raw_key).strip().lower()


def declared_tenants(meta: Mapping[str, Any]) -> set[str]:
    """Every tenant ``meta`` names, under any spelling of the key, in the form ingest stores.

    For a check that must see what ingest will store (an upload through a tenant's key):
    a file naming its own tenant under one spelling and another under a second must not
    pass because the check read only the first. A value ingest would refuse is left out;
    that file fails at ingest.
    """
    out = set()
    for raw_key, value in meta.items():
        if key_name(raw_key) == "tenant":
            try:
                out.add(normalize({"tenant": value})["tenant"])
            except MetadataError:
                continue
    return out


def resolve(
    source: str,
    declared: Mapping[str, Any],
    text: str,
    title: str | None,
    rules: list[MetadataRule],
    statuses: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The final metadata of one document (see module docstring for precedence).

    ``statuses`` maps written statuses to governed ones (default :data:`DEFAULT_STATUS_SYNONYMS`).
    """
    meta: dict[str, Any] = {"status": "unknown", "authority": "unknown"}
    for rule in rules:
        if not rule.binding and rule.applies_to(source):
            meta.update(rule.metadata)
    own = normalize(declared)
    meta.update(own)
    for rule in rules:
        if rule.binding and rule.applies_to(source):
            clash = next((k for k, v in rule.metadata.items() if k in own and own[k] != v), None)
            if clash is not None:
                raise MetadataError(f"the file declares {clash} {own[clash]!r}, but this ingest is bound to "
                                    f"{clash} {rule.metadata[clash]!r}; remove the field or ingest it as that {clash}")
            meta.update(rule.metadata)
    if not meta.get("title"):
        meta["title"] = title or Path(source).stem
    if meta.get("language") not in SUPPORTED_LANGUAGES:
        declared_language = meta.get("language")
        meta["language"] = detect_language(text)
        if declared_language:
            # Keep what the file said; analysis falls back to the detected language.
            meta["declared_language"] = declared_language
    written = str(meta["status"])
    if written not in STATUSES:
        meta["declared_status"] = written
        meta["status"] = (DEFAULT_STATUS_SYNONYMS if statuses is None else statuses).get(fold_word(written), "unknown")
        if meta["status"] == "unknown":
            # "unknown" outranks historical in answers: a misspelt "deprecated" should be seen.
            log.warning("%s: status %r is not current, historical, draft or a synonym of one; it is stored as "
                        "'unknown' (add it under statuses: in the rules file or status_synonyms in beleg.toml)",
                        source, written)
    return meta


def widening(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """How ``new`` metadata would let more principals read a document than ``old`` did (empty: it would not)."""
    out = []
    old_tenant, new_tenant = old.get("tenant"), new.get("tenant")
    if old_tenant is not None:
        if new_tenant is None:
            out.append(f"tenant {old_tenant!r} would be removed")
        elif Principal.fold(str(new_tenant)) != Principal.fold(str(old_tenant)):
            out.append(f"tenant would change from {old_tenant!r} to {new_tenant!r}")
    old_acl, new_acl = old.get("acl"), new.get("acl")
    if old_acl is not None:
        if new_acl is None:
            out.append("acl would be removed")
        else:
            gained = sorted(_entries(new_acl) - _entries(old_acl))
            if gained:
                out.append(f"acl would gain {', '.join(gained)}")
    return out


def _entries(acl: Any) -> set[str]:
    return {Principal.acl_entry(str(a)) for a in (acl if isinstance(acl, (list, tuple)) else [acl])}
