"""Query rewriting: turn a question (and the conversation it belongs to) into one search query.

A follow-up such as "And in 2.4?" cannot be searched alone, and a chatty question
("Our integration keeps getting told to slow down, what is going on?") searches worse than
its point. With an LLM, one call rewrites the question into a standalone search query.
LLMs like to "help" by adding a product version or an identifier the user never named,
which silently narrows retrieval to the wrong documents; so the rewrite is **checked in
code** (:func:`enforce_constraints`):

* identifiers, versions and products of the question must survive (missing ones are
  appended);
* versions, identifiers, numbers and products that are neither in the question nor in the
  conversation are removed; a rewrite left without content is rejected.

Without an LLM the method is conversation-aware resolution only: a follow-up is searched
together with the previous question (an elliptical "And in 2.4?" becomes the previous
question with its version replaced); a standalone question is searched as asked. Only
*questions* of the conversation are used, never earlier answers.

The constraint helpers here are shared by the other query strategies (multi-query, HyDE,
decompose).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from beleg.backends.llms.base import Message
from beleg.index.analyzer import STOPWORDS
from beleg.query.conversation import Conversation, earlier_questions, judged
from beleg.query.versions import version_mentions
from beleg.strategies.base import StrategyContext, StrategyResult

# ---------------------------------------------------------------------- constraints
# A raw token as the analyzer sees it (letters/digits joined by identifier punctuation).
_TOKEN = re.compile(r"/?[\w{}]+(?:[./\-:#@+]+[\w{}]+)*/?", re.UNICODE)
_CAMEL = re.compile(r"[a-z][A-Z]")
_PREFIXED = re.compile(r"^[A-Z][A-Z0-9]{0,3}-[A-Za-z0-9]")  # E-4012, X-Request-Id, INC-NW-7802
_DOTTED = re.compile(r"\w{2,}\.\w{2,}")  # mq-nordwind-01.internal, config.yaml (not "z.B")
_STOP = STOPWORDS["en"] | STOPWORDS["de"]


def is_identifier(token: str) -> bool:
    """Whether a token names something exactly: it has a digit (versions, codes, numbers),
    ``_`` or ``/`` (settings, paths), a dotted name (hosts), a code prefix (``E-4012``,
    ``X-Request-Id``) or inner camel case (``maxDeliveryAttempts``).

    Hyphenated words ("dead-letter", "Webhook-Abonnement") are words, not identifiers.
    """
    return (any(c.isdigit() for c in token) or any(c in token for c in "_/{")
            or bool(_DOTTED.search(token) or _PREFIXED.match(token) or _CAMEL.search(token)))


def identifiers(text: str) -> list[str]:
    """Identifier tokens of ``text`` in order, without repeats (see :func:`is_identifier`)."""
    out = []
    for m in _TOKEN.finditer(text.replace("`", " ")):
        token = m.group(0).rstrip("/:.-")
        if token and is_identifier(token):
            out.append(token)
    return list(dict.fromkeys(out))


def term_pattern(term: str) -> re.Pattern[str]:
    # Not inside a longer token; a version may carry a "v" ("v3.0" mentions "3.0").
    return re.compile(r"(?<![\w.\-/])v?" + re.escape(term) + r"(?![\w]|[.\-/]\w)", re.IGNORECASE)


def mentioned(term: str, text: str) -> bool:
    """Whether ``term`` occurs in ``text`` as a whole token (case-insensitive)."""
    return bool(term_pattern(term).search(text))


def _mentioned_loosely(term: str, text: str) -> bool:
    """Whole token, or part of a longer identifier ("4012" of "E-4012", "v3" of "/api/v3")."""
    if mentioned(term, text):
        return True
    return bool(re.search(r"(?<![\w])" + re.escape(term) + r"(?![\w])", text, re.IGNORECASE))


def known_products(ctx: StrategyContext) -> list[str]:
    """Product names of the documents the principal may read (``product`` metadata)."""
    return sorted(ctx.kb.metadata_values("product", ctx.principal))


@dataclass(frozen=True, slots=True)
class Constraints:
    """What a question pins down: versions, identifiers (codes, paths, settings, hosts) and products."""

    versions: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    products: tuple[str, ...] = ()

    @property
    def terms(self) -> tuple[str, ...]:
        """All of them, versions first, without repeats."""
        return tuple(dict.fromkeys((*self.versions, *self.identifiers, *self.products)))

    def __bool__(self) -> bool:
        return bool(self.terms)


def find_constraints(text: str, products: Iterable[str]) -> Constraints:
    products = list(products)
    versions = tuple(version_mentions(text, products))
    ids = tuple(t for t in identifiers(text) if not any(mentioned(v, t) and len(t) <= len(v) + 1 for v in versions))
    named = tuple(m.group(0).lstrip("v") for p in products if (m := term_pattern(p).search(text)))
    return Constraints(versions, ids, named)


@dataclass(slots=True)
class Checked:
    """A generated query after the constraint check."""

    query: str
    removed: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)
    rejected: str = ""  # why the query was rejected ("" = accepted)

    def describe(self, label: str) -> str:
        parts = []
        if self.removed:
            parts.append(f"removed {', '.join(self.removed)} (not in the question or conversation)")
        if self.appended:
            parts.append(f"appended {', '.join(self.appended)} (dropped from the question)")
        if self.rejected:
            parts.append(f"rejected: {self.rejected}")
        return f"{label}: " + "; ".join(parts) if parts else ""

    def note_to(self, ctx: StrategyContext, label: str) -> Checked:
        """Note in ``ctx``'s trace what the check changed or why it rejected the query; self."""
        detail = self.describe(label)
        if detail:
            ctx.note(detail)
        return self


