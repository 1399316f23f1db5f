"""Which product versions a question asks about: shared by search (self-query), answering and strategies.

One rule decides it everywhere (:func:`version_mentions`, :func:`asked_versions`), so the
version a search boosts is the version the answer is held to
(:func:`beleg.answer.evidence.find_target`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_VERSION = re.compile(r"(?<![\w.,])v?(\d{1,2}\.\d{1,2})(?![\d.,]*\d)(?!\s*(?:%|percent|prozent|[kmg]i?b\b|€|eur))",
                      re.IGNORECASE)
# Words after which a bare decimal is a version ("in 2.4", "seit 3.0", "since 2.4", "version 1.8").
_CUE = re.compile(r"(?:^|\b(?:version|versions|versionen|release|releases|in|ab|seit|since|für|fuer|bei|from|to|"
                  r"unter|mit|with|of|von|and|und|vs|auf|on))\W*$", re.IGNORECASE)


def version_mentions(text: str, products: Iterable[str] = ()) -> list[str]:
    """Version numbers the text asks about: ``"What was the limit in Ferrolink 2.4?"`` → ``["2.4"]``.

    A bare decimal is a version only after a cue (a product name, "version", "in", "ab",
    ...), so "99.95" or "1.5 MB" are not taken for versions.
    """
    names = [re.escape(p) for p in products if p]
    product_cue = re.compile(rf"\b(?:{'|'.join(names)})\W*$", re.IGNORECASE) if names else None
    out: list[str] = []
    for m in _VERSION.finditer(text):
        before = text[max(0, m.start() - 30): m.start()]
        if _CUE.search(before) or (product_cue is not None and product_cue.search(before)):
            out.append(m.group(1))
    return list(dict.fromkeys(out))


def version_spans(text: str, products: Iterable[str] = ()) -> dict[str, str]:
    """Each mentioned version with the words that named it (``{"3.0": "Ferrolink 3.0"}``), for traces."""
    found = version_mentions(text, products)
    spans: dict[str, str] = {}
    for version in found:
        m = re.search(rf"(\b\w+\W{{0,3}})?v?{re.escape(version)}(?![\d.])", text, re.IGNORECASE)
        spans[version] = m.group(0).strip() if m else version
    return spans


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


def asked_versions(question: str, context: Sequence[str], known_versions: set[str],
                   products: Iterable[str]) -> AskedVersions:
    """The question's own versions first; else those of the latest earlier question that names a known one.

    An unknown version in the question is reported and not replaced by the conversation's:
    the asker named a version, and no visible source has it.
    """
    products = list(products)
    mentioned = version_mentions(question, products)
    if known_versions:
        known = tuple(v for v in mentioned if v in known_versions)
        unknown = tuple(v for v in mentioned if v not in known_versions)
        if known or unknown:
            return AskedVersions(known, unknown, "question", question)
    for turn in reversed(context):
        found = tuple(v for v in version_mentions(turn, products) if v in known_versions)
        if found:
            return AskedVersions(found, (), "conversation", turn)
    return AskedVersions((), (), "none")


__all__ = ["AskedVersions", "asked_versions", "version_mentions", "version_spans"]
