"""The strategy interface: retrieval plans that may search several times and call an LLM.

A strategy turns a question into hits through a :class:`StrategyContext`, which is the only
way it can reach the index or the LLM. The context

* applies the principal and the caller's filters to **every** search (a strategy can
  narrow them with ``extra`` filters, never widen them);
* enforces the :class:`Budget` (LLM calls, retrieval rounds, wall time) by raising
  :class:`BudgetExhausted`, which :func:`run_strategy` turns into a partial result with a
  note, never an error;
* records a :class:`Trace`: every query issued, hits per step, LLM calls and tokens, latency;
* applies the **self-query** constraints of the user's question (:mod:`beleg.query.self_query`)
  to every search: read once from the question (and the conversation), never from a
  generated query, so every step, like plain search and answering, gets the same ones.

Strategies without an honest offline method raise :class:`beleg.errors.NeedsLLMError`
when no LLM is configured; none silently falls back to plain search.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from beleg.backends.llms.base import LLM, Completion, Message, llm_deadline
from beleg.errors import BelegError, LLMUnavailableError, NeedsLLMError
from beleg.index.filters import Expr, FilterLike, combine
from beleg.query.conversation import Conversation, earlier_questions, judged
from beleg.query.self_query import Inferred, disabled_json, self_query_mode
from beleg.retrieve.coverage import TermCoverage
from beleg.retrieve.fusion import rrf
from beleg.types import ANONYMOUS, Hit, Principal

if TYPE_CHECKING:
    from beleg.kb import KnowledgeBase


R = TypeVar("R")


class BudgetExhausted(BelegError):
    """A strategy hit its budget; the run ends with what it has (see :func:`run_strategy`)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits per strategy run. Adaptive effort: strategies stop early when they can."""

    max_llm_calls: int = 6
    max_rounds: int = 4
    max_seconds: float = 60.0


@dataclass(slots=True)
class Step:
    name: str
    query: str | None
    hits: list[str]  # chunk ids, in rank order
    ms: float
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "query": self.query, "hits": self.hits, "ms": round(self.ms, 1)}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(slots=True)
class Trace:
    strategy: str
    queries: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    llm_calls: int = 0
    #: HTTP attempts beyond the first, over all LLM calls (429/5xx, timeouts, dropped connections).
    llm_retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    rounds: int = 0
    notes: list[str] = field(default_factory=list)
    latency_ms: float = 0.0
    #: What self-query read from the question and how it was applied (``Inferred.to_json``).
    self_query: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "strategy": self.strategy,
            "queries": self.queries,
            "steps": [s.to_json() for s in self.steps],
            "llm": {"calls": self.llm_calls, "retries": self.llm_retries, "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "tokens": self.prompt_tokens + self.completion_tokens},
            "rounds": self.rounds,
            "notes": self.notes,
            "latency_ms": round(self.latency_ms, 1),
        }
        if self.self_query is not None:
            out["self_query"] = self.self_query
        return out


@dataclass(slots=True)
class StrategyResult:
    """Hits in final order, the trace, and for decomposition the hits of each sub-question
    kept apart (``groups``: sub-question → hits)."""

    hits: list[Hit]
    trace: Trace
    groups: dict[str, list[Hit]] | None = None


class StrategyContext:
    """What a strategy may use: permission-bound search, a budgeted LLM, the conversation."""

    def __init__(self, kb: KnowledgeBase, *, principal: Principal | None = None, filters: FilterLike = None,
                 where: str | None = None, k: int = 10, mode: str = "hybrid", llm: LLM | None = None,
                 budget: Budget | None = None, context: Conversation = (), strategy: str = "hybrid",
                 question: str | None = None, self_query: bool | str | Inferred = True,
                 search_options: Mapping[str, Any] | None = None) -> None:
        self.kb = kb
        self.question = question
        #: The caller's retrieval options (fusion, rrf_k, weights, mmr_lambda, reranker, ...):
        #: every search of the strategy uses them, as a plain search would.
        self.search_options = dict(search_options or {})
        self.principal = principal or ANONYMOUS
        self.filter: Expr | None = combine(filters, where)
        self.k = k
        self.mode = mode
        self.llm = llm
        self.budget = budget or Budget()
        self.trace = Trace(strategy)
        #: The conversation as the strategy's steps take it (``retrieval_query``, ``offline_query``):
        #: the question's judgement against the earlier questions, made once here or passed on by
        #: ``ask``; without the question, the earlier questions as given.
        self.conversation: Conversation = context
        if question:
            conversation = judged(question, context)
            self.conversation = conversation
            if earlier_questions(context):  # none left when ``ask`` found the question stands alone
                self.note(f"conversation: {'follow-up' if conversation.follow_up else 'stands alone'} "
                          f"({conversation.reason})")
        #: The earlier questions this question leans on: none when it stands alone (as in ``ask``).
        self.context: list[str] = list(earlier_questions(self.conversation))
        self._t0 = time.perf_counter()
        #: Every hit list fetched so far, for a partial result when the budget runs out.
        self.fetched: list[list[Hit]] = []
        #: The question's self-query constraints, applied to every search (None: off).
        self.inferred: Inferred | None = self._infer(question, self_query)

    def _infer(self, question: str | None, self_query: bool | str | Inferred) -> Inferred | None:
        """Read the constraints from the user's question once; generated queries add none.

        With ``self_query="llm"`` (or "auto" and an LLM) the model's self-query call is one
        of this run's LLM calls: budgeted, counted and traced like the others. A pass made
        before the run (``ask`` infers once for the whole answer) is counted here too.
        """
        if isinstance(self_query, Inferred):
            inferred: Inferred | None = self_query.overridden_by(self.filter)
            self._count_earlier_pass(self_query)
        elif (mode := self_query_mode(self_query, self.llm is not None)) != "off" and question:
            inferred = self.kb.infer_constraints(question, self.principal, filters=self.filter,
                                                 context=self.conversation,
                                                 llm=_BudgetedLLM(self) if mode == "llm" else None)
        else:
            inferred = None
        self.trace.self_query = disabled_json() if inferred is None else inferred.to_json()
        for line in inferred.notes() if inferred is not None else ():
            self.note(line)
        return inferred

    def _count_earlier_pass(self, inferred: Inferred) -> None:
        used = inferred.llm
        if used is None or not used.calls:
            return
        self.trace.llm_calls += used.calls
        self.trace.prompt_tokens += used.prompt_tokens
        self.trace.completion_tokens += used.completion_tokens
        self.trace.steps.append(Step("self-query", None, [], 0.0,
                                     f"LLM call ({used.tokens} tokens), made before the strategy ran"))

    # ------------------------------------------------------------------ budget
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def _check_time(self) -> None:
        if self.elapsed() > self.budget.max_seconds:
            raise BudgetExhausted(f"time budget of {self.budget.max_seconds:g} s spent")

    @property
    def rounds_left(self) -> int:
        return self.budget.max_rounds - self.trace.rounds

    @property
    def llm_calls_left(self) -> int:
        return self.budget.max_llm_calls - self.trace.llm_calls

    # ------------------------------------------------------------------ tools
    def search(self, query: str, *, step: str = "search", k: int | None = None, extra: FilterLike = None,
               mode: str | None = None) -> list[Hit]:
        """One retrieval round as the principal, within the caller's filters (``extra`` only narrows)."""
        self._check_time()
        if self.trace.rounds >= self.budget.max_rounds:
            raise BudgetExhausted(f"retrieval budget of {self.budget.max_rounds} rounds spent")
        return self._search(query, step=step, k=k, extra=extra, mode=mode)

    def _search(self, query: str, *, step: str, k: int | None, extra: FilterLike, mode: str | None) -> list[Hit]:
        t0 = time.perf_counter()
        hits = self.kb.search(query, mode=mode or self.mode, k=k or self.k, filters=combine(self.filter, extra),
                              principal=self.principal,
                              self_query=self.inferred if self.inferred is not None else False,
                              **self.search_options)
        self.trace.rounds += 1
        self.trace.queries.append(query)
        self.trace.steps.append(Step(step, query, [h.chunk_id for h in hits], 1000 * (time.perf_counter() - t0)))
        self.fetched.append(hits)
        return hits

    def fallback_search(self, reason: str) -> list[Hit]:
        """The plain search of the question, outside the budget: when a budget ran out before any
        search (one slow LLM call can spend the whole time budget), the run still returns the
        hits a plain search would, and the trace says so, instead of returning nothing."""
        if not self.question:
            return []
        self.note(f"{reason} before any search; fell back to a plain {self.mode} search of the question")
        return self._search(self.question, step="fallback", k=None, extra=None, mode=None)

    def complete(self, messages: Sequence[Message], *, step: str, max_tokens: int = 400) -> str:
        """One LLM call, counted against the budget and recorded in the trace."""
        if self.llm is None:
            raise NeedsLLMError(f"strategy {self.trace.strategy!r} needs an LLM for {step}; configure one with --llm")
        llm = self.llm
        return self.charge_llm(lambda: llm.complete(messages, max_tokens=max_tokens), step=step).text

    def charge_llm(self, call: Callable[[], R], *, step: str, describe: Callable[[R], str] | None = None) -> R:
        """Run one LLM call (plain or tool-calling) within the budget; count its tokens and
        record it as a step. ``describe`` adds to the step's note (e.g. the tools asked for).

        The call must end within the time the budget has left (an HTTP backend stops reading
        and closes the request at that point); a call the budget cut off raises
        :class:`BudgetExhausted`. ``max_llm_calls`` counts calls, not HTTP attempts: the
        backend's retries of one call (bounded by its ``max_retries`` and by the time budget)
        are recorded in ``trace.llm_retries`` and in the step's note.
        """
        self._check_time()
        if self.trace.llm_calls >= self.budget.max_llm_calls:
            raise BudgetExhausted(f"LLM budget of {self.budget.max_llm_calls} calls spent")
        t0 = time.perf_counter()
        try:
            with llm_deadline(self.budget.max_seconds - self.elapsed()):
                result = call()
        except LLMUnavailableError as exc:
            if self.elapsed() >= self.budget.max_seconds:
                raise BudgetExhausted(f"time budget of {self.budget.max_seconds:g} s spent "
                                      f"during an LLM call ({step})") from exc
            raise
        usage = result.usage  # type: ignore[attr-defined]
        attempts = int(getattr(result, "attempts", 1))
        self.trace.llm_calls += 1
        self.trace.llm_retries += attempts - 1
        self.trace.prompt_tokens += usage.prompt_tokens
        self.trace.completion_tokens += usage.completion_tokens
        tried = f", {attempts} HTTP attempts" if attempts > 1 else ""
        note = f"LLM call ({usage.total_tokens} tokens{tried})" + (f": {describe(result)}" if describe else "")
        self.trace.steps.append(Step(step, None, [], 1000 * (time.perf_counter() - t0), note))
        return result

    def term_coverage(self) -> TermCoverage:
        """IDF statistics over the chunks this principal may read under the caller's filter and
        the question's inferred filters (for statistics over evidence)."""
        inferred = self.inferred.filter_expr() if self.inferred is not None else None
        index = self.kb.search_index()
        return TermCoverage(index, index.eligible(combine(self.filter, inferred), self.principal))

    def note(self, text: str) -> None:
        self.trace.notes.append(text)