def enforce_constraints(query: str, allowed_text: str, require: Iterable[str], products: Iterable[str], *,
                        check_identifiers: bool = True) -> Checked:
    """Check a generated query against the question's constraints.

    Args:
        query: What the LLM wrote.
        allowed_text: The question and the conversation: every version, identifier, number
            and product of ``query`` must occur here, or it is removed.
        require: Terms that must survive (appended when ``query`` lacks them).
        products: Known product names.
        check_identifiers: Also remove identifiers and numbers that ``allowed_text`` lacks
            (False: only versions and products, for text whose job is to use the
            documentation's own names, such as alternative phrasings).
    """
    products = list(products)
    checked = Checked(query)
    text = query
    invented = identifiers(text) if check_identifiers else version_mentions(text, products)
    for token in invented:
        if not _mentioned_loosely(token, allowed_text):
            checked.removed.append(token)
            text = _with_cue(token).sub(" ", text)
    for product in products:
        if mentioned(product, text) and not mentioned(product, allowed_text):
            checked.removed.append(product)
            text = _with_cue(product).sub(" ", text)
    if checked.removed:
        text = tidy(text)
    for term in require:
        if not mentioned(term, text):
            checked.appended.append(term)
            text = f"{text} {term}".strip()
    checked.query = text
    if not _content(text, checked.appended):
        checked.rejected = "nothing searchable left"
    return checked


_CUES = r"(?:in|for|of|on|version|release|im|für|fuer|bei|ab|seit|von|unter|mit|with)"


def _with_cue(term: str) -> re.Pattern[str]:
    """A term with the preposition or "version" right before it ("in 4.0", "version 4.0")."""
    return re.compile(rf"(?:\b{_CUES}\s+){{0,2}}" + term_pattern(term).pattern, re.IGNORECASE)


def tidy(text: str) -> str:
    text = re.sub(r"\(\s*\)", " ", text)
    text = re.sub(r"\s+([?.,;:!])", r"\1", text)
    return re.sub(r"\s{2,}", " ", text).strip(" ,;")


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` that are not English or German stopwords (nor single letters)."""
    return [w for w in re.findall(r"\w+", text.casefold()) if len(w) > 1 and w not in _STOP]


def _content(text: str, appended: Sequence[str]) -> bool:
    """Whether text has a searchable word besides what was appended."""
    rest = text
    for term in appended:
        rest = term_pattern(term).sub(" ", rest)
    return bool(content_words(rest))


# ---------------------------------------------------------------------- LLM output
_BULLET = re.compile(r"^\s*(?:[-*•–]|\d{1,2}[.):]|\(\d{1,2}\))\s*")
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:query|search query|rewritten query|rewrite|suchanfrage|anfrage|"
                    r"phrasing|formulierung|sub-?question|teilfrage|passage|q\d?)\s*\d*\s*(?:\*\*)?\s*:\s*",
                    re.IGNORECASE)
_QUOTES = ('"', "'", "“", "”", "„", "«", "»", "`")


def clean_line(line: str) -> str:
    """One line of LLM output without bullets, numbering, a leading label or wrapping quotes."""
    line = _LABEL.sub("", _BULLET.sub("", line.strip())).strip()
    while len(line) >= 2 and line[0] in _QUOTES and line[-1] in _QUOTES and line[0] not in line[1:-1]:
        line = line[1:-1].strip()
    return line


