"""Self-query with an LLM: the model proposes constraints; only values the asker may see count.

The rules (:mod:`beleg.query.self_query`) read the words they know ("Ferrolink 3.0",
"aktuell", "since 2025"). A model reads more ("the release before 3.0", "die neueste
Fassung"), but it can invent a value no document has, a field the index does not filter
on, or a value that exists only in documents the asker may not read. So a model never
decides alone:

1. **The prompt offers only visible values.** For each field (product, version, status,
   language) the values of the documents the asker may read, most frequent first, at most
   :data:`MAX_VALUES` each; for dates the visible earliest and latest. Nothing from a
   document the asker cannot read is ever in the prompt, and no other field (tenant, acl).
2. **The reply is parsed strictly:** one JSON object, optionally inside one code fence,
   nothing else (a local model is decoded under a JSON schema for it,
   :data:`beleg.backends.llms.formats.SELF_QUERY_SCHEMA`). ``{"field": value | [values], "date": {"from": "YYYY-MM-DD", "before":
   "YYYY-MM-DD"}}``; ``{}`` when the question states no constraint.
3. **Every value is checked** against the visible values after Unicode (NFKC) and case
   normalisation, exact match only ("German" is not "de"). An unknown field, a value no
   visible document has, a malformed date: dropped, each with a trace note. A hidden value
   and one that exists nowhere get the same note, so a reply cannot probe what is hidden.
4. **Merged with the rules, which win** on any key they decided: applied with another
   value, or skipped on purpose (a translation, contrasting statuses, an unknown version).
   The model only adds keys the rules said nothing about; a status it adds yields to a
   version, as the rules' does.
5. **What only the model read is a boost, never a filter.** A visible value can still be
   the wrong one (SmolLM2-135M proposed the first listed version, status and language for
   every question); as a boost it moves matching documents up and removes none, so a wrong
   reading costs ranking, never the answer. The rules' readings keep their filters.
6. **Visible fallback:** invalid JSON, a failed or timed-out call or a spent budget leave
   the rules' constraints, and the trace says so ("llm self-query: invalid JSON, rules
   used"). Never a silent fallback, never an error for the search.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from beleg.backends.llms.base import LLM, Message
from beleg.errors import BelegError
from beleg.query.self_query import BOOST, VERSION_DECIDES, Constraint, Inferred

#: The fields the model may constrain (values offered and checked), besides the date range.
FIELDS = ("product", "version", "status", "language")
DATE = "date"
#: At most this many values per field in the prompt (the most frequent first).
MAX_VALUES = 30
#: The reply is one small JSON object (four fields, a few versions and a date range fit in
#: about 60 tokens); a model that runs on is cut off here, and its reply is then invalid JSON.
MAX_TOKENS = 100
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_FENCED = re.compile(r"^```(?:json)?[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL | re.IGNORECASE)

SYSTEM = ("You read search constraints from a question about a document collection. "
          "Answer with one JSON object only, no other text.")


def normalise(text: str) -> str:
    """The form values are compared in: Unicode NFKC, case-folded, outer spaces removed."""
    return unicodedata.normalize("NFKC", text).casefold().strip()


# ---------------------------------------------------------------------- what the asker may see
@dataclass(frozen=True, slots=True)
class Visible:
    """The values of the documents the asker may read: the prompt's offer and the check's list."""

    #: Field → stored values, most frequent first (every one, for checking).
    values: Mapping[str, tuple[str, ...]]
    #: Earliest and latest visible ``date`` (ISO), or None when no visible document has one.
    dates: tuple[str, str] | None

    @classmethod
    def of(cls, metadata: Iterable[Mapping[str, Any]]) -> Visible:
        """Count each field's values over the metadata of the readable documents."""
        counts: dict[str, Counter[str]] = {f: Counter() for f in FIELDS}
        dates: list[str] = []
        for meta in metadata:
            for field in FIELDS:
                value = meta.get(field)
                if value not in (None, ""):
                    counts[field][str(value)] += 1
            day = str(meta.get(DATE) or "")[:10]
            if _ISO_DATE.match(day):
                dates.append(day)
        values = {f: tuple(v for v, _ in sorted(c.items(), key=lambda vc: (-vc[1], vc[0]))) for f, c in counts.items()}
        return cls({f: v for f, v in values.items() if v}, (min(dates), max(dates)) if dates else None)

    def lookup(self, field: str, proposed: str) -> str | None:
        """The stored spelling of ``proposed`` among the field's visible values, or None."""
        wanted = normalise(proposed)
        return next((v for v in self.values.get(field, ()) if normalise(v) == wanted), None)


