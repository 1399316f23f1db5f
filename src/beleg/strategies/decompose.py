"""Decomposition: split a question that asks several things into sub-questions, search each.

"What are the maximum message size and the default max_delivery_attempts in Ferrolink 3.0?"
is answered by two different sections; one search with the whole question tends to find
the better-matching half and push the other out of the top hits. Each sub-question is
searched on its own, the hit lists are kept apart in :attr:`StrategyResult.groups`
(sub-question → hits, so an answerer can check that every part is covered) and fused with
RRF for the overall ranking, in which every sub-question's best hit keeps a place.

* **LLM method**: one call returns the independent sub-questions (one per line, at most
  four). Each is constraint-checked like a rewrite: versions, identifiers and products
  not in the question or conversation are removed; the question's single version and its
  product are carried into sub-questions that lost them; a question's identifier or
  version that no sub-question kept is appended to all of them.
* **Offline method**: syntactic decomposition for English and German — sentences ending
  in "?" and ";" are split; a sentence is split at ", and"/", und"/", sowie" and at
  "and"/"und" before a question word; coordinated identifiers ("E-5040 and E-5042") give
  one sub-question each, coordinated noun phrases ("the request ID and the webhook
  signature") one each when every part can stand alone (a lone lower-case English word
  like "attempts" in "retry window and attempts" cannot). A later clause that leans on the
  one before ("and what does it commit to in 3.0?") is resolved against it.

A question without a split is searched once, and the trace says so ("no decomposition:
single question"), which is not a silent fallback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from beleg.backends.llms.base import Message
from beleg.index.analyzer import STOPWORDS, detect_language
from beleg.query.conversation import follow_up
from beleg.query.versions import version_mentions
from beleg.strategies.base import StrategyContext, StrategyResult, fuse
from beleg.strategies.parallel import SubSearch, search_all
from beleg.strategies.rewrite import (
    Constraints,
    conversation_block,
    enforce_constraints,
    find_constraints,
    is_identifier,
    known_products,
    mentioned,
    output_lines,
    resolve_follow_up,
    tidy,
)
from beleg.types import Hit

MAX_SUBQUESTIONS = 4

DECOMPOSE_SYSTEM = """You split questions for a product documentation search engine into independent sub-questions.
Rules:
- If the question asks for several things, write one sub-question per thing, one per line, at most 4.
- If it asks for one thing only, write the question unchanged on a single line.
- Every sub-question must be understandable alone: no "it", "they", "both"; repeat what they refer to.
- Every sub-question keeps the constraints of the question that apply to it, exactly as written: product,
  version, identifiers such as error codes (E-4012), API paths (/api/v3), header and setting names.
- Add no product, version, identifier or number that is not in the question or the conversation.
- Write in the language of the question. No numbering, no explanation, no answers."""

DECOMPOSE_USER = """Earlier questions of the conversation (for reference only, oldest first):
{conversation}

Question: {question}

