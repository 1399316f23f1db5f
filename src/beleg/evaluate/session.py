"""One evaluation as the CLI (and later the service) asks for it: load, index, run, note."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beleg.errors import ConfigError
from beleg.evaluate.datasets import Dataset, load_beir, load_gold, load_squad
from beleg.evaluate.runner import (
    CONFIGS,
    EvalConfig,
    EvalReport,
    parse_configs,
    prepare_index,
    run_eval,
)


@dataclass(frozen=True, slots=True)
class EvalRequest:
    beir: Path | None = None
    split: str = "test"
    squad: list[Path] | None = None
    queries_from: Path | None = None
    gold: Path | None = None
    modes: str = "dense,bm25,hybrid"
    k: int = 10
    limit: int | None = None
    reranker: str | None = None
    cache_dir: Path | None = None
    progress: bool | str | None = None  # True/False, or a mode: auto, bar, lines, none
    #: Answer evaluation (``eval --answers``): the answering LLM (None: extractive) and an optional judge.
    llm: Any = None
    judge: Any = None
    #: ``eval --answers --verifier``: the LLM that checks every answer (``AnswerOptions.verifier``).
    verifier: Any = None
    #: Evaluate on this existing index (its documents must be the gold set's corpus) instead
    #: of a cached dataset index; ``versions`` compares index versions side by side.
    index: Path | None = None
    versions: list[str] | None = None
    #: Compare retrieval strategies (``eval --strategies hybrid,multi-hop``) instead of ``modes``;
    #: ``llm`` is then the strategies' LLM (None: offline methods; LLM-only strategies are skipped).
    strategies: str | None = None


def load_dataset(req: EvalRequest) -> Dataset:
    if req.beir:
        return load_beir(req.beir, req.split)
    if req.squad:
        return load_squad(list(req.squad), req.queries_from)
    if req.gold:
        return load_gold(req.gold)
    raise ConfigError("name a gold set: --beir DIR, --squad FILE or --gold FILE")


def evaluate(req: EvalRequest) -> EvalReport:
    """Run the requested evaluation; the report's notes say what could not be evaluated and why."""
    if req.k < 1:
        raise ConfigError(f"-k must be at least 1, got {req.k}")
    if req.strategies:
        return _eval_strategies(req)
    names = [n.strip() for n in req.modes.split(",") if n.strip()]
    notes: list[str] = []
    plain = [n for n in names if n != "rerank"]
    configs: list[EvalConfig] = parse_configs(plain) if plain else []
    reranker = None
    if req.reranker:
        from beleg.backends.rerankers import load_reranker

        reranker = load_reranker(req.reranker)
        configs.append(EvalConfig("rerank", {**CONFIGS["hybrid"].search, "reranker": reranker},
                                  f"hybrid RRF, top candidates re-scored by {reranker.spec}"))
    elif "rerank" in names:
        raise ConfigError("the 'rerank' configuration needs a cross-encoder: pass --reranker DIR (a local model directory)")
    else:
        notes.append("no reranker configured: no cross-encoder ships in a PyPI package; pass --reranker DIR "
                     "(a local cross-encoder directory) to add the 'rerank' configuration")
    if not configs:
        raise ConfigError("no configuration to evaluate")
    dataset = load_dataset(req)
    if req.index is not None:
        report = _eval_versions(req, dataset, configs)
    else:
        kb = prepare_index(dataset, req.cache_dir, progress=req.progress)
        try:
            report = run_eval(kb, dataset, configs, k=req.k, limit=req.limit, progress=req.progress)
        finally:
            kb.close()
    if req.limit and req.limit < len(dataset.queries):
        notes.append(f"limited to the first {req.limit} of {len(dataset.queries)} queries (--limit): not comparable "
                     "with full runs")
    report.notes.extend(notes)
    return report