def prompt_messages(question: str, visible: Visible, context: Sequence[str] = (),
                    cap: int = MAX_VALUES) -> list[Message]:
    """The self-query prompt: the fields, their visible values (capped), the question."""
    lines = ["Fields and the only values you may use (most frequent first):"]
    for field, values in visible.values.items():
        shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in values[:cap])
        more = f" (and {len(values) - cap} rarer)" if len(values) > cap else ""
        lines.append(f"- {field}: {shown}{more}")
    if visible.dates is not None:
        lines.append(f'- date: documents are dated {visible.dates[0]} to {visible.dates[1]}; give a range as '
                     '{"from": "YYYY-MM-DD", "before": "YYYY-MM-DD"} (either may be left out)')
    lines += ["",
              "Include a field only when the question itself asks for that product, version, status, language "
              "or time. Copy values exactly as listed; use a list for several values. Answer {} when the question "
              'states no such constraint. Example: {"version": "2.0", "status": "current"}']
    if context:
        lines += ["", "Earlier questions of this conversation:", *(f"- {q}" for q in context)]
    lines += ["", f"Question: {question}", "JSON:"]
    return [Message("system", SYSTEM), Message("user", "\n".join(lines))]


# ---------------------------------------------------------------------- parsing and checking
class ProposalError(BelegError, ValueError):
    """The model's reply is not one JSON object."""


def parse_reply(text: str) -> dict[str, Any]:
    """The reply as a JSON object; numbers keep their literal text ("2.10" stays "2.10")."""
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        value = json.loads(body, parse_float=str, parse_int=str, parse_constant=_no_constant)
    except ValueError as exc:
        raise ProposalError(f"the reply is not JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise ProposalError(f"the reply is JSON but not an object: {text[:80]!r}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


@dataclass(frozen=True, slots=True)
class Rejected:
    """One proposal not taken, and why."""

    field: str
    value: Any
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "reason": self.reason}


def check_proposal(proposal: Mapping[str, Any], visible: Visible) -> tuple[list[Constraint], list[Rejected]]:
    """The proposed constraints whose every value is visible, and the rest with reasons."""
    accepted: list[Constraint] = []
    rejected: list[Rejected] = []
    seen: set[str] = set()
    for key, raw in proposal.items():
        field = normalise(str(key))
        if raw is None or raw == [] or raw == {}:
            continue  # "no constraint on this field"
        if field in seen:
            rejected.append(Rejected(str(key), raw, "the field is given twice"))
            continue
        seen.add(field)
        if field == DATE:
            found, problems = _check_dates(raw, visible)
        elif field in FIELDS:
            found, problems = _check_values(field, raw, visible)
        else:
            found, problems = [], [Rejected(str(key), raw, f"not a field self-query reads ({', '.join(FIELDS)}, "
                                                           "date)")]
        accepted += found
        rejected += problems
    return accepted, rejected


def _check_values(field: str, raw: Any, visible: Visible) -> tuple[list[Constraint], list[Rejected]]:
    items = raw if isinstance(raw, list) else [raw]
    chosen: list[str] = []
    rejected: list[Rejected] = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            rejected.append(Rejected(field, item, "not a text value"))
            continue
        stored = visible.lookup(field, item)
        if stored is None:
            # The same words for a hidden value and one that exists nowhere.
            rejected.append(Rejected(field, item, f"no document you may see has this {field}"))
        elif stored not in chosen:
            chosen.append(stored)
    if not chosen:
        return [], rejected
    value: str | tuple[str, ...] = chosen[0] if len(chosen) == 1 else tuple(chosen)
    return [Constraint(field, "=" if len(chosen) == 1 else "in", value, "", BOOST, origin="llm")], rejected


