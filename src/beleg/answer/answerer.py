"""Answer a question from the index: retrieve → assess → answer (extractive or LLM) → verify.

The same evidence assessment, conflict detection and verification run for every backend;
only the wording step differs. An LLM answer that fails verification is regenerated
once with the problems listed; if it fails again it is returned marked unverified, with
its problems, never silently passed off as checked.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from beleg.answer.citations import is_refusal, verify_answer, verify_quotes
from beleg.answer.conflicts import detect_conflicts
from beleg.answer.evidence import GovernancePolicy, Target, assess, find_target, statuses_from_filter
from beleg.answer.extractive import MIN_COVERAGE, REFUSE_BELOW, Extract, below, choose, extract_answer
from beleg.answer.prompt import Order, build_prompt, regenerate_message
from beleg.answer.quarantine import shown_value
from beleg.answer.scoring import SentenceScorer, candidate_sentences
from beleg.answer.support import (
    FITTED_MIN_CONFIDENCE,
    Support,
    asked_kind,
    extractive_support,
    llm_support,
    quote_verifier_check,
    rule_support,
    unmentioned,
    unused_words,
    with_verifier,
)
from beleg.answer.types import REFUSAL, WITHHELD, Answer, Citation, Conflict, Source
from beleg.backends.llms.base import LLM, Completion, Message
from beleg.errors import ConfigError
from beleg.index.analyzer import detect_language
from beleg.index.filters import Cmp, FilterLike, combine
from beleg.query.conversation import FollowUp, follow_up, retrieval_query
from beleg.query.intent import Intent, no_retrieval_intent, without_pleasantries
from beleg.query.self_query import disabled_json, self_query_mode
from beleg.query.versions import version_mentions
from beleg.retrieve.fusion import check_fusion_options
from beleg.sentences import continued_table_header
from beleg.types import ANONYMOUS, Hit, Principal

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase


@dataclass(frozen=True, slots=True)
class AnswerOptions:
    """How to answer. ``k`` sources are retrieved; the LLM sees as many as ``budget_tokens`` allows."""

    k: int = 8
    mode: str = "hybrid"
    #: Retrieval strategy (see :mod:`beleg.strategies`); "hybrid" is one search (plus a
    #: version-pinned one when the question names a version).
    strategy: str = "hybrid"
    policy: GovernancePolicy = field(default_factory=GovernancePolicy)
    refuse_below: float = REFUSE_BELOW
    min_coverage: float = MIN_COVERAGE
    budget_tokens: int = 3000
    order: Order = "rank"
    max_tokens: int = 700
    regenerate: bool = True
    #: Apply the question's self-query constraints to retrieval (:mod:`beleg.query.self_query`):
    #: True/"rules" by rule, "llm" also asks the answering LLM (checked against visible values),
    #: "auto" is "llm" when an LLM answers, False/"off" none.
    self_query: bool | str = True
    #: Refuse an answer whose confidence (:mod:`beleg.answer.support`) is below this; the refusal
    #: still shows the closest passages with their citations. None (the default): for the
    #: offline extractive answerer :data:`~beleg.answer.support.FITTED_MIN_CONFIDENCE`, chosen on
    #: development data for >= 90 % right answers among those given (docs/benchmarks.md); for
    #: LLM answers 0, since the confidence model was not fitted on them. 0 answers whenever the
    #: older rules (sentence score, coverage, anchors) do.
    min_confidence: float | None = None
    #: With an LLM: also ask it, per claim, whether the cited text supports it (one call per claim).
    llm_verifier: bool = False
    #: An LLM that checks every answer (None: none does). An extractive answer: it copies the
    #: answer out of the quote's surroundings, and what it copies must be in the quote (one call;
    #: :func:`~beleg.answer.support.quote_verifier_check`). An LLM answer: it judges each claim,
    #: as ``llm_verifier`` has the answering LLM do. A failed check makes the answer unsupported
    #: and halves its confidence, so the default floor withholds it.
    verifier: Any = None
    #: With an LLM: refuse when its answer still fails the citation checks after the one
    #: regeneration, instead of returning it marked unverified. None: the backend decides
    #: (its ``refuse_unverified`` attribute; True for local models, which invent answers with
    #: citations that do not check out far more often, see docs/llm.md).
    refuse_unverified: bool | None = None
    #: Retrieval options of every search an answer makes (the plain one, the version-pinned
    #: one, each of a strategy's), as ``beleg search`` takes them: fusion ``rrf`` (k=``rrf_k``)
    #: or ``weighted`` (``weights`` = bm25, dense), MMR diversity ``mmr`` (None: off).
    fusion: str = "rrf"
    rrf_k: int = 60
    weights: tuple[float, float] = (1.0, 1.0)
    mmr: float | None = None
    #: Re-score fused candidates with this reranker on every search (None: the index's own
    #: ``kb.techniques``, e.g. ``--rerank``).
    reranker: Any = None

    def __post_init__(self) -> None:
        check_fusion_options(self.weights, self.mmr)
        if self.fusion not in ("rrf", "weighted"):
            raise ConfigError(f"fusion {self.fusion!r} is not known; use rrf or weighted")

    def confidence_floor(self, llm: bool) -> float:
        """The ``min_confidence`` in force for an extractive (``llm`` False) or an LLM answer."""
        if self.min_confidence is not None:
            return self.min_confidence
        return 0.0 if llm else FITTED_MIN_CONFIDENCE

    def search_options(self) -> dict[str, Any]:
        """The keyword arguments of :meth:`KnowledgeBase.search` these options add (one place, so
        a strategy's searches get what the plain answer search gets)."""
        return {"fusion": self.fusion, "rrf_k": self.rrf_k, "weights": tuple(self.weights),
                "mmr_lambda": self.mmr, "reranker": self.reranker}


class _Usage:
    def __init__(self) -> None:
        self.calls = 0
        self.prompt = 0
        self.completion = 0

    def add(self, c: Completion) -> None:
        self.calls += 1
        self.prompt += c.usage.prompt_tokens
        self.completion += c.usage.completion_tokens


class _Counted:
    """The answering LLM as the claim verifier, its calls counted in the answer's usage."""

    def __init__(self, llm: LLM, usage: _Usage) -> None:
        self.llm, self.usage = llm, usage

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        completion = self.llm.complete(list(messages), **kwargs)
        self.usage.add(completion)
        return completion


def _claim_verifier(llm: LLM, usage: _Usage, opts: AnswerOptions) -> _Counted | None:
    """Who checks an LLM answer's claims: ``opts.verifier``, else the answering LLM with ``llm_verifier``."""
    if opts.verifier is not None:
        return _Counted(opts.verifier, usage)
    return _Counted(llm, usage) if opts.llm_verifier else None


def _merge(*lists: Sequence[Hit]) -> list[Hit]:
    """Interleave result lists, first occurrence of each chunk wins."""
    out: dict[str, Hit] = {}
    for i in range(max((len(x) for x in lists), default=0)):
        for hits in lists:
            if i < len(hits) and hits[i].chunk_id not in out:
                out[hits[i].chunk_id] = hits[i]
    return list(out.values())


def with_table_leads(kb: Any, sources: list[Source], principal: Principal | None) -> list[Source]:
    """Sources whose chunk opens inside a long table (cut between rows; chunking rules 3), with
    that table's header row from the document, so their first rows read "Header: value" as the
    rows of the table's first chunk do. An instruction-like header is not used (quarantine)."""
    out: list[Source] = []
    texts: dict[str, str | None] = {}  # one load per document, however many of its chunks are sources
    for src in sources:
        lead = None
        if src.hit.start > 0 and src.hit.text.lstrip().startswith("|"):
            if src.hit.doc_id not in texts:
                doc = kb.document(src.hit.doc_id, principal)
                texts[src.hit.doc_id] = doc.text if doc is not None else None
            text = texts[src.hit.doc_id]
            lead = continued_table_header(text, src.hit.start) if text is not None else None
        out.append(replace(src, table_lead=lead) if lead and shown_value(lead) == lead else src)
    return out


def answer_question(kb: KnowledgeBase, question: str, *, principal: Principal | None = None,
                    filters: FilterLike = None, where: str | None = None, context: Sequence[str] = (),
                    llm: LLM | None = None, options: AnswerOptions | None = None,
                    on_token: Callable[[str], None] | None = None) -> Answer:
    """Answer ``question`` as ``principal`` from ``kb``; see :class:`beleg.answer.types.Answer`."""
    opts = options or AnswerOptions()
    principal = principal or ANONYMOUS
    t0 = time.perf_counter()
    intent = no_retrieval_intent(question)
    if intent is not None:  # arithmetic or small talk: answered by rule, no search, no sources
        return _no_retrieval(question, intent, t0)
    expr = combine(filters, where)
    # Earlier questions count only for a follow-up: one that names its own subject is searched
    # and answered as if asked alone (no inherited version, no earlier question in its search).
    # Judged once: the self-query, the version target, the search query and a strategy take this judgement.
    conversation = follow_up(question, context)
    traced_conversation = bool(context)
    context = conversation.context
    # Self-query reads the user's question (and conversation) once; every search applies it.
    sq_mode = self_query_mode(opts.self_query, llm is not None)
    inferred = kb.infer_constraints(question, principal, filters=expr, context=conversation,
                                    llm=llm if sq_mode == "llm" else None) if sq_mode != "off" else None
    self_query = inferred if inferred is not None else False
    versions = kb.metadata_values("version", principal)
    products = kb.metadata_values("product", principal)
    target = find_target(question, expr, conversation, versions, products)
    # "older versions", "veraltete Dokumente" or "--where status = historical": the asker asked
    # for those sources, so they may answer (the self-query filter already narrowed to them).
    asked_statuses = statuses_from_filter(expr) or statuses_from_filter(
        inferred.overridden_by(expr).filter_expr() if inferred is not None else None)
    if asked_statuses:
        target = replace(target, statuses=asked_statuses)

    query = retrieval_query(question, conversation)
    asked = asked_question(question, conversation, sorted(products))
    queries = [query]
    strategy_trace: dict[str, Any] | None = None
    groups: dict[str, list[Hit]] | None = None
    if opts.strategy != "hybrid":
        from beleg.strategies import run_strategy

        planned = run_strategy(kb, opts.strategy, question, principal=principal, filters=expr, k=opts.k,
                               mode=opts.mode, llm=llm, context=conversation, self_query=self_query,
                               search_options=opts.search_options())
        hits, strategy_trace, queries = planned.hits[:opts.k], planned.trace.to_json(), list(planned.trace.queries)
        if planned.groups and len(planned.groups) > 1:
            # Each sub-question keeps its own evidence; every group's best hits are sources.
            groups = {q: g[:opts.k] for q, g in planned.groups.items()}
            hits = _merge(*groups.values())[: 2 * opts.k]
    else:
        hits = kb.search(query, mode=opts.mode, k=opts.k, filters=expr, principal=principal, self_query=self_query,
                         **opts.search_options())
        if target.version is not None and target.origin != "filter":
            pinned = combine(expr, {"version": target.version})
            hits = _merge(kb.search(query, mode=opts.mode, k=opts.k, filters=pinned, principal=principal,
                                    self_query=self_query, **opts.search_options()), hits)
            queries.append(f"{query} [version = {target.version}]")
    t_retrieve = time.perf_counter()

    sources = with_table_leads(kb, assess(hits, target, opts.policy), principal)
    embedder = kb.embedder
    index = kb.search_index()
    visible = index.eligible(None, principal)
    scorer = SentenceScorer(index, visible, embedder.embed_queries, embedder.embed_documents, kb.sentence_vectors)
    positions = {h.chunk_id: i for i, h in enumerate(hits)}
    scored = scorer.score(asked, candidate_sentences(sources), positions)  # withheld sentences are no candidates
    eligible = [s for s in sources if s.eligible]
    coverage: float | None = scorer.coverage(query, eligible)
    if not _same_language(query, eligible) or not _words_can_be_evidence(query, index, principal, visible.count):
        coverage = None  # terms cannot match across languages; the sentence score decides alone
    t_assess = time.perf_counter()

    trace: dict[str, Any] = {
        "target": {"version": target.version, "origin": target.origin, "unknown": list(target.unknown)},
        **({"conversation": conversation.to_json()} if traced_conversation else {}),
        "queries": queries,
        "retrieval": {"mode": opts.mode, "k": opts.k, "filter": None if expr is None else repr(expr),
                      "fusion": opts.fusion, "weights": list(opts.weights), "mmr": opts.mmr,
                      "reranker": _reranker_spec(kb, opts), "hits": len(hits)},
        "self_query": inferred.to_json() if inferred is not None else disabled_json(),
        "flagged": [_flag_trace(s) for s in sources if s.flags or s.quarantine.active],
        "evidence_coverage": None if coverage is None else round(coverage, 4),
        "best_eligible_score": next((round(s.score, 4) for s in scored if s.source.eligible), None),
        "sentences": [{"label": s.source.label, "score": round(s.score, 4), "lexical": round(s.lexical, 4),
                       "dense": round(s.dense, 4), "type": s.type_match, "text": s.text[:160]} for s in scored[:5]],
    }
    if llm is None and groups:
        result = _extractive_parts(kb, question, sources, groups, scorer, target, opts, trace)
    elif not target.unknown and eligible and coverage is not None and (unused := unused_words(question, scorer.terms)):
        # No source the asker may read uses any word of the question: it is about something else.
        result = _refused_before_answer(question, sources, llm, trace,
                                        f"no source uses the word{'s' if len(unused) > 1 else ''} {', '.join(unused)}")
    elif not target.unknown and (missing := unmentioned(question, eligible, coverage is not None)):
        # Before any sentence is chosen: no choice of sentence can close this gap.
        # Only sources of the asked version are evidence: say so, since others may mention it.
        scope = f" of version {target.version}" if target.version else ""
        result = _refused_before_answer(question, sources, llm, trace,
                                        f"no retrieved source{scope} mentions {', '.join(missing)}")
    elif llm is None:
        result = _extractive(kb, question, asked, sources, scored, target, coverage, opts, trace, scorer, positions)
    elif (gap := _evidence_gap(question, scored, coverage, opts)) is not None:
        # The extractive answerer's rules, so that a question is withheld (low term coverage:
        # the best sentence is shown as the closest passage) or refused alike with an LLM.
        ex = extract_answer(asked, scored, target, 1.0 if coverage is None else coverage, opts.refuse_below,
                            opts.min_coverage, embed=kb.embedder.embed_documents)
        if ex.closest:
            trace["llm"] = {"backend": llm.name, "calls": 0, "tokens": 0}
            result = _not_confirmed(kb, question, ex, sources, trace, llm.name, f"withheld before the model: {ex.reason}")
        else:
            result = _refused_before_answer(question, sources, llm, trace, gap)
    else:
        result = _generate(kb, question, asked, sources, scored, target, context, llm, opts, trace, on_token,
                           scorer, positions)
    result = _selective(result, opts.confidence_floor(llm is not None))
    trace = result.trace  # a refusal for low confidence carries a copy: what follows goes into the answer's
    t_end = time.perf_counter()
    if strategy_trace is None and inferred is not None and inferred.llm is not None:  # (a strategy counts it)
        from beleg.query.self_query_llm import add_usage

        add_usage(trace.setdefault("llm", {}), inferred)
    if strategy_trace is not None:
        trace["strategy"] = strategy_trace
        llm_trace = trace.setdefault("llm", {})
        llm_trace["calls"] = llm_trace.get("calls", 0) + strategy_trace["llm"]["calls"]
        llm_trace["tokens"] = llm_trace.get("tokens", 0) + strategy_trace["llm"]["tokens"]
    trace["latency_ms"] = {"retrieve": round(1000 * (t_retrieve - t0), 1),
                           "assess": round(1000 * (t_assess - t_retrieve), 1),
                           "answer": round(1000 * (t_end - t_assess), 1), "total": round(1000 * (t_end - t0), 1)}
    return result


def asked_question(question: str, conversation: FollowUp, products: Sequence[str] = ()) -> str:
    """What the sentences of an answer are scored and the answer is checked against: the
    question, or for a follow-up the question with the earlier one it leans on. Alone, "And in
    1.4?" asks for nothing a quote could be checked against (any sentence of a 1.4 page passed,
    supported); the earlier question says what it is about. The last of the two decides the kind
    of value asked for (``question_form``): the follow-up when it asks for one of its own ("Und
    wie lange?"), else the earlier one ("And in 1.4? What is the API rate limit?" asks for a limit).
    The answer itself keeps the asker's words."""
    # A greeting or "please" is said to the assistant: scored, "please" picked the support note's
    # "please do not promise anything else" (as retrieval_query, which leaves them out too).
    question = without_pleasantries(question) or question
    if not conversation.follow_up:
        return question
    earlier = conversation.context[-1]
    if version_mentions(question, products):
        # "And in 2.4?" after "… in Ferrolink 3.0?": the follow-up's version replaces the earlier
        # one, which its answer need not name (the anchors check failed the right 2.4 answer).
        for version in version_mentions(earlier, products):
            earlier = re.sub(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\d)", "", earlier)
    return f"{earlier} {question}" if asked_kind(question) is not None else f"{question} {earlier}"


def _reranker_spec(kb: KnowledgeBase, opts: AnswerOptions) -> str | None:
    """The reranker every search of this answer used: the options' own, else the index's techniques'."""
    reranker = opts.reranker or getattr(getattr(kb, "techniques", None), "reranker", None)
    return getattr(reranker, "spec", None) if reranker is not None else None


def _flag_trace(src: Source) -> dict[str, Any]:
    """What of a source is withheld as instruction-like: all of it, some passages, some fields."""
    q = src.quarantine
    return {"label": src.label, "source": src.hit.source, "flags": list(src.flags),
            "withheld": "whole" if q.whole else ("passages" if q.spans else "none"),
            "passages": len(q.spans), "fields": list(q.fields)}


def _no_retrieval(question: str, intent: Intent, t0: float) -> Answer:
    """An answer by rule (beleg.query.intent): no search, no sources, nothing to cite."""
    problem = intent.calculation.problem if intent.calculation is not None else None
    decision = f"{intent.kind}: {problem}" if problem else intent.kind
    trace = {"route": "no-retrieval", "intent": intent.to_json(), "queries": [], "decision": decision,
             "llm": {"backend": None, "calls": 0, "tokens": 0},
             "latency_ms": {"total": round(1000 * (time.perf_counter() - t0), 1)}}
    # Not a refusal, even for "10 / 0": the question was understood and answered by rule.
    exact = intent.calculation is not None and intent.calculation.value is not None
    return Answer(question, intent.answer, False, backend="rule", trace=trace, support=rule_support(intent.kind, exact))


def _selective(answer: Answer, min_confidence: float) -> Answer:
    """Turn an answer whose confidence is below ``min_confidence`` into a refusal that still
    shows the asker the closest passages (:func:`_withheld`)."""
    if answer.refused or answer.support is None or answer.backend == "rule" or answer.confidence >= min_confidence:
        return answer
    why = f"confidence {below(answer.confidence, min_confidence)}"
    # The failed checks say why ("the verifier found no answer in the passage"); a low score
    # alone, with every check passed, has no other reason to give.
    failed = [c.why for c in answer.support.checks if c.passed is False]
    return _withheld(answer, why, f"{why}: " + ("; ".join(failed) if failed else
                                                "the best candidate was not shown to answer the question"))


def _withheld(answer: Answer, why: str, decision: str) -> Answer:
    """``answer`` (a candidate) turned into a refusal that says no answer could be confirmed
    and shows the closest passages (its verified quotes, with their citations), marked as not
    shown to answer; the candidate's text stays in the trace (``withheld_answer``)."""
    closest = tuple(c for c in answer.citations if c.verified)[:CLOSEST_PASSAGES]
    trace = {**answer.trace, "decision": decision, "withheld_answer": answer.answer}
    return replace(answer, answer=refusal_text(why, closest, answer.sources, WITHHELD), refused=True, citations=closest,
                   conflicts=(), trace=trace)


#: A refusal shows at most this many closest passages.
CLOSEST_PASSAGES = 3


def refusal_text(why: str, closest: Sequence[Citation], sources: Sequence[Source], lead: str = REFUSAL) -> str:
    """``lead`` ("The sources do not answer this.", or for a withheld answer "No answer could be
    confirmed …") with the reason and, when there are any, the closest passages (each with its
    label, file and section) so that nothing the index holds is hidden."""
    if not closest:
        return f"{lead} ({why})"
    by_label = {s.label: s for s in sources}
    lines = [f"{lead} Closest passages, not shown to answer the question ({why}):"]
    for c in closest:
        src = by_label.get(c.label)
        section = (" > ".join(src.hit.heading_path) or src.hit.title) if src is not None else ""
        shown = " ".join(c.shown.split())
        shown = shown if len(shown) <= 240 else shown[:239] + "…"
        lines.append(f"- \"{shown}\" [{c.label}] {c.source}" + (f" ({section})" if section else ""))
    return "\n".join(lines)


def _same_language(question: str, sources: Sequence[Source]) -> bool:
    """Whether the question is in the language of most eligible sources (unknown counts as same)."""
    lang = detect_language(question, default="?")
    langs = [str(s.hit.metadata.get("language") or "?") for s in sources]
    if lang == "?" or not langs:
        return True
    return max(set(langs), key=langs.count) in (lang, "?")


#: Chunks the asker may read in the question's language before the absence of its words says
#: anything, when other languages could answer: in a handful of German pages beside English
#: ones most words of a German question are missing (a tester's 6 pages lacked "verwendet",
#: and "Welcher Verschlüsselungsalgorithmus wird verwendet?" was refused though an English page
#: answers it). Set once, not fitted to any question set.
MIN_LANGUAGE_CHUNKS = 50


def _words_can_be_evidence(question: str, index: Any, principal: Principal, visible: int) -> bool:
    """Whether the question's words, present or missing, are evidence: its language's side of
    the index is large enough (MIN_LANGUAGE_CHUNKS), or it is all of the ``visible`` chunks."""
    lang = detect_language(question, default="?")
    if lang == "?":
        return True
    own = index.eligible(Cmp("language", "=", lang), principal).count
    return own >= MIN_LANGUAGE_CHUNKS or own == visible


def _document_text(kb: KnowledgeBase) -> Callable[[str], str | None]:
    cache: dict[str, str | None] = {}

    def text(doc_id: str) -> str | None:
        if doc_id not in cache:
            doc = kb.catalog.document(doc_id)
            cache[doc_id] = doc.text if doc else None
        return cache[doc_id]

    return text


def _extractive(kb: KnowledgeBase, question: str, asked: str, sources: list[Source], scored: list[Any],
                target: Target, coverage: float | None, opts: AnswerOptions, trace: dict[str, Any],
                scorer: SentenceScorer, positions: dict[str, int]) -> Answer:
    """The extractive answer to ``question``, chosen and checked as ``asked`` (asked_question)."""
    ex = extract_answer(asked, scored, target, 1.0 if coverage is None else coverage, opts.refuse_below,
                        opts.min_coverage, embed=kb.embedder.embed_documents)
    trace["decision"] = ex.reason
    if ex.closest:  # refused, with a closest passage: not confirmed, rather than not covered
        trace["llm"] = _verifier_trace(opts, _Usage())
        return _not_confirmed(kb, question, ex, sources, trace, "extractive", ex.reason)
    check = verify_quotes(ex.citations, sources, _document_text(kb))
    support = None if ex.refused else extractive_support(
        asked, check.citations, sources, scorer.terms, chosen=ex.chosen, scored=scored, positions=positions,
        quotes_verified=check.ok)
    usage = _Usage()
    if support is not None:
        support = _verified(support, opts, usage, asked, check.citations, sources)
    trace["llm"] = _verifier_trace(opts, usage)
    return Answer(question, ex.answer, ex.refused, check.citations, ex.conflicts, tuple(sources), check.ok,
                  check.problems, "extractive", trace, support)


def _not_confirmed(kb: KnowledgeBase, question: str, ex: Extract, sources: list[Source], trace: dict[str, Any],
                   backend: str, decision: str) -> Answer:
    """A refusal that has a closest passage (``ex.closest``): withheld, with that passage shown
    under "No answer could be confirmed", never as the answer (:func:`_withheld`)."""
    check = verify_quotes(ex.closest, sources, _document_text(kb))
    shown = f"{ex.closest[0].shown} [{ex.closest[0].label}]"
    candidate = Answer(question, shown, False, check.citations, (), tuple(sources), check.ok, check.problems,
                       backend, trace)
    return _withheld(candidate, ex.reason, decision)


def _verified(support: Support, opts: AnswerOptions, usage: _Usage, question: str, citations: Sequence[Citation],
              sources: Sequence[Source]) -> Support:
    """An extractive answer's ``support`` with the verifier's check of its quote (one call, counted in
    ``usage``); as it is without a verifier."""
    if opts.verifier is None:
        return support
    return with_verifier(support, quote_verifier_check(_Counted(opts.verifier, usage), question, citations, sources))


def _verifier_trace(opts: AnswerOptions, usage: _Usage) -> dict[str, Any]:
    """The ``llm`` trace of an extractive answer: no answering LLM; the verifier's calls, if one is set."""
    out: dict[str, Any] = {"backend": None, "calls": usage.calls, "tokens": usage.prompt + usage.completion}
    if opts.verifier is not None:
        out.update(verifier=str(getattr(opts.verifier, "name", "") or type(opts.verifier).__name__),
                   prompt_tokens=usage.prompt, completion_tokens=usage.completion)
    return out


def _extractive_parts(kb: KnowledgeBase, question: str, sources: list[Source], groups: dict[str, list[Hit]],
                      scorer: SentenceScorer, target: Target, opts: AnswerOptions, trace: dict[str, Any]) -> Answer:
    """A decomposed question: one extractive answer per sub-question, from that sub-question's evidence."""
    parts: list[str] = []
    citations: list[Citation] = []
    conflicts: list[Conflict] = []
    decisions: dict[str, str] = {}
    supports: list[Support] = []
    usage = _Usage()  # the verifier's calls, if one is set
    for sub, group in groups.items():
        ids = {h.chunk_id for h in group}
        mine = [s for s in sources if s.hit.chunk_id in ids]
        scored = scorer.score(sub, candidate_sentences(mine))
        eligible = [s for s in mine if s.eligible]
        coverage = scorer.coverage(sub, eligible) if _same_language(sub, eligible) else 1.0
        ex = extract_answer(sub, scored, target, coverage, opts.refuse_below, opts.min_coverage,
                            embed=kb.embedder.embed_documents)
        if not ex.refused:
            part = extractive_support(sub, ex.citations, mine, scorer.terms, chosen=ex.chosen, scored=scored)
            supports.append(_verified(part, opts, usage, sub, ex.citations, mine))
        decisions[sub] = ex.reason
        parts.append(f"{sub}\n{ex.answer}")
        citations.extend(ex.citations)
        conflicts.extend(ex.conflicts)
    refused = all(reason != "answered" for reason in decisions.values())
    trace["decision"] = decisions
    trace["llm"] = _verifier_trace(opts, usage)
    check = verify_quotes(citations, sources, _document_text(kb))
    answer = REFUSAL if refused else "\n\n".join(parts)
    support = None if refused else _combined(supports, len(groups), check.ok)
    return Answer(question, answer, refused, () if refused else check.citations, tuple(conflicts), tuple(sources),
                  check.ok, check.problems, "extractive", trace, support)


def _combined(parts: list[Support], expected: int, quotes_verified: bool) -> Support:
    """A decomposed answer is supported when every sub-answer is; its confidence is the weakest part's."""
    checks = tuple(replace(c, name=f"part{i + 1}.{c.name}") for i, p in enumerate(parts) for c in p.checks)
    supported = quotes_verified and len(parts) == expected and all(p.supported for p in parts)
    confidence = min((p.confidence for p in parts), default=0.0) if len(parts) == expected else 0.0
    return Support(supported, confidence, checks, parts[0].features if parts else {})


def _evidence_gap(question: str, scored: list[Any], coverage: float | None, opts: AnswerOptions) -> str | None:
    """Why the sources cannot answer, by the extractive answerer's rules; None when they may.

    Asked before any LLM call: a model shown sources that do not answer tends to answer from
    its own knowledge (or invent) instead of refusing, and the call costs time either way."""
    if coverage is not None and coverage < opts.min_coverage:
        return f"the sources cover {below(coverage, opts.min_coverage)} of the question's terms"
    if choose(scored, opts.refuse_below, detect_language(question, default="?")) is None:
        top = next((s.score for s in scored if s.source.eligible), None)
        return "no eligible source" if top is None else f"best sentence scores {below(top, opts.refuse_below)}"
    return None


def _refused_before_answer(question: str, sources: list[Source], llm: LLM | None, trace: dict[str, Any],
                           reason: str) -> Answer:
    """A refusal decided from the evidence alone, before any sentence is chosen or model called."""
    backend = llm.name if llm is not None else "extractive"
    # The decision is the reason, as for every other refusal (renderers add "refused: ").
    trace["decision"] = f"refused before the model: {reason}" if llm is not None else reason
    trace["llm"] = {"backend": llm.name if llm is not None else None, "calls": 0, "tokens": 0}
    return Answer(question, refusal_text(reason, (), sources), True, (), (), tuple(sources), True, (), backend, trace)


def _generate(kb: KnowledgeBase, question: str, asked: str, sources: list[Source], scored: list[Any],
              target: Target, context: Sequence[str], llm: LLM, opts: AnswerOptions, trace: dict[str, Any],
              on_token: Callable[[str], None] | None, scorer: SentenceScorer, positions: dict[str, int]) -> Answer:
    """The model's answer to ``question`` (with the conversation ``context`` in its prompt), checked as ``asked``."""
    usage = _Usage()
    if target.unknown:  # no source covers the version asked about: nothing to send
        trace["decision"] = f"no source covers version {', '.join(target.unknown)}"
        trace["llm"] = {"backend": llm.name, "calls": 0, "tokens": 0}
        return Answer(question, REFUSAL, True, (), (), tuple(sources), True, (), llm.name, trace)
    prompt = build_prompt(question, sources, context=context, budget_tokens=opts.budget_tokens, order=opts.order,
                          withhold_flagged=opts.policy.injection == "withhold")
    shown = [s for s in sources if s.label in prompt.included]
    completion = llm.complete(prompt.messages, max_tokens=opts.max_tokens, on_token=on_token)
    usage.add(completion)
    text = completion.text.strip()
    check = verify_answer(text, shown)
    regenerated = False
    if not check.ok and opts.regenerate:
        messages: list[Message] = [*prompt.messages, Message("assistant", text), regenerate_message(check.problems)]
        completion = llm.complete(messages, max_tokens=opts.max_tokens)
        usage.add(completion)
        text, regenerated = completion.text.strip(), True
        check = verify_answer(text, shown)
    refused = is_refusal(text)
    strict = opts.refuse_unverified if opts.refuse_unverified is not None else getattr(llm, "refuse_unverified", False)
    if strict and not refused and not check.ok:
        trace["withheld_answer"] = {"text": text, "problems": list(check.problems)}
        text, refused = f"{WITHHELD} The model's answer failed the citation checks, so it is not shown.", True
    conflicts: tuple[Any, ...] = ()
    governing = choose(scored, opts.refuse_below)
    if governing is not None and not refused:
        conflicts, _ = detect_conflicts(asked, governing, scored, opts.refuse_below,
                                        embed=kb.embedder.embed_documents)
    trace["decision"] = ("unverified answer withheld" if "withheld_answer" in trace else
                         "refused by the model" if refused else ("verified" if check.ok else "unverified"))
    # The governing sentence and the conflicts are the answer's own: an answer whose value
    # comes from a source they show to be contradicted or superseded is not supported.
    support = None if refused else llm_support(asked, text, check.citations, shown, scorer.terms,
                                               quotes_verified=check.ok, scored=scored, positions=positions,
                                               verifier=_claim_verifier(llm, usage, opts), governing=governing,
                                               conflicts=conflicts, floor=opts.refuse_below,
                                               embed=kb.embedder.embed_documents)
    trace["prompt"] = {"included": list(prompt.included), "dropped": list(prompt.dropped),
                       "withheld": list(prompt.withheld), "redacted": list(prompt.redacted),
                       "tokens_estimated": prompt.tokens_estimated,
                       "order": opts.order}
    trace["llm"] = {"backend": llm.name, "calls": usage.calls, "prompt_tokens": usage.prompt,
                    "completion_tokens": usage.completion, "tokens": usage.prompt + usage.completion,
                    "regenerated": regenerated}
    citations = () if "withheld_answer" in trace else check.citations
    return Answer(question, text, refused, citations, conflicts, tuple(sources), check.ok, check.problems,
                  llm.name, trace, support)