def _eval_strategies(req: EvalRequest) -> EvalReport:
    """``eval --strategies``: each strategy run per question as its gold principal (see
    :mod:`beleg.evaluate.strategies`), on the cached dataset index or ``req.index``."""
    from beleg.evaluate.strategies import parse_strategies, run_strategy_eval
    from beleg.kb import KnowledgeBase

    assert req.strategies is not None
    names = parse_strategies(req.strategies)  # unknown names fail before any indexing
    dataset = load_dataset(req)
    kb = (KnowledgeBase(req.index, create=False) if req.index is not None
          else prepare_index(dataset, req.cache_dir, progress=req.progress))
    try:
        report = run_strategy_eval(kb, dataset, names, k=req.k, limit=req.limit, llm=req.llm, progress=req.progress)
    finally:
        kb.close()
    if req.limit and req.limit < len(dataset.queries):
        report.notes.append(f"limited to the first {req.limit} of {len(dataset.queries)} queries (--limit): not "
                            "comparable with full runs")
    return report


def _eval_versions(req: EvalRequest, dataset: Dataset, configs: list[EvalConfig]) -> EvalReport:
    """Run the configurations on each requested version of an existing index; results are
    named ``config@version`` so blue and green sit side by side in one report."""
    from dataclasses import replace

    from beleg.kb import KnowledgeBase

    assert req.index is not None
    merged: EvalReport | None = None
    for version in req.versions or ["live"]:
        with KnowledgeBase(req.index, create=False, version=version) as kb:
            named = [replace(c, name=f"{c.name}@{kb.config.index_version}") for c in configs]
            report = run_eval(kb, dataset, named, k=req.k, limit=req.limit, progress=req.progress)
        if merged is None:
            merged = report
        else:
            merged.results.update(report.results)
    assert merged is not None
    return merged


def evaluate_answers(req: EvalRequest) -> Any:
    """Answer every gold question and score the answers (``beleg eval --answers``).

    Each question is asked as its gold principal, with its filters and conversation
    context; doc keys and permission checks follow the retrieval runner's rules.
    """
    from beleg.answer.answerer import AnswerOptions
    from beleg.evaluate.answers import (
        corpus_doc_key,
        principal_may_read,
        run_answer_eval,
    )
    from beleg.evaluate.runner import _principal

    dataset = load_dataset(req)
    kb = _answer_index(req, dataset)
    options = AnswerOptions(verifier=req.verifier) if req.verifier is not None else None
    try:
        def answer_fn(q: Any) -> Any:
            return kb.ask(q.text, principal=_principal(q), filters=q.info.get("filters"),
                          context=tuple(q.info.get("context") or ()), llm=req.llm, options=options)

        report = run_answer_eval(dataset, answer_fn, judge=req.judge, progress=req.progress, limit=req.limit,
                                 doc_key=corpus_doc_key(dataset), may_read=principal_may_read)
    finally:
        kb.close()
    if req.index is not None:
        report.notes.append(f"answers from the index {req.index}" + (f" (version {req.versions[0]})"
                                                                      if req.versions else ""))
    report.notes.append("answers by " + (req.llm.name if req.llm is not None else
                                          "the offline extractive answerer (quoted sentences; no LLM configured)"))
    if req.verifier is not None:
        report.notes.append(f"every answer checked by the verifier {getattr(req.verifier, 'name', req.verifier)}")
    if req.judge is None:
        report.notes.append("no judge LLM configured (--judge): faithfulness and relevance were not judged")
    if req.limit and req.limit < len(dataset.queries):
        report.notes.append(f"limited to the first {req.limit} of {len(dataset.queries)} questions (--limit)")
    return report


def _answer_index(req: EvalRequest, dataset: Dataset) -> Any:
    """The index that answers: ``req.index`` as it is (one version at most), else the dataset's cached index."""
    if req.index is None:
        return prepare_index(dataset, req.cache_dir, progress=req.progress)
    from beleg.kb import KnowledgeBase

    if req.versions and len(req.versions) > 1:
        raise ConfigError("--answers evaluates one index version at a time: give --versions one version "
                          "(or run once per version)")
    return KnowledgeBase(req.index, create=False, version=req.versions[0] if req.versions else None)
