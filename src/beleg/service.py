"""One service layer for the CLI and the HTTP server: search, ask, documents, ingest, delete, status.

Both front ends parse their input into the same requests and call the same methods, so an
option (``mmr``, ``fusion``, a reranker, filters) reaches a plain search and every strategy
the same way, and ``search --json`` and ``POST /v1/search`` return the same object.

Example:
    >>> svc = Service(beleg.open("./kb"))                                 # doctest: +SKIP
    >>> svc.search_json(svc.search(SearchRequest("E-4012", mmr=0.7)))    # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beleg.errors import BelegError, ConfigError
from beleg.index.filters import FilterLike, combine
from beleg.retrieve.fusion import check_fusion_options
from beleg.types import ANONYMOUS, Hit, Principal, add_file_positions, shown_metadata

if TYPE_CHECKING:
    from beleg.answer.answerer import AnswerOptions
    from beleg.answer.evidence import GovernancePolicy
    from beleg.answer.types import Answer
    from beleg.backends.llms.base import LLM
    from beleg.backends.rerankers.base import Reranker
    from beleg.kb import KnowledgeBase


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What to search for and how; the same fields as ``beleg search``'s options."""

    query: str
    mode: str = "hybrid"
    k: int = 10
    filters: FilterLike = None
    where: str | None = None
    fusion: str = "rrf"
    rrf_k: int = 60
    weights: tuple[float, float] = (1.0, 1.0)
    mmr: float | None = None
    strategy: str = "hybrid"
    #: True/"rules", "llm" (the service's LLM proposes constraints too), "auto" (llm when the
    #: service has an LLM), False/"off" (see :func:`beleg.query.self_query.self_query_mode`).
    self_query: bool | str = True
    #: Earlier questions of a conversation (oldest first), for strategies that resolve follow-ups.
    context: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.query or not self.query.strip():
            raise ConfigError("the query is empty; pass the words to search for")
        check_fusion_options(self.weights, self.mmr)
        if self.k < 1:
            raise ConfigError(f"k must be at least 1, got {self.k}")


@dataclass(slots=True)
class SearchResult:
    hits: list[Hit]
    trace: dict[str, Any]
    #: What self-query changed, in words (for the CLI's dimmed lines).
    notes: list[str] = field(default_factory=list)