def _check_dates(raw: Any, visible: Visible) -> tuple[list[Constraint], list[Rejected]]:
    if not isinstance(raw, dict) or not raw or not set(raw) <= {"from", "before"}:
        return [], [Rejected(DATE, raw, 'a date range is {"from": "YYYY-MM-DD", "before": "YYYY-MM-DD"}')]
    if visible.dates is None:
        return [], [Rejected(DATE, raw, "no document you may see has a date")]
    bounds: dict[str, dt.date] = {}
    for name, text in raw.items():
        if text is None:
            continue
        try:
            if not isinstance(text, str) or not _ISO_DATE.match(text):
                raise ValueError
            bounds[name] = dt.date.fromisoformat(text)
        except ValueError:
            return [], [Rejected(DATE, raw, f"{name} {text!r} is not a date as YYYY-MM-DD")]
    if "from" in bounds and "before" in bounds and bounds["from"] >= bounds["before"]:
        return [], [Rejected(DATE, raw, "the range is empty (from is not before 'before')")]
    ops = {"from": ">=", "before": "<"}
    return [Constraint(DATE, ops[name], day.isoformat(), "", BOOST, origin="llm")
            for name, day in sorted(bounds.items(), key=lambda b: b[0] != "from")], []


# ---------------------------------------------------------------------- merging with the rules
def merge(rules: Inferred, proposed: Sequence[Constraint]) -> tuple[tuple[Constraint, ...], list[str], list[Rejected]]:
    """The rules' constraints plus the model's on keys the rules left alone.

    Returns the constraints, what the model agreed with, and what it proposed that the
    rules overrule.
    """
    out = list(rules.constraints)
    agreed: list[str] = []
    overruled: list[Rejected] = []
    for key in dict.fromkeys(c.key for c in proposed):
        mine = [c for c in proposed if c.key == key]
        theirs = [c for c in rules.constraints if c.key == key]
        shown = _describe(mine)
        if key == "version" and rules.unknown_versions:
            overruled.append(Rejected(key, shown, f"the question names version {', '.join(rules.unknown_versions)}, "
                                                  "which no document you may see has; the rules' reading stands"))
        elif not theirs:
            out += mine
        elif any(c.status == "applied" for c in theirs) and _same(theirs, mine):
            agreed.append(shown)
        elif any(c.status == "applied" for c in theirs):
            overruled.append(Rejected(key, shown, f"the rules read {_describe(theirs)} from "
                                                  f"{theirs[0].words!r}; the rules win"))
        else:
            overruled.append(Rejected(key, shown, f"the rules left it out on purpose: {theirs[0].reason}"))
    return _status_yields_to_version(out), agreed, overruled


def _same(a: Sequence[Constraint], b: Sequence[Constraint]) -> bool:
    def key(cs: Sequence[Constraint]) -> set[tuple[str, tuple[str, ...]]]:
        return {(c.op if c.op in (">=", "<") else "=", c.value if isinstance(c.value, tuple) else (c.value,))
                for c in cs if c.status == "applied"}
    return key(a) == key(b)


def _describe(cs: Sequence[Constraint]) -> str:
    return " and ".join(f"{c.key} {c.op} {', '.join(c.value) if isinstance(c.value, tuple) else c.value}"
                        for c in cs)


def _status_yields_to_version(constraints: list[Constraint]) -> tuple[Constraint, ...]:
    """A status the model adds is not applied beside a version, as the rules' is not."""
    versioned = any(c.key == "version" and c.status == "applied" for c in constraints)
    return tuple(replace(c, status="skipped", reason=VERSION_DECIDES)
                 if versioned and c.origin == "llm" and c.key == "status" and c.status == "applied" else c
                 for c in constraints)