class _BudgetedLLM:
    """The context's LLM for the self-query pass: each call goes through :meth:`StrategyContext.charge_llm`
    (a spent budget raises :class:`BudgetExhausted`, which the pass reports as "rules used")."""

    def __init__(self, ctx: StrategyContext) -> None:
        assert ctx.llm is not None
        self.ctx, self.llm, self.name = ctx, ctx.llm, ctx.llm.name

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        return self.ctx.charge_llm(lambda: self.llm.complete(messages, **kwargs), step="self-query")


def fuse(lists: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Reciprocal rank fusion of several hit lists (k=60). Each hit's ``score`` becomes its
    fused score and ``scores`` merges every list's scores (plus ``rrf``), so the scores of
    one result list are comparable."""
    by_id: dict[str, Hit] = {}
    scores: dict[str, dict[str, float]] = {}
    rankings = []
    for hits in lists:
        rankings.append([h.chunk_id for h in hits])
        for h in hits:
            by_id.setdefault(h.chunk_id, h)
            bucket = scores.setdefault(h.chunk_id, {})
            for key, value in h.scores.items():
                bucket.setdefault(key, value)
    return [replace(by_id[cid], score=score, scores={**scores[cid], "rrf": score}) for cid, score in rrf(rankings)[:k]]


class Strategy(Protocol):
    """A retrieval plan. ``offline`` says whether it has a method without an LLM."""

    name: str
    offline: bool

    def run(self, question: str, ctx: StrategyContext) -> StrategyResult: ...