class Service:
    """The calls both front ends make on one knowledge base.

    Args:
        kb: The open index.
        llm: The LLM strategies and answers use (None: offline methods only).
        reranker: Re-score fused candidates with this cross-encoder on every search.
    """

    def __init__(self, kb: KnowledgeBase, *, llm: LLM | None = None, reranker: Reranker | None = None) -> None:
        self.kb = kb
        self.llm = llm
        self.reranker = reranker

    # ------------------------------------------------------------------ search
    def retrieval_options(self, request: SearchRequest) -> dict[str, Any]:
        """The keyword arguments of :meth:`KnowledgeBase.search` beyond query, mode, k and filters:
        one place, so a strategy's searches get exactly what a plain search gets."""
        return {"fusion": request.fusion, "rrf_k": request.rrf_k, "weights": tuple(request.weights),
                "mmr_lambda": request.mmr, "reranker": self.reranker}

    def search(self, request: SearchRequest, principal: Principal | None = None) -> SearchResult:
        """Run ``request`` as ``principal`` (None: anonymous, public documents only)."""
        who = principal or ANONYMOUS
        if request.strategy != "hybrid":
            # Imported here: a plain search needs no strategy code (start-up time of every search).
            # run_strategy loads the strategy first, so an unknown name fails before any work.
            from beleg.strategies import run_strategy

            result = run_strategy(self.kb, request.strategy, request.query, principal=who, filters=request.filters,
                                  where=request.where, k=request.k, mode=request.mode, llm=self.llm,
                                  context=request.context, self_query=request.self_query,
                                  search_options=self.retrieval_options(request))
            trace = result.trace.to_json()
            if result.groups:
                trace["groups"] = {q: [h.chunk_id for h in g] for q, g in result.groups.items()}
            return SearchResult(result.hits, trace, [n for n in result.trace.notes
                                                   if n.startswith(("self-query:", "llm self-query:"))])
        return self._plain_search(request, who)

    def _plain_search(self, request: SearchRequest, who: Principal) -> SearchResult:
        from beleg.query.self_query import disabled_json, self_query_mode

        t0 = time.perf_counter()
        mode = self_query_mode(request.self_query, self.llm is not None)
        inferred = self.kb.infer_constraints(request.query, who, filters=request.filters, where=request.where,
                                             llm=self.llm if mode == "llm" else None) if mode != "off" else None
        hits = self.kb.search(request.query, mode=request.mode, k=request.k, filters=request.filters,
                              where=request.where, principal=who,
                              self_query=inferred if inferred is not None else False,
                              **self.retrieval_options(request))
        trace: dict[str, Any] = {
            "strategy": "hybrid", "mode": request.mode, "queries": [request.query], "steps": [],
            "llm": {"calls": 0, "tokens": 0}, "latency_ms": round(1000 * (time.perf_counter() - t0), 1),
            "self_query": inferred.to_json() if inferred is not None else disabled_json()}
        if inferred is not None and inferred.llm is not None:  # the LLM self-query call is counted
            from beleg.query.self_query_llm import add_usage

            add_usage(trace["llm"], inferred)
        return SearchResult(hits, trace, inferred.notes() if inferred is not None else [])

    def search_json(self, result: SearchResult) -> dict[str, Any]:
        """The ``search --json`` object: ``{hits, trace, self_query}``."""
        hits = add_file_positions([h.to_json() for h in result.hits], self.kb.catalog.document)
        return {"hits": hits, "trace": result.trace, "self_query": result.trace.get("self_query")}

    # ------------------------------------------------------------------ answers
    def ask(self, question: str, principal: Principal | None = None, *, filters: FilterLike = None,
            where: str | None = None, context: Sequence[str] = (), options: AnswerOptions | None = None,
            on_token: Callable[[str], None] | None = None) -> Answer:
        """Answer ``question`` as ``principal``; ``context`` holds the conversation's earlier questions.
        The service's reranker re-scores every search of the answer, as it does a plain search's
        (``options``' own reranker wins); fusion, weights and MMR come with ``options``."""
        if self.reranker is not None and (options is None or options.reranker is None):
            from dataclasses import replace

            from beleg.answer.answerer import AnswerOptions

            options = replace(options or AnswerOptions(), reranker=self.reranker)
        return self.kb.ask(question, principal=principal or ANONYMOUS, filters=filters, where=where,
                           context=list(context), llm=self.llm, options=options, on_token=on_token)

    def answer_json(self, answer: Answer) -> dict[str, Any]:
        """The ``ask --json`` object, with file positions on citations and sources."""
        return self.kb.answer_json(answer)

    # ------------------------------------------------------------------ documents
    def document_json(self, doc_id: str, principal: Principal | None = None,
                      ranges: Sequence[tuple[int, int]] = (), chunk_ids: Sequence[str] = ()) -> dict[str, Any] | None:
        """A document ``principal`` may read, with the text of each quoted range (``ranges`` as
        document offsets, and the span of each of its chunks in ``chunk_ids``: a hit's or a
        citation's ``chunk_id``); None when it does not exist or is not theirs (the two look
        the same, so ids cannot be probed)."""
        doc = self.kb.document(doc_id, principal or ANONYMOUS)
        if doc is None:
            return None
        ranges = list(ranges)
        for chunk_id in chunk_ids:
            chunk = self.kb.chunk(chunk_id, principal or ANONYMOUS)
            if chunk is None or chunk.doc_id != doc.doc_id:
                raise ConfigError(f"chunk {chunk_id!r} is not a chunk of document {doc_id!r}; "
                                  "give the chunk_id of one of its hits or citations")
            ranges.append((chunk.start, chunk.end))
        quotes = []
        for start, end in ranges:
            if not 0 <= start <= end <= len(doc.text):
                raise ConfigError(f"quote range {start}:{end} is outside the document (0:{len(doc.text)}); "
                                  "give start:end offsets from a citation")
            quotes.append({"start": start, "end": end, "text": doc.text[start:end]})
        return {"doc_id": doc.doc_id, "source": doc.source, "title": doc.metadata.get("title"),
                "metadata": shown_metadata(doc.metadata), "text": doc.text, "quotes": quotes}

    def ingest_files(self, paths: Sequence[Path], principal: Principal | None = None) -> dict[str, Any]:
        """Ingest files already on disk as ``principal``: documents get the uploader's tenant
        (it binds: a file may only repeat it), a file that names another tenant under any
        spelling, an acl without the principal, a ranking status, authority or version, or an ``id:`` is
        refused (:class:`AccessDenied`, see :func:`refuse_foreign_claims`), re-ingests that would widen a
        document's access are refused, as on the CLI, and no stored vector is reused (kb.ingest's
        ``reuse_vectors``: the time taken must not tell whether a text is stored elsewhere)."""
        principal = principal or Principal()
        rules = binding_rules(principal)
        for path in paths:
            refuse_foreign_claims(path, principal)
        report = self.kb.ingest([str(p) for p in paths], rules=rules, progress=False, reuse_vectors=False)
        out: dict[str, Any] = report.to_json()
        return out

    def delete(self, doc_ids: Sequence[str] = (), *, where: FilterLike = None) -> dict[str, Any]:
        return self.kb.delete(doc_ids, where=combine(where))

    def status(self, principal: Principal | None = None) -> dict[str, Any]:
        """The whole index's status (None: an operator), or what ``principal`` may know of it:
        its own documents' counts and facets (:meth:`KnowledgeBase.readable_status`)."""
        return self.kb.status() if principal is None else self.kb.readable_status(principal)


class AccessDenied(BelegError, PermissionError):
    """The principal may not do this (the server answers 403)."""