# ---------------------------------------------------------------------- the pass
@dataclass(frozen=True, slots=True)
class LLMPass:
    """What the LLM self-query pass did: its outcome, the model's proposal, its cost."""

    #: "used" (the reply was checked and merged) or "rules used" (no usable reply).
    outcome: str
    #: Why the rules were used alone ("invalid JSON", "the LLM call failed: ...").
    reason: str = ""
    model: str = ""
    proposed: Mapping[str, Any] | None = None
    agreed: tuple[str, ...] = ()
    rejected: tuple[Rejected, ...] = ()
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def notes(self) -> list[str]:
        if self.outcome != "used":
            return [f"llm self-query: {self.reason}, rules used"]
        out = [f"llm self-query: agrees with the rules on {a}" for a in self.agreed]
        return out + [f"llm self-query: rejected {r.field} {r.value!r}: {r.reason}" for r in self.rejected]

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reason": self.reason, "model": self.model,
                "proposed": None if self.proposed is None else dict(self.proposed), "agreed": list(self.agreed),
                "rejected": [r.to_json() for r in self.rejected],
                "usage": {"calls": self.calls, "prompt_tokens": self.prompt_tokens,
                          "completion_tokens": self.completion_tokens, "tokens": self.tokens}}


def infer_with_llm(question: str, rules: Inferred, metadata: Callable[[], Iterable[Mapping[str, Any]]], llm: LLM,
                   *, context: Sequence[str] = ()) -> Inferred:
    """``rules`` with the model's checked proposals merged in (see the module docstring).

    ``metadata()`` yields the metadata of every document the asker may read (nothing else
    reaches the prompt). ``llm.complete`` may raise any :class:`BelegError` (unreachable,
    timed out, a strategy's budget spent): the rules are used and the trace says why.
    """
    visible = Visible.of(metadata())
    if not visible.values and visible.dates is None:
        return replace(rules, method="llm", llm=LLMPass("rules used", "no document you may see has metadata to "
                                                                      "constrain (no LLM call made)"))
    try:
        completion = llm.complete(prompt_messages(question, visible, context), max_tokens=MAX_TOKENS,
                                  temperature=0.0)
    except BelegError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return replace(rules, method="llm", llm=LLMPass("rules used", f"the LLM call failed ({reason})",
                                                        getattr(llm, "name", "")))
    spent = LLMPass("rules used", "invalid JSON", completion.model, calls=1,
                    prompt_tokens=completion.usage.prompt_tokens, completion_tokens=completion.usage.completion_tokens)
    try:
        proposal = parse_reply(completion.text)
    except ProposalError as exc:
        return replace(rules, method="llm", llm=replace(spent, rejected=(Rejected("", completion.text[:200],
                                                                                  str(exc)),)))
    accepted, rejected = check_proposal(proposal, visible)
    constraints, agreed, overruled = merge(rules, accepted)
    report = replace(spent, outcome="used", reason="", proposed=proposal, agreed=tuple(agreed),
                     rejected=tuple(rejected + overruled))
    return replace(rules, constraints=constraints, method="llm", llm=report)


def add_usage(llm_trace: dict[str, Any], inferred: Inferred | None) -> None:
    """Count an LLM self-query pass in an answer's ``trace["llm"]`` (calls and tokens)."""
    used = getattr(inferred, "llm", None)
    if used is None or not used.calls:
        return
    llm_trace["calls"] = llm_trace.get("calls", 0) + used.calls
    llm_trace["tokens"] = llm_trace.get("tokens", 0) + used.tokens
    for key in ("prompt_tokens", "completion_tokens"):
        if key in llm_trace:
            llm_trace[key] += getattr(used, key)
    llm_trace["self_query_calls"] = used.calls


__all__ = ["FIELDS", "MAX_VALUES", "LLMPass", "ProposalError", "Rejected", "Visible", "add_usage",
           "check_proposal", "infer_with_llm", "merge", "normalise", "parse_reply", "prompt_messages"]
