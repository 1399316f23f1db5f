"""Evidence assessment: which retrieved source may carry the answer, and which governs.

Relevance is not validity. A historical contract, an imported wiki note and the current
contract can all match a question; the answer must rest on the source that governs for
the product version asked about. This module decides that in code, from metadata, so
every backend (extractive or LLM) gets the same ranking and the same reasons:

1. **Version match** – the version asked about (from a filter, the question, or the
   conversation) beats an unversioned source, which beats another version.
2. **Status** – current beats unknown beats historical beats draft (configurable).
3. **Authority** – a configurable hierarchy, contract first and community last.

Instruction-like sentences (possible prompt injection) are withheld sentence by sentence
(:mod:`beleg.answer.quarantine`): the rest of such a source keeps its rank and may answer.
A source with nothing but instruction-like prose is never eligible and is withheld whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from beleg.answer.quarantine import Quarantine, quarantine_hit
from beleg.answer.types import Source
from beleg.errors import ConfigError
from beleg.index.filters import And, Cmp, Expr
from beleg.query.conversation import Conversation

# One version rule for search (self-query), answering and strategies; re-exported here for
# the modules that import it from this one.
from beleg.query.versions import asked_versions, version_mentions  # noqa: F401
from beleg.types import Hit


@dataclass(frozen=True, slots=True)
class GovernancePolicy:
    """How sources are ranked when they disagree. Earlier in a list ranks higher.

    Values not listed rank at the position of ``"unknown"``.
    """

    authority_order: tuple[str, ...] = (
        "contract", "reference", "guide", "release-notes", "unknown", "imported-note", "community",
    )
    status_order: tuple[str, ...] = ("current", "unknown", "historical", "deprecated", "draft")
    #: Without a version in the question, sources with these statuses may be shown but not answer.
    ineligible_statuses: tuple[str, ...] = ("historical", "deprecated", "draft")
    #: Withhold instruction-like chunks from answering and from prompts ("withhold"), or
    #: keep them, marked, in the prompt ("mark"; for experiments, not for production).
    injection: str = "withhold"

    @staticmethod
    def _rank(order: tuple[str, ...], value: str) -> int:
        value = value.casefold()
        if value in order:
            return order.index(value)
        return order.index("unknown") if "unknown" in order else len(order)

    def authority_rank(self, authority: str) -> int:
        return self._rank(self.authority_order, authority)

    def status_rank(self, status: str) -> int:
        return self._rank(self.status_order, status)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GovernancePolicy:
        """From a config mapping (``{"authority_order": [...], ...}``); absent keys keep the defaults."""
        default = cls()

        def words(key: str) -> tuple[str, ...]:
            value = data.get(key, getattr(default, key))
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise ConfigError(f"governance {key} must be a list of names, got {value!r}")
            return tuple(str(v).casefold() for v in value)

        injection = str(data.get("injection", default.injection))
        if injection not in ("withhold", "mark"):
            raise ConfigError(f"governance injection must be 'withhold' or 'mark', got {injection!r}")
        return cls(words("authority_order"), words("status_order"), words("ineligible_statuses"), injection)


# ---------------------------------------------------------------------- versions
def version_from_filter(expr: Expr | None) -> str | None:
    """The version an equality filter pins (``version = 2.4``), if any."""
    if isinstance(expr, Cmp) and expr.key == "version" and expr.op in ("=", "==") and not isinstance(expr.value, tuple):
        return str(expr.value)
    if isinstance(expr, And):
        for part in expr.items:
            found = version_from_filter(part)
            if found:
                return found
    return None


def statuses_from_filter(expr: Expr | None) -> tuple[str, ...]:
    """The statuses an equality or ``in`` filter on ``status`` asks for (``status = historical``),
    through ``and``; folded as stored."""
    if isinstance(expr, Cmp) and expr.key == "status" and expr.op in ("=", "==", "in"):
        values = expr.value if isinstance(expr.value, tuple) else (expr.value,)
        return tuple(str(v).casefold() for v in values)
    if isinstance(expr, And):
        return tuple(s for part in expr.items for s in statuses_from_filter(part))
    return ()


@dataclass(frozen=True, slots=True)
class Target:
    """What the question is about: a version (or None = the current state) and where that came from."""

    version: str | None
    origin: str  # "filter" | "question" | "conversation" | "none"
    #: Versions mentioned that no visible source has (the question cannot be answered).
    unknown: tuple[str, ...] = ()
    #: Statuses the asker asked for (a filter, or the question's "older versions"): sources of
    #: these statuses are eligible even without a version (else historical ones never are).
    statuses: tuple[str, ...] = ()


def find_target(question: str, expr: Expr | None, context: Conversation, known_versions: set[str],
                products: Iterable[str]) -> Target:
    """Decide the version a question is about; a filter wins over the question, the question over context.

    The question and context rule is :func:`beleg.query.versions.asked_versions`, the one
    self-query boosts with, so a search and its answer agree on the version.
    """
    pinned = version_from_filter(expr)
    if pinned:
        return Target(pinned, "filter")
    asked = asked_versions(question, context, known_versions, products)
    if asked.known:
        return Target(asked.known[0], asked.origin)
    if asked.unknown:
        return Target(None, "question", asked.unknown)
    return Target(None, "none")


# ---------------------------------------------------------------------- ranking
def _version(hit: Hit) -> str | None:
    v = hit.metadata.get("version")
    return None if v is None else str(v)


def assess(hits: Sequence[Hit], target: Target, policy: GovernancePolicy) -> list[Source]:
    """Label and rank hits as sources. ``S1`` is the highest-ranked eligible source.

    The sort key is (eligible, version match, status, authority, retrieval rank): among
    sources of equal standing, the retriever's order is kept.
    """
    keyed = []
    for pos, hit in enumerate(hits):
        version, status = _version(hit), str(hit.metadata.get("status") or "unknown").casefold()
        authority = str(hit.metadata.get("authority") or "unknown").casefold()
        reasons: list[str] = []
        eligible = True
        if target.version is not None:
            vm = 0 if version == target.version else (1 if version is None else 2)
            if vm == 2:
                eligible = False
                reasons.append(f"version {version}, not {target.version}")
            elif vm == 0:
                reasons.append(f"version {version} matches")
        else:
            vm = 0
            if status in policy.ineligible_statuses and status not in target.statuses:
                eligible = False
                reasons.append(f"status {status} (no version asked for)")
            elif status in target.statuses and status in policy.ineligible_statuses:
                reasons.append(f"status {status} asked for")
        reasons.append(f"status {status}")
        reasons.append(f"authority {authority}")
        quarantine = quarantine_hit(hit)
        if quarantine.whole:
            eligible = False
        reasons.extend(quarantine_reasons(quarantine))
        key = (not eligible, vm, policy.status_rank(status), policy.authority_rank(authority), pos)
        keyed.append((key, hit, eligible, tuple(reasons), quarantine))
    keyed.sort(key=lambda item: item[0])
    return [
        Source(f"S{i}", hit, i, eligible, reasons, tuple(hit.flags), quarantine, standing=key[:4])
        for i, (key, hit, eligible, reasons, quarantine) in enumerate(keyed, start=1)
    ]


def quarantine_reasons(q: Quarantine) -> list[str]:
    """Why part or all of a source is withheld, for ``Source.reasons``."""
    out = []
    if q.whole:
        out.append("instruction-like text (possible prompt injection), withheld whole")
    elif q.spans:
        out.append(f"{len(q.spans)} instruction-like passage(s) withheld (possible prompt injection)")
    if q.fields:
        out.append(f"instruction-like text in {', '.join(q.fields)} withheld")
    return out


def governance_order(sources: Sequence[Source]) -> dict[str, int]:
    """Label → rank (1 governs), for choosing among equally relevant statements."""
    return {s.label: s.rank for s in sources}
