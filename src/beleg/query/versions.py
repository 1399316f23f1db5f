"""Which product versions a question asks about: shared by search (self-query), answering and strategies.

One rule decides it everywhere (:func:`version_mentions`, :func:`asked_versions`), so the
version a search boosts is the version the answer is held to
(:func:`beleg.answer.evidence.find_target`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from beleg.query.conversation import Conversation

_UNITS = r"(?!\s*(?:%|percent|prozent|[kmg]i?b\b|€|eur))"
_VERSION = re.compile(r"(?<![\w.,/-])v?(\d{1,3}(?:\.\d{1,3}){1,2})(?![\d.,]*\d)" + _UNITS, re.IGNORECASE)
# A whole number is a version only right after a product name or "version"/"release"
# ("Ferrolink 3", "Version 2", "release v3"): "in 5 minutes" and "/api/v3" are not versions.
# "1.x" and "2.*" are a range, not the stored 1.2 ("migrating from Kestrel 1.x" is about 2.0).
_WHOLE = re.compile(r"(?<![\w.,/-])v?(\d{1,3})(?![\w.,]*\d|\w|\.[x*])" + _UNITS, re.IGNORECASE)
# Words after which a bare decimal is a version ("in 2.4", "seit 3.0", "since 2.4", "version 1.8").
# What a version is of is a cue too: "in firmware 1.4", "Firmwareversion 2.0", "build 3", "Stand 2.4".
_OF_WHAT = r"firmware|fw|software|build|edition|ausgabe|stand|[\w-]*version|[\w-]*versions|[\w-]*versionen|[\w-]*release|[\w-]*releases"
_CUE = re.compile(rf"(?:^|\b(?:{_OF_WHAT}|in|ab|seit|since|für|fuer|bei|from|to|"
                  r"unter|mit|with|of|von|and|und|vs|auf|on))\W*$", re.IGNORECASE)
_WHOLE_CUE = re.compile(rf"\b(?:{_OF_WHAT}|ver)\W*$", re.IGNORECASE)


def version_mentions(text: str, products: Iterable[str] = ()) -> list[str]:
    """Version numbers the text asks about: ``"What was the limit in Ferrolink 2.4?"`` → ``["2.4"]``.

    A bare decimal is a version only after a cue (a product name, "version", "in", "ab",
    ...), so "99.95" or "1.5 MB" are not taken for versions; a whole number only right after
    a product name or "version"/"release" ("Ferrolink 3"). Mentions are returned as written
    ("3", "2.4.0"); :func:`resolve_version` finds the stored spelling they mean.
    """
    names = [re.escape(p) for p in products if p]
    product_cue = re.compile(rf"\b(?:{'|'.join(names)})\W*$", re.IGNORECASE) if names else None
    found: list[tuple[int, str]] = []
    for m in _VERSION.finditer(text):
        before = text[max(0, m.start() - 30): m.start()]
        written_as_version = m.group(0)[0] in "vV"  # "v2.0" says it is a version by itself
        if written_as_version or _CUE.search(before) or (product_cue is not None and product_cue.search(before)):
            found.append((m.start(), m.group(1)))
    for m in _WHOLE.finditer(text):
        before = text[max(0, m.start() - 30): m.start()]
        if _WHOLE_CUE.search(before) or (product_cue is not None and product_cue.search(before)):
            found.append((m.start(), m.group(1)))
    return list(dict.fromkeys(v for _, v in sorted(found)))


def _parts(version: str) -> tuple[int, ...] | None:
    if not re.fullmatch(r"v?\d+(?:\.\d+)*", version, re.IGNORECASE):
        return None
    parts = [int(p) for p in version.lstrip("vV").split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()  # "3.0" and "3.0.0" are "3"; "2.4.0" is "2.4"
    return tuple(parts)


def resolve_version(mentioned: str, known_versions: Iterable[str]) -> list[str]:
    """The stored versions a mention means: itself; else a spelling of the same number
    ("2.4.0" for a stored "2.4", "3" for "3.0"); else, for a whole number, every version of
    that major (newest first: "Ferrolink 3" over stored 3.0 and 3.1 means both)."""
    known = list(known_versions)
    if mentioned in known:
        return [mentioned]
    asked = _parts(mentioned)
    if asked is None:
        return []
    same = [v for v in known if _parts(v) == asked]
    if same or "." in mentioned:
        return same
    major = [(p, v) for v in known if (p := _parts(v)) is not None and p[0] == asked[0]]
    return [v for _, v in sorted(major, reverse=True)]


def version_spans(text: str, products: Iterable[str] = (), known_versions: Iterable[str] | None = None
                  ) -> dict[str, str]:
    """Each mentioned version with the words that named it (``{"3.0": "Ferrolink 3.0"}``), for
    traces; with ``known_versions``, keyed by the stored version each mention means
    (``{"3.0": "Ferrolink 3"}``)."""
    known = list(known_versions) if known_versions is not None else None
    spans: dict[str, str] = {}
    for version in version_mentions(text, products):
        m = re.search(rf"(\b\w+\W{{0,3}})?v?{re.escape(version)}(?![\d.])", text, re.IGNORECASE)
        words = m.group(0).strip() if m else version
        for key in (resolve_version(version, known) if known is not None else [version]):
            spans.setdefault(key, words)
    return spans


def spellings(version: str) -> list[str]:
    """Other ways to write a stored version: "3.0" is also "3" and "3.0.0"; "2.4" also "2.4.0"."""
    parts = _parts(version)
    if parts is None:
        return []
    base = ".".join(map(str, parts))
    return [v for v in dict.fromkeys((base, base + ".0" * (2 - base.count(".")), base + ".0" * (1 - base.count("."))))
            if v != version and v]


@dataclass(frozen=True, slots=True)
class AskedVersions:
    """The versions a question asks about, among the versions the asker may see.

    ``known`` are mentioned versions some visible document has (in order of mention);
    ``unknown`` are mentioned versions none has: hidden and non-existent versions look the
    same, so this never tells which versions exist behind a permission. ``origin`` is
    ``"question"``, ``"conversation"`` (an earlier question named it) or ``"none"``.
    """

    known: tuple[str, ...]
    unknown: tuple[str, ...]
    origin: str
    #: The text the versions were found in (the question or the earlier question).
    text: str = ""


def asked_versions(question: str, context: Conversation, known_versions: set[str],
                   products: Iterable[str]) -> AskedVersions:
    """The question's own versions first; else, for a follow-up, those of the latest earlier question
    it leans on that names a known one (:func:`beleg.query.conversation.follow_up`; ``context``
    is the earlier questions or that judgement of this question): a question that stands alone
    is about the current state, whatever version was asked about before.

    An unknown version in the question is reported and not replaced by the conversation's:
    the asker named a version, and no visible source has it.
    """
    from beleg.query.conversation import judged

    context = judged(question, context).context
    products = list(products)
    mentioned = version_mentions(question, products)
    if known_versions:
        known = tuple(dict.fromkeys(k for v in mentioned for k in resolve_version(v, known_versions)))
        unknown = tuple(v for v in mentioned if not resolve_version(v, known_versions))
        if known or unknown:
            return AskedVersions(known, unknown, "question", question)
    for turn in reversed(context):
        found = tuple(dict.fromkeys(k for v in version_mentions(turn, products)
                                    for k in resolve_version(v, known_versions)))
        if found:
            return AskedVersions(found, (), "conversation", turn)
    return AskedVersions((), (), "none")


__all__ = ["AskedVersions", "asked_versions", "resolve_version", "spellings", "version_mentions", "version_spans"]