def refuse_foreign_claims(path: Path, principal: Principal, *, may_rank: bool = False,
                          policy: GovernancePolicy | None = None) -> None:
    """What a tenant's key may not upload, refused with AccessDenied (403) before anything is
    stored. Its metadata is trusted only as far as the key reaches, under any spelling of a key
    that ingest reads (``"tenant ": beta`` is a tenant):

    - another tenant (:func:`binding_rules` is what guarantees the tenant; this says why);
    - an ``acl`` that leaves the uploader out: the document would be planted for others, out of
      reach of the key that put it there (it could neither read, replace nor delete it);
    - an ``id:``. Ids are one namespace across tenants, so whether a declared id was taken
      would tell the key that another tenant's document exists (and a free one could be
      squatted); an upload is identified by its tenant and file name;
    - unless ``may_rank`` (an admin's key), a ``status`` or ``authority`` that ranks above an
      undeclared document's in ``policy`` (``current``, ``contract``...), or a ``version``:
      either would let the upload govern the tenant's answers over the documents the operator
      ingested (a question naming a major version is held to its newest stored version).
    """
    from beleg.ingest.metadata import declared_tenants, key_name
    from beleg.ingest.readers import reader_for

    if not principal.tenant:
        return  # an operator's key: uploads keep the tenant and ids their files name
    try:
        declared = reader_for(path).read(path.read_bytes(), path, None).metadata
    except (OSError, BelegError):
        return  # unreadable: the file fails in the report with its reason
    other = sorted(declared_tenants(declared) - {Principal.fold(principal.tenant)})
    if other:
        raise AccessDenied(f"{path.name} declares tenant {other[0]!r}, but this key belongs to tenant "
                           f"{principal.tenant!r}; upload it with a key of that tenant or remove the field")
    for acl in _declared_values(declared, "acl"):
        if not principal.may_read({"acl": acl}):
            raise AccessDenied(f"{path.name} declares 'acl' {acl}, which leaves out this key (user "
                               f"{principal.user!r}, groups {list(principal.groups)}): it could neither read nor "
                               "replace the document. Add user:NAME or one of the key's groups, or remove the field")
    if any(key_name(key) == "id" for key in declared):
        raise AccessDenied(f"{path.name} declares an 'id:', which uploads through a tenant's key may not do "
                           "(ids are shared by all tenants); remove it: the upload is known by its file name")
    if not may_rank:
        claim = _ranking_claim(declared, policy or _default_policy())
        if claim is not None:
            raise AccessDenied(f"{path.name} declares {claim[0]!r} {claim[1]!r}, which would rank it above the "
                               "documents the operator ingested for this tenant; only an admin's key (or the "
                               f"operator) may, so remove the field or declare a lower {claim[0]}")


def _declared_values(declared: dict[str, Any], key: str) -> list[Any]:
    """Every value ``declared`` gives ``key`` under any spelling, in the form ingest stores;
    a value ingest would refuse is left out (that file fails at ingest)."""
    from beleg.ingest.metadata import MetadataError, key_name, normalize

    out = []
    for raw_key, value in declared.items():
        if key_name(raw_key) == key:
            try:
                out.append(normalize({key: value})[key])
            except (MetadataError, KeyError):  # KeyError: a null value, which ingest drops
                continue
    return out


def _ranking_claim(declared: dict[str, Any], policy: GovernancePolicy) -> tuple[str, str] | None:
    """The first ``(field, value)`` of ``declared`` that would rank a document above one that
    declares nothing (status and authority ``unknown``), or any ``version``; None when there is none."""
    from beleg.ingest.metadata import DEFAULT_STATUS_SYNONYMS, STATUSES

    versions = _declared_values(declared, "version")
    if versions:
        return "version", str(versions[0])
    for status in _declared_values(declared, "status"):  # the governed word, as the server's ingest maps it
        governed = status if status in STATUSES else DEFAULT_STATUS_SYNONYMS.get(status, "unknown")
        if policy.status_rank(governed) < policy.status_rank("unknown"):
            return "status", status
    for authority in _declared_values(declared, "authority"):
        if policy.authority_rank(authority) < policy.authority_rank("unknown"):
            return "authority", authority
    return None


def _default_policy() -> GovernancePolicy:
    from beleg.answer.evidence import GovernancePolicy

    return GovernancePolicy()


def binding_rules(principal: Principal) -> list[Any]:
    """A tenant key's tenant binds what it ingests: it outranks the files' front matter, which
    may only repeat it (:class:`~beleg.ingest.metadata.MetadataRule`), so an upload can never
    land in another tenant, whatever :func:`refuse_foreign_claims` made of the file."""
    from beleg.ingest.metadata import MetadataRule

    if not principal.tenant:
        return []
    tenant = Principal.fold(principal.tenant)
    if not tenant:
        raise AccessDenied("this key's tenant is blank, so its uploads would belong to no tenant; "
                           "give the key a tenant, or none for an operator's key")
    return [MetadataRule("*", {"tenant": tenant}, binding=True)]