def output_lines(text: str) -> list[str]:
    """Non-empty cleaned lines of an LLM reply, without repeats (case-insensitive)."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = clean_line(raw)
        if line and not line.endswith(":"):
            out.setdefault(line.casefold(), line)
    return list(out.values())


def conversation_block(context: Sequence[str]) -> str:
    if not context:
        return "(none)"
    return "\n".join(f"{i}. {q}" for i, q in enumerate(context, 1))


# ---------------------------------------------------------------------- offline resolution
_OPENER = re.compile(r"^\s*(?:and|und|also|what about|how about|und was ist mit|was ist mit|und wie|and how|"
                     r"and what|then|dann|but|aber)\b", re.IGNORECASE)
_FRAME_WORDS = {"version", "versions", "release", "releases", "versionen", "fassung", "about", "mit", "für", "fur",
                "with", "in", "for", "bei", "ab", "since", "seit", "under", "unter", "der", "die", "das"}


def resolve_follow_up(question: str, previous: str, products: Sequence[str]) -> tuple[str, str]:
    """Resolve a follow-up against the previous question: ``(query, how)``.

    An elliptical follow-up that only names other versions ("And in 2.4?", "Und für 1.8?")
    becomes the previous question with its versions replaced; any other follow-up is
    searched as previous question + follow-up.
    """
    new = version_mentions(question, products)
    old = version_mentions(previous, products)
    rest = _OPENER.sub(" ", question)
    for term in (*new, *products):
        rest = term_pattern(term).sub(" ", rest)
    words = [w for w in content_words(rest) if w not in _FRAME_WORDS]
    if len(new) == 1 and old and not words:
        replaced = previous
        for version in old:
            replaced = term_pattern(version).sub(new[0], replaced)
        return replaced, f"previous question with version {', '.join(old)} replaced by {new[0]}"
    return f"{previous} {question}", "previous question + follow-up"


def offline_query(question: str, context: Conversation, products: Sequence[str]) -> tuple[str, str]:
    """The conversation-aware query without an LLM: ``(query, how)``; ``context`` is the earlier
    questions or their judgement for this question (:func:`beleg.query.conversation.judged`)."""
    conversation = judged(question, context)
    if conversation.follow_up:
        return resolve_follow_up(question, conversation.context[-1], products)
    if earlier_questions(context):
        return question, f"standalone question (not a follow-up: {conversation.reason}), searched as asked"
    return question, "no conversation, searched as asked"


# ---------------------------------------------------------------------- strategy
REWRITE_SYSTEM = """You rewrite questions into search queries for a product documentation search engine.
Rules:
- Write ONE standalone search query on one line, in the language of the question. No explanation.
- Resolve references ("it", "that", "and in 2.4?") using the earlier questions of the conversation.
- Keep every constraint of the question exactly as written: product, version, identifiers such as
  error codes (E-4012), API paths (/api/v3), header and setting names (retry_window_hours).
- Add no product, version, identifier or number that is not in the question or the conversation.
- The conversation shows what the user asked before, not facts: never treat earlier turns' claims as true
  and never put answers into the query."""

REWRITE_USER = """Earlier questions of the conversation (oldest first):
{conversation}

Question: {question}

Search query:"""

_MAX_WORDS = 60


class RewriteStrategy:
    """One search with a rewritten query (LLM, constraint-checked) or the conversation-resolved question."""

    name = "rewrite"
    offline = True

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        products = known_products(ctx)
        fallback, how = offline_query(question, ctx.conversation, products)
        if ctx.llm is None:
            ctx.note(f"rewrite method: offline conversation resolution ({how})")
            return StrategyResult(ctx.search(fallback, step="rewritten" if fallback != question else "search"),
                                  ctx.trace)
        messages = [Message("system", REWRITE_SYSTEM),
                    Message("user", REWRITE_USER.format(conversation=conversation_block(ctx.context),
                                                         question=question))]
        reply = ctx.complete(messages, step="rewrite-llm", max_tokens=120)
        ctx.note("rewrite method: LLM rewrite, constraint-checked")
        lines = output_lines(reply)
        allowed = "\n".join([question, *ctx.context])
        require = find_constraints(question, products).terms
        if not lines:
            checked = Checked("", rejected="the LLM returned no query")
        elif len(lines[0].split()) > _MAX_WORDS:
            checked = Checked(lines[0], rejected=f"longer than {_MAX_WORDS} words (an answer, not a query)")
        else:
            checked = enforce_constraints(lines[0], allowed, require, products)
        if checked.note_to(ctx, "rewrite check").rejected:
            ctx.note(f"rewrite rejected; searched with the question ({how})")
            return StrategyResult(ctx.search(fallback, step="search"), ctx.trace)
        return StrategyResult(ctx.search(checked.query, step="rewritten"), ctx.trace)
