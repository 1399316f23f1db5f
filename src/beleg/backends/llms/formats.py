"""The output format of each of Beleg's structured LLM calls, for backends that can enforce one.

A hosted model follows "reply with one JSON object" well enough; a 135M–1.5B local model
does not, and a reply the caller cannot parse wastes the call (the strategy falls back to
its offline method). llama.cpp can constrain decoding with a grammar, so the local backend
asks this module which format a call expects and makes any other output impossible.

The calls are recognised by their system prompt, which each call site owns as a constant:
the formats below are keyed by those constants (imported lazily, so a changed prompt moves
its key along with it). Line-oriented calls (rewrite, multi-query, decomposition) keep their
text format and get a GBNF grammar for it (one line; exactly three lines; one to four lines);
JSON calls (gap query, bridge, judge, claim verifier, self-query, router) get a JSON schema; an LLM
answer gets a grammar that closes every segment with the label of a source it was shown. A call whose system
prompt is not listed is unconstrained. ``tests/backends/test_llm_local.py`` runs each
strategy with a recording scripted LLM and checks that its call is recognised here, so a
prompt edit that breaks the match fails a test instead of silently dropping the constraint.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from beleg.backends.llms.base import Message

#: One line of text, no line break; length-capped so a rambling model stops.
_LINE = r'line ::= [^\n]{1,200}'


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """What a call must return: a GBNF ``grammar`` or a ``json_schema`` (exactly one)."""

    name: str
    grammar: str | None = None
    json_schema: dict[str, Any] | None = None


def lines_grammar(minimum: int, maximum: int) -> str:
    """GBNF for ``minimum``..``maximum`` non-empty lines separated by single line breaks."""
    optional = "".join(' ("\\n" line' for _ in range(maximum - minimum)) + ")?" * (maximum - minimum)
    required = ' "\\n" '.join(["line"] * minimum)
    return f"{_LINE}\nroot ::= {required}{optional}"


def cited_answer_grammar(refusal: str, labels: Sequence[str], max_segments: int = 5) -> str:
    """GBNF for an LLM answer: exactly ``refusal``, or up to ``max_segments`` segments of text
    each closed by citation labels drawn from ``labels`` (``... [S1].``, ``... [S1, S3]``).

    Why: measured with Qwen2.5-1.5B, answers right in substance came back with no label at
    all and failed the citation checks twice (docs/strategies-results.md); a local model
    decoded under this grammar cannot leave a claim unlabelled or cite a source it was not
    shown (SmolLM2 cited S4-S9 with two sources). Whether the label is the right one, and
    the quote exact, is still checked in code afterwards. Segment text holds no square
    brackets or line breaks, so a label can only come where the grammar puts it; 300
    characters per segment keeps a rambling model from writing pages before it must cite.
    """
    if not labels:  # nothing shown, nothing to cite
        return f'root ::= "{refusal}"'
    more = "".join(' (sep segment' for _ in range(max_segments - 1)) + ")?" * (max_segments - 1)
    label = " | ".join(f'"{name}"' for name in labels)
    return "\n".join([
        f'root ::= "{refusal}" | segment{more}',
        'segment ::= [^\\[\\]\\n]{1,300} "[" label ("," " "? label)* "]" "."?',
        f"label ::= {label}",
        'sep ::= " " | "\\n"',
    ])


_SOURCE_LABEL = re.compile(r'<source label="(S\d+)"')


def cited_answer_format(messages: Sequence[Message]) -> OutputFormat:
    """The answer format for this prompt: the labels are those of the sources it shows."""
    from beleg.answer.types import REFUSAL

    labels = sorted({m for msg in messages if msg.role == "user" for m in _SOURCE_LABEL.findall(msg.content)},
                    key=lambda name: int(name[1:]))
    return OutputFormat("cited-answer", grammar=cited_answer_grammar(REFUSAL, labels))


def _nullable_string() -> dict[str, Any]:
    return {"anyOf": [{"type": "string", "maxLength": 300}, {"type": "null"}]}


def _object(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


#: Scores in steps of 0.05: llama.cpp's schema engine does not enforce number ranges
#: (SmolLM2 answered "score": 72 under minimum/maximum), but it does enforce an enum.
SCORE_VALUES = [round(i / 20, 2) for i in range(21)]
SCORE_SCHEMA = _object({"score": {"enum": SCORE_VALUES},
                        "reason": {"type": "string", "maxLength": 300}}, ["score", "reason"])
VERDICT_SCHEMA = _object({"supported": {"type": "boolean"}, "reason": {"type": "string", "maxLength": 300}},
                         ["supported", "reason"])
GAP_SCHEMA = _object({"missing": _nullable_string(), "query": {"type": "string", "maxLength": 200}}, ["missing"])
BRIDGE_SCHEMA = _object({"bridge": _nullable_string(), "query": {"type": "string", "maxLength": 200}}, ["bridge"])
#: Self-query: every field optional; the values are checked against the visible ones after
#: decoding (beleg.query.self_query_llm), the schema only makes the reply parseable.
_VALUES = {"anyOf": [{"type": "string", "maxLength": 60},
                     {"type": "array", "items": {"type": "string", "maxLength": 60}, "maxItems": 4}]}
_DAY = {"type": "string", "maxLength": 10}
#: The routes of beleg.strategies.auto (kept in step by tests/backends/test_llm_local.py).
ROUTE_SCHEMA = _object({"route": {"enum": ["none", "single", "decompose", "multi-hop", "iterative"]},
                        "reason": {"type": "string", "maxLength": 120}}, ["route", "reason"])
SELF_QUERY_SCHEMA = _object({"product": _VALUES, "version": _VALUES, "status": _VALUES, "language": _VALUES,
                             "date": _object({"from": _DAY, "before": _DAY}, [])}, [])


#: A call's format: fixed, or built from the call's messages.
FormatRule = OutputFormat | Callable[[Sequence[Message]], OutputFormat]


@functools.cache
def _known_formats() -> tuple[tuple[str, FormatRule], ...]:
    """(system prompt prefix, format) for every structured call; prefixes end before any
    ``{placeholder}`` the call site fills in. A format that depends on the prompt is a
    function of its messages (the cited answer: the labels the prompt shows)."""
    from beleg.answer.prompt import SYSTEM_PROMPT as ANSWER_SYSTEM
    from beleg.answer.support import VERIFIER_SYSTEM
    from beleg.evaluate.answers import JUDGE_SYSTEM
    from beleg.query.self_query_llm import SYSTEM as SELF_QUERY_SYSTEM
    from beleg.strategies import iterative
    from beleg.strategies.auto import ROUTER_SYSTEM
    from beleg.strategies.decompose import DECOMPOSE_SYSTEM, MAX_SUBQUESTIONS
    from beleg.strategies.multi_query import MULTI_QUERY_SYSTEM
    from beleg.strategies.rewrite import REWRITE_SYSTEM

    rows: list[tuple[str, FormatRule]] = [
        (REWRITE_SYSTEM, OutputFormat("rewrite", grammar=lines_grammar(1, 1))),
        (MULTI_QUERY_SYSTEM, OutputFormat("multi-query", grammar=lines_grammar(3, 3))),
        (DECOMPOSE_SYSTEM, OutputFormat("decompose", grammar=lines_grammar(1, MAX_SUBQUESTIONS))),
        (iterative._GAP_SYSTEM, OutputFormat("gap", json_schema=GAP_SCHEMA)),
        # multi_hop writes its bridge prompt inline; the drift test checks this prefix.
        ("You resolve multi-hop questions.", OutputFormat("bridge", json_schema=BRIDGE_SCHEMA)),
        (JUDGE_SYSTEM, OutputFormat("judge", json_schema=SCORE_SCHEMA)),
        (VERIFIER_SYSTEM, OutputFormat("verifier", json_schema=VERDICT_SCHEMA)),
        (ANSWER_SYSTEM, cited_answer_format),  # built per prompt: the labels it shows
        (SELF_QUERY_SYSTEM, OutputFormat("self-query", json_schema=SELF_QUERY_SCHEMA)),
        (ROUTER_SYSTEM, OutputFormat("router", json_schema=ROUTE_SCHEMA)),
    ]
    return tuple((prompt.split("{", 1)[0], fmt) for prompt, fmt in rows)


def format_for(messages: Sequence[Message]) -> OutputFormat | None:
    """The output format the call with these messages expects; None for free text."""
    system = next((m.content for m in messages if m.role == "system"), None)
    if system is None:
        return None
    for prefix, fmt in _known_formats():
        if system.startswith(prefix):
            return fmt(messages) if callable(fmt) else fmt
    return None


#: Longest string argument the emulation allows: a small model once filled a document id
#: with 600 digits until max_tokens cut the call off.
MAX_ARGUMENT_CHARS = 300


def _capped(schema: Any) -> Any:
    """``schema`` with ``maxLength`` on every string that has none (nested objects too)."""
    if isinstance(schema, list):
        return [_capped(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _capped(value) for key, value in schema.items()}
    if out.get("type") == "string" and "maxLength" not in out and "enum" not in out:
        out["maxLength"] = MAX_ARGUMENT_CHARS
    return out


def tool_call_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON a model without native tool calling must write for one turn: either
    ``{"tool_calls": [{"name", "arguments"}, ...]}`` with each tool's own argument schema,
    or ``{"answer": "..."}`` when it is done."""
    calls = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = _capped(function.get("parameters") or {"type": "object"})
        calls.append(_object({"name": {"const": function["name"]}, "arguments": parameters}, ["name", "arguments"]))
    call = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return {"anyOf": [_object({"tool_calls": {"type": "array", "items": call, "minItems": 1, "maxItems": 4}},
                              ["tool_calls"]),
                      _object({"answer": {"type": "string"}}, ["answer"])]}


__all__ = ["OutputFormat", "format_for", "lines_grammar", "tool_call_schema"]
