"""The optional retrieval techniques a search can run, in one value.

A :class:`Techniques` is given to :meth:`beleg.kb.KnowledgeBase.search` (``techniques=``)
or set as ``kb.techniques``, so every search of that knowledge base uses it, including
the ones ``ask`` and the strategies make. Order of the stages::

    legs (bm25 ∥ dense, or an ensemble) → fuse → rerank top N → MMR → k hits
      → parents (parent-child index) → neighbours → compression

All are off by default: docs/strategies.md has the measurements that decided this.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # compress imports beleg.answer (~0.3 s): loaded only when compression is asked for
    from beleg.retrieve.compress import CompressOptions
    from beleg.retrieve.ensemble import Leg


@dataclass(frozen=True, slots=True)
class Techniques:
    #: Neighbour expansion: N units before and after each hit in its section (0: off).
    expand: int = 0
    #: Contextual compression (None: off).
    compress: CompressOptions | None = None
    #: Ensemble legs replacing plain hybrid (None: off); see :func:`beleg.retrieve.ensemble.parse_ensemble`.
    ensemble: tuple[Leg, ...] | None = None
    #: A reranker (:mod:`beleg.backends.rerankers`) over the top ``candidates`` fused hits (None: off).
    reranker: Any = None
    candidates: int | None = None


#: Children fetched per parent wanted, so that k distinct parents remain after merging.
CHILDREN_PER_PARENT = 4

NONE = Techniques()
_SENTENCE_CACHE_LOCK = threading.Lock()


def searcher_for(techniques: Techniques) -> Any:
    """The one-search function for these techniques, with :func:`beleg.retrieve.retriever.search`'s signature."""
    from beleg.retrieve.retriever import search

    legs = techniques.ensemble
    if legs is None:
        return search
    from beleg.retrieve.ensemble import ensemble_search

    def run(index: Any, query: str, options: Any, embed: Any, expr: Any, reranker: Any = None,
            principal: Any = None, strict: bool = False) -> Any:
        return ensemble_search(index, query, options, legs, embed, expr, reranker, principal, strict)

    return run


def finish(kb: Any, query: str, hits: list[Any], k: int, techniques: Techniques, principal: Any) -> list[Any]:
    """The stages after the k hits: parents, neighbours, compression (see the module docstring)."""
    from beleg.retrieve.expand import expand_neighbours, to_parents

    chunking = kb.config.chunking
    parent_child = chunking.method == "parent-child"
    index = kb.search_index()
    if parent_child:
        hits = to_parents(hits, index, kb.store, principal, chunking, k)
    else:
        hits = hits[:k]
    if techniques.expand:
        hits = expand_neighbours(hits, index, kb.store, principal, techniques.expand,
                                 parents_of=chunking if parent_child else None)
    if techniques.compress is not None and hits:
        from beleg.retrieve.compress import compress

        generation = index.generation
        embed = kb.embedder

        def sentences(texts: list[str]) -> Any:
            with _SENTENCE_CACHE_LOCK:  # the answerer's cache is not thread-safe; sub-searches may be
                return kb.sentence_vectors.get(generation, texts, embed.embed_documents)

        hits = compress(hits, query, techniques.compress, lambda q: kb._embed_query(q), sentences)
    return hits


def search_k(kb: Any, k: int) -> int:
    """How many hits the first stage returns: more children than parents wanted under parent-child."""
    return k * CHILDREN_PER_PARENT if kb.config.chunking.method == "parent-child" else k


def load_rerank(spec: str, embedder: Any = None, llm: Any = None) -> Any:
    """``--rerank SPEC``: a cross-encoder directory (``cross-encoder:DIR``, ``onnx:DIR``, a bare
    path), ``bi-encoder`` (the index's embedder; ``bi-encoder:minilm`` another), or ``llm``
    (``llm:pointwise`` / ``llm:listwise``, the configured LLM). A missing model is an error."""
    from beleg.errors import ConfigError

    kind, _, arg = spec.partition(":")
    if kind == "bi-encoder":
        from beleg.backends.embedders import load_embedder
        from beleg.backends.rerankers.bi_encoder import BiEncoderReranker

        chosen = load_embedder(arg) if arg else embedder
        if chosen is None:
            raise ConfigError("--rerank bi-encoder needs an embedder; name one, e.g. bi-encoder:minilm")
        return BiEncoderReranker(chosen)
    if kind == "llm":
        from beleg.backends.rerankers.llm import LLMReranker

        if llm is None:
            raise ConfigError(f"--rerank {spec} needs an LLM; configure one with --llm PROVIDER:MODEL "
                              "(or BELEG_LLM), or rerank with a cross-encoder directory or bi-encoder")
        return LLMReranker(llm, arg or "pointwise")
    from beleg.backends.rerankers import load_reranker

    return load_reranker(spec)


def from_specs(*, expand: str | None = None, compress: bool = False, compress_budget: int | None = None,
               ensemble: str | None = None, rerank: str | None = None, candidates: int | None = None,
               embedder: Any = None, llm: Any = None) -> Techniques:
    """Techniques from the command line's spellings (``--expand neighbours=1`` and so on)."""
    from beleg.errors import ConfigError
    from beleg.retrieve.compress import CompressOptions
    from beleg.retrieve.ensemble import parse_ensemble
    from beleg.retrieve.expand import parse_expand

    if candidates is not None and candidates < 1:
        raise ConfigError(f"--candidates must be at least 1, got {candidates}")
    if candidates is not None and rerank is None:
        raise ConfigError("--candidates sets how many candidates --rerank reorders; give --rerank SPEC too")
    options = None
    if compress:  # no budget given: the dataclass default (a slots class has no readable class attribute)
        options = (CompressOptions(llm=llm) if compress_budget is None
                   else CompressOptions(budget_tokens=compress_budget, llm=llm))
    return Techniques(expand=parse_expand(expand), compress=options,
                      ensemble=parse_ensemble(ensemble) if ensemble else None,
                      reranker=load_rerank(rerank, embedder, llm) if rerank else None, candidates=candidates)