Sub-questions:"""

# ---------------------------------------------------------------------- offline splitting
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WH_WORDS = {
    "en": _words("what which who whom whose when where why how"),
    "de": _words("wie was welche welcher welches welchen welchem wann wo warum wer wen wem wieso weshalb wozu "
                 "wohin woher"),
}
_QUESTION_WORDS = _words(
    """what which who whom whose when where why how is are was were do does did can could will would should
    shall may might must has have had wie was welche welcher welches welchen welchem wann wo warum wer wen wem
    wieso weshalb wozu wohin woher ob ist sind war waren kann können darf dürfen muss müssen soll sollen
    wird werden gibt hat haben""")
_COORDINATORS = frozenset({"and", "und", "sowie", "or", "oder"})
# Words that end a coordinated noun phrase on its right (prepositions, question words, verbs of asking).
_BOUNDARY = _words(
    """in for on at with under from to by per during after before since within without into than as
    im in für bei unter mit seit ab nach vor auf über pro während ohne zum zur vom als
    mean means meant bedeuten bedeutet""") | _QUESTION_WORDS
_DETERMINERS = _words(
    """the a an this that these those its their our your my der die das den dem des ein eine einen einem einer
    eines ihre ihren ihrem ihr unser unsere unseren""")
_CLAUSE_SPLIT = re.compile(r",\s*(?:and|und|sowie|or|oder|but|aber)\s+|\s*;\s*", re.IGNORECASE)
# "and"/"und" directly before a wh-word of the sentence's language ("and what", "und wann"); not
# before auxiliaries ("and was not tampered with", "and have it go out" continue one question).
_WORD_SPLIT = {
    lang: re.compile(r"\s+(?:and|und|or|oder|sowie)\s+(?=(?:" + "|".join(sorted(words)) + r")\b)", re.IGNORECASE)
    for lang, words in _WH_WORDS.items()
}
_LEAN_STOP = _words("mean means meant bedeuten bedeutet") | _QUESTION_WORDS
_STOP = STOPWORDS["en"] | STOPWORDS["de"]


def _bare(word: str) -> str:
    return word.strip("`\"'„“”()[]{}").rstrip("?.,;:!")


def _clauses(sentence: str, language: str) -> list[str]:
    """Split one sentence at clause coordination (", and", ", und", "and what", ";")."""
    parts = [sentence]
    for pattern in (_CLAUSE_SPLIT, _WORD_SPLIT.get(language, _WORD_SPLIT["en"])):
        parts = [piece for part in parts for piece in _split_at(part, pattern)]
    return parts


def _split_at(text: str, pattern: re.Pattern[str]) -> list[str]:
    """Cut ``text`` at the matches of ``pattern`` whose right side is a clause: it starts with a
    question word or has three words or more (", and rate" ending a list is not a clause)."""
    matches = list(pattern.finditer(text))
    cuts = []
    for n, m in enumerate(matches):
        right = text[m.end():matches[n + 1].start() if n + 1 < len(matches) else len(text)].split()
        if right and (_bare(right[0]).casefold() in _QUESTION_WORDS or len(right) >= 3):
            cuts.append(m)
    pieces, start = [], 0
    for m in cuts:
        pieces.append(text[start:m.start()])
        start = m.end()
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _standalone(words: Sequence[str]) -> bool:
    """Whether a conjunct can stand alone: an identifier, a capitalised noun, or several words."""
    bare = [_bare(w) for w in words if _bare(w)]
    content = [w for w in bare if w.casefold() not in _STOP and w.casefold() not in _DETERMINERS]
    if not content:
        return False
    if any(is_identifier(w) for w in content):
        return True
    if len(bare) == 1:
        return bare[0][:1].isupper()  # German nouns; a lone English word shares its modifiers
    return True


def _split_coordination(clause: str) -> list[str] | None:
    """One clause with coordinated identifiers or noun phrases → one clause per conjunct (None: no split)."""
    words = clause.split()
    for i, word in enumerate(words):
        if word.casefold() not in _COORDINATORS or i == 0 or i == len(words) - 1:
            continue
        prev, nxt = _bare(words[i - 1]), _bare(words[i + 1])
        if is_identifier(prev) and is_identifier(nxt):
            start = i - 1
            while start > 0 and words[start - 1].endswith(",") and is_identifier(_bare(words[start - 1])):
                start -= 1
            end = i + 1
            while end + 2 < len(words) and words[end].endswith(",") and is_identifier(_bare(words[end + 1])):
                end += 1
            ids = [_bare(w) for w in words[start:i]] + [_bare(w) for w in words[i + 1:end + 1]]
            prefix, suffix = words[:start], words[end + 1:]
            tail = words[end][len(words[end].rstrip("?.!")):]
            return [" ".join([*prefix, ident, *suffix]) + ("" if suffix else tail) for ident in ids]
        # Noun phrases: the right conjunct runs to a boundary word or punctuation.
        end = i + 1
        while end < len(words) and _bare(words[end]).casefold() not in _BOUNDARY:
            end += 1
            if words[end - 1][-1:] in ",;?!.":
                break
        right = words[i + 1:end]
        if not right:
            continue
        start = i
        while start > 0 and i - start < len(right) + 2:
            candidate = _bare(words[start - 1]).casefold()
            if candidate in _BOUNDARY or words[start - 1].endswith(","):
                break
            start -= 1
            if candidate in _DETERMINERS:
                break
        left = words[start:i]
        if not left or not _standalone(left) or not _standalone(right):
            continue
        prefix, suffix = words[:start], words[end:]
        if not prefix and not suffix:
            continue  # "X and Y" alone: nothing is asked about them
        last = right[-1]
        tail = last[len(last.rstrip("?.!")):] if not suffix else ""
        right_words = [*right[:-1], last[:len(last.rstrip("?.!"))] or last] if tail else right
        return [" ".join([*prefix, *left, *suffix]) + tail, " ".join([*prefix, *right_words, *suffix]) + tail]
    return None


def _expand(clause: str, depth: int = 0) -> list[str]:
    split = _split_coordination(clause) if depth < 3 else None
    if not split:
        return [clause]
    return [part for piece in split for part in _expand(piece, depth + 1)]


def _lean_words(clause: str, drop: Sequence[str]) -> str:
    """The content of a clause for a follow-up that leans on it: identifiers and non-stopwords,
    without the terms in ``drop`` (the previous clause's versions when the follow-up has its own)."""
    kept = [w for w in (_bare(w) for w in clause.split())
            if w and w.casefold() not in _STOP and w.casefold() not in _LEAN_STOP
            and not any(mentioned(d, w) for d in drop)]
    return " ".join(kept)


def split_question(question: str, products: Sequence[str]) -> list[str]:
    """The offline decomposition of ``question`` (a list of one when there is nothing to split)."""
    sentences = [s.strip() for s in re.split(r"(?<=[?.!])\s+", question.strip()) if s.strip()]
    # Leading statements ("My webhook target answered 401.") are context for every sub-question.
    context: list[str] = []
    while len(sentences) > 1 and not sentences[0].endswith("?") and not _asks(sentences[0]):
        context.append(sentences.pop(0))
    language = detect_language(question)
    clauses = [c for s in sentences for c in _clauses(s, language)]
    if len(sentences) == 1 and context and len(clauses) == 1:
        return [question]
    resolved: list[str] = []
    for n, clause in enumerate(clauses):
        if n > 0 and follow_up(clause, clauses[:n]).follow_up:
            previous = clauses[n - 1]
            query, how = resolve_follow_up(clause, previous, products)
            if how.startswith("previous question with version"):
                clause = query
            else:
                own = version_mentions(clause, products)
                lean = _lean_words(previous, version_mentions(previous, products) if own else ())
                clause = f"{clause} ({lean})" if lean else clause
        resolved.append(clause)
    subs = [part for clause in resolved for part in _expand(clause)]
    if context:
        subs = [" ".join([*context, s]) for s in subs]
    subs = [_as_question(s) for s in subs]
    return list(dict.fromkeys(subs))


def _asks(sentence: str) -> bool:
    first = _bare(sentence.split()[0]).casefold() if sentence.split() else ""
    return first in _QUESTION_WORDS


def _as_question(text: str) -> str:
    text = tidy(text)
    text = text[:1].upper() + text[1:]
    return text if text.endswith(("?", ")")) or not text else f"{text}?"


# ---------------------------------------------------------------------- constraints
def carry_constraints(sub: str, question: Constraints, question_text: str) -> tuple[str, list[str]]:
    """Carry the question's single version and its product into a sub-question that lost them."""
    added = []
    if len(question.versions) == 1 and not version_mentions(sub, question.products):
        added.append(question.versions[0])
    for product in question.products:
        if not mentioned(product, sub):
            m = re.search(re.escape(product), question_text, re.IGNORECASE)
            added.insert(0, m.group(0) if m else product)
    if not added:
        return sub, []
    body = sub.rstrip("?")
    return f"{body} ({' '.join(added)})" + ("?" if sub.endswith("?") else ""), added


# ---------------------------------------------------------------------- strategy
class DecomposeStrategy:
    """Independent sub-questions, searched separately, kept apart in ``groups`` and fused."""

    name = "decompose"
    offline = True

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult:
        products = known_products(ctx)
        constraints = find_constraints(question, products)
        if ctx.llm is None:
            ctx.note("decompose method: offline syntactic decomposition")
            subs = split_question(question, products)
        else:
            ctx.note("decompose method: LLM sub-questions, constraint-checked")
            subs = self._llm_subquestions(question, ctx, products)
        if len(subs) > MAX_SUBQUESTIONS:
            ctx.note(f"{len(subs) - MAX_SUBQUESTIONS} sub-question(s) beyond {MAX_SUBQUESTIONS} dropped: "
                     + " | ".join(subs[MAX_SUBQUESTIONS:]))
            subs = subs[:MAX_SUBQUESTIONS]
        if len(subs) <= 1:
            ctx.note("no decomposition: single question")
            return StrategyResult(ctx.search(question, step="search"), ctx.trace)
        carried = []
        for i, sub in enumerate(subs):
            subs[i], added = carry_constraints(sub, constraints, question)
            if added:
                carried.append(f"{', '.join(added)} → sub-question {i + 1}")
        if carried:
            ctx.note("carried over from the question: " + "; ".join(carried))
        missing = [t for t in (*constraints.versions, *constraints.identifiers)
                   if not any(mentioned(t, sub) for sub in subs)]
        if missing:
            ctx.note(f"no sub-question kept {', '.join(missing)}; appended to every sub-question")
            subs = [f"{sub} {' '.join(missing)}" for sub in subs]
        ctx.note(f"{len(subs)} sub-questions: " + " | ".join(subs))
        searched = subs[:max(ctx.rounds_left, 0)]
        if len(searched) < len(subs):
            ctx.note(f"retrieval budget spent: {len(subs) - len(searched)} sub-question(s) not searched: "
                     + " | ".join(subs[len(searched):]))
        # Independent sub-searches run in parallel threads; results and trace keep this order.
        results = search_all(ctx, [SubSearch(sub, f"sub-{i}") for i, sub in enumerate(searched, 1)])
        groups: dict[str, list[Hit]] = dict(zip(searched, results))
        return StrategyResult(cover(list(groups.values()), ctx.k), ctx.trace, groups)

    def _llm_subquestions(self, question: str, ctx: StrategyContext, products: list[str]) -> list[str]:
        messages = [Message("system", DECOMPOSE_SYSTEM),
                    Message("user", DECOMPOSE_USER.format(conversation=conversation_block(ctx.context),
                                                          question=question))]
        reply = ctx.complete(messages, step="decompose-llm", max_tokens=250)
        allowed = "\n".join([question, *ctx.context])
        subs: list[str] = []
        for i, line in enumerate(output_lines(reply), 1):
            checked = enforce_constraints(line, allowed, (), products).note_to(ctx, f"sub-question {i} check")
            if not checked.rejected and checked.query not in subs:
                subs.append(checked.query)
        if not subs:
            ctx.note("the LLM returned no usable sub-question")
            return [question]
        return subs



def cover(lists: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """RRF of the sub-questions' lists, then each list's best hit is guaranteed a place.

    RRF favours chunks that several sub-questions found (often overview pages); a part whose
    best hit fell out of the top ``k`` would go unanswered, so that hit replaces the lowest
    fused hit that is no list's best.
    """
    fused = fuse(lists, k)
    best = list({hits[0].chunk_id: hits[0] for hits in lists if hits}.values())
    ids = {h.chunk_id for h in fused}
    for hit in best:
        if hit.chunk_id in ids:
            continue
        best_ids = {b.chunk_id for b in best}
        for i in range(len(fused) - 1, -1, -1):
            if len(fused) < k:
                break
            if fused[i].chunk_id not in best_ids:
                ids.discard(fused[i].chunk_id)
                del fused[i]
        fused.append(hit)
        ids.add(hit.chunk_id)
    return fused
