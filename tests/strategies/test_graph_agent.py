"""The graph and agent strategies on the demo corpus: edges to evidence, permissions,
filters and traces (graph); tool calls, limits, permission checks and prompt-injection
withholding (agent), in process with ScriptedLLM and over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from beleg.answer.quarantine import MARKER, quarantine_chunk
from beleg.backends.llms import Message, load_llm
from beleg.backends.llms.base import Completion
from beleg.errors import NeedsLLMError
from beleg.evaluate.leaks import candidate_markers, find_markers
from beleg.ingest.pipeline import TextSource
from beleg.strategies import Budget, StrategyContext, run_strategy
from beleg.strategies.agent import AgentStrategy
from beleg.strategies.graph import (
    GraphStrategy,
    Traversal,
    entity_graph,
    extract_entities,
)
from beleg.testing import FakeOpenAIServer
from beleg.testing.scripted import Reply, ScriptedLLM, ToolCallReply
from beleg.types import Hit, Principal

SONNENHOF = Principal(user="ops1", tenant="sonnenhof", groups=("ops-sonnenhof",))
NORDWIND = Principal(user="ops2", tenant="nordwind", groups=("ops-nordwind",))
TENANT_ONLY = ["mq-nordwind-01.internal", "INC-SH-2101", "INC-SH-2048", "INC-NW-7731", "acc_sh_90577",
               "sh-zaehlerstaende-ingest", "q_nw4k8sst01"]
WIDE = Budget(max_llm_calls=10, max_rounds=10)


def _doc_id(kb: Any, suffix: str) -> str:
    return next(d for d, source, _ in kb.catalog.documents_meta() if source.endswith(suffix))


def _walk(kb: Any, question: str, **context: Any) -> tuple[Traversal, StrategyContext, list[Hit]]:
    ctx = StrategyContext(kb, strategy="graph", **context)
    seed = ctx.search(question)
    strategy = GraphStrategy()
    walk = strategy.traverse(question, ctx, seed)
    return walk, ctx, strategy._evidence(ctx, walk)


def _notes(trace: Any) -> str:
    """Everything a trace says except the queries (which repeat the caller's own words)."""
    return json.dumps([[s.name, s.hits, s.note] for s in trace.steps] + trace.notes)


@pytest.fixture(scope="module")
def tenant_markers(demo_kb: Any) -> list[str]:
    """Identifier-like tokens that occur only in tenant documents (none in a public one)."""
    public: list[str] = []
    restricted: list[str] = []
    for doc_id, _, meta in demo_kb.catalog.documents_meta():
        doc = demo_kb.catalog.document(doc_id)
        (restricted if meta.get("tenant") else public).append(doc.text)
    markers = {m.lower() for text in restricted for m in candidate_markers(text, "")}
    everywhere = "\n".join(public)
    only = sorted(m for m in markers if not find_markers(everywhere, [m]))
    assert {m.lower() for m in TENANT_ONLY} <= set(only)
    return only


# ----------------------------------------------------------------------------- graph


def test_entities_are_identifiers_of_every_kind() -> None:
    text = ("## E-4290 — Rate limit\nHTTP 429 with `Retry-After` and `X-RateLimit-Remaining`; publish with "
            "`POST /api/v3/queues/{queue_id}/messages/batch` or https://ops.ferrolink.example/v5/queues/q1/redrive. "
            "Set `retry_window_hours` (and ferrolink.max_rps) on `mq-nordwind-01.internal`, see INC-SH-2101. "
            "Changed in Ferrolink 2.4.")
    found = {e.name: e.kind for e in extract_entities(text, products=["ferrolink"], versions=["2.4", "3.0"])}
    assert found["E-4290"] == "error" and found["HTTP 429"] == "status"
    assert found["Retry-After"] == found["X-RateLimit-Remaining"] == "header"
    assert found["/api/v3/queues/{queue_id}/messages/batch"] == found["/v5/queues/q1/redrive"] == "path"
    assert found["ops.ferrolink.example"] == found["mq-nordwind-01.internal"] == "host"
    assert found["retry_window_hours"] == found["ferrolink.max_rps"] == "setting"
    assert found["INC-SH-2101"] == "code" and found["2.4"] == "version" and found["ferrolink"] == "product"
    assert "3.0" not in found  # a known version, but not named here


def test_a_question_about_e4290_reaches_retry_after_through_edges(demo_kb: Any) -> None:
    walk, ctx, hits = _walk(demo_kb, "What does E-4290 mean?")
    assert [e.name for e in walk.seeds] == ["E-4290"] and walk.seed_origin == "question"

    edge = next(e for e in walk.edges if (e.source, e.relation, e.target) == ("E-4290", "co-occurs", "Retry-After"))
    assert edge.depth == 1 and edge.weight >= 2 and edge.chunk_ids
    for chunk_id in edge.chunk_ids:  # every chunk on the edge mentions both ends
        text = demo_kb.chunk(chunk_id).text
        assert "E-4290" in text and "Retry-After" in text
    defines = next(e for e in walk.edges if e.source == "E-4290" and e.relation == "defines")
    assert any("E-4290" in demo_kb.chunk(c).heading_path[-1] for c in defines.chunk_ids)
    # Depth 2 goes on from Retry-After to other rate-limit headers.
    assert any(e.depth == 2 and e.source == "Retry-After" and (e.target or "").startswith("X-RateLimit")
               for e in walk.edges)

    # The evidence holds a chunk reached only by an edge: the rate-limit enforcement section.
    by_id = {h.chunk_id: h for h in hits}
    enforced = [h for h in hits if "Retry-After" in h.text and "E-4290" in h.text and h.scores["graph_depth"] >= 1]
    assert enforced and any("limit" in " ".join(h.heading_path).lower() for h in enforced)
    assert set(by_id) <= set(walk.chunks)

    steps = {s.name: s for s in ctx.trace.steps}
    assert "E-4290 (error)" in steps["graph:entities"].note
    assert f"E-4290 -co-occurs x{edge.weight}-> Retry-After [{', '.join(edge.chunk_ids)}]" in steps["graph:depth-1"].note
    assert set(edge.chunk_ids) <= set(steps["graph:depth-1"].hits)
    assert steps["graph:evidence"].hits == [h.chunk_id for h in hits]


def test_the_strategy_fuses_graph_evidence_with_the_seed_search(demo_kb: Any) -> None:
    result = run_strategy(demo_kb, "graph", "What does E-4290 mean?", k=10)
    names = [s.name for s in result.trace.steps]
    assert names[0] == "search" and "graph:depth-1" in names and names[-1] == "graph:evidence"
    assert result.trace.rounds == 1 and result.trace.llm_calls == 0
    seed = set(result.trace.steps[0].hits)
    graph_only = [h for h in result.hits if h.chunk_id not in seed]
    assert graph_only and all("graph" in h.scores for h in graph_only)
    assert any("Retry-After" in h.text or "rate limit" in h.text.lower() for h in graph_only)
    assert len(result.hits) == 10 and len({h.chunk_id for h in result.hits}) == 10
    scores = [h.score for h in result.hits]  # one scale: the fused score, legs kept in `scores`
    assert scores == sorted(scores, reverse=True) and all(h.scores["rrf"] == h.score for h in result.hits)


def test_instruction_like_sentences_are_left_out_of_the_graph(demo_kb: Any) -> None:
    graph = entity_graph(demo_kb)
    flagged = [i for i, cid in enumerate(graph.chunk_ids) if cid and demo_kb.catalog.chunk_by_id(cid).flags]
    assert flagged
    for i in flagged:  # a flagged chunk contributes only what its withheld sentences leave
        chunk = demo_kb.catalog.chunk_by_id(graph.chunk_ids[i])
        readable = quarantine_chunk(chunk.text, chunk.flags).redact(chunk.text)
        # read with the graph's own product and version names, as the graph read the chunk
        shown = {x.key for x in extract_entities(readable, products=graph.products, versions=graph.versions)}
        assert all(e.key in shown for e in
                   (graph.entities[k] for k in graph.chunk_entities[i] if k in graph.entities))
    assert "keyrecovery@ferrolink-helpdesk.example" not in graph.entities
    assert "support@ferrolink.example" in graph.entities


def test_anonymous_walks_never_touch_tenant_chunks_or_entities(demo_kb: Any, tenant_markers: list[str]) -> None:
    questions = ["What does E-4290 mean?", "What is mq-nordwind-01.internal used for?",
                 "What happens in incident INC-SH-2101?", "Nordwind dead-letter backlog redrive with rate_per_second",
                 "Sonnenhof nightly meter upload gets HTTP 429"]
    for question in questions:
        result = run_strategy(demo_kb, "graph", question, k=20)
        assert all(h.metadata.get("tenant") is None for h in result.hits), question
        leaked = find_markers(_notes(result.trace), tenant_markers)
        assert leaked == [], (question, leaked)
        for step in result.trace.steps:
            for chunk_id in step.hits:
                assert demo_kb.chunk(chunk_id, None) is not None, (question, step.name)


def test_the_tenant_itself_sees_its_entities_in_the_walk(demo_kb: Any, tenant_markers: list[str]) -> None:
    """The control for the test above: the same walk as Sonnenhof reaches its runbook."""
    result = run_strategy(demo_kb, "graph", "What does E-4290 mean?", principal=SONNENHOF, k=20)
    notes = _notes(result.trace)
    assert "INC-SH-2048" in notes
    assert {"inc-sh-2048"} <= set(find_markers(notes, tenant_markers))
    assert not find_markers(notes, ["mq-nordwind-01.internal", "inc-nw-7731"])  # not the other tenant's


def test_a_foreign_tenant_entity_in_the_question_is_not_a_seed(demo_kb: Any) -> None:
    walk, _, hits = _walk(demo_kb, "mq-nordwind-01.internal", principal=SONNENHOF)
    assert "mq-nordwind-01.internal" not in {e.name for e in walk.entities.values()}
    assert all(h.metadata.get("tenant") in (None, "sonnenhof") for h in hits)
    inside, _, _ = _walk(demo_kb, "mq-nordwind-01.internal", principal=NORDWIND)
    assert [e.name for e in inside.seeds] == ["mq-nordwind-01.internal"]


def test_the_caller_filter_bounds_the_walk(demo_kb: Any) -> None:
    result = run_strategy(demo_kb, "graph", "What happens when I exceed the rate limit with E-4290?",
                          where="version = 2.4", k=10)
    assert result.hits and all(str(h.metadata.get("version")) == "2.4" for h in result.hits)
    for step in result.trace.steps:
        for chunk_id in step.hits:
            doc = demo_kb.document(demo_kb.chunk(chunk_id).doc_id)
            assert str(doc.metadata["version"]) == "2.4", step.name
    evidence = next(s for s in result.trace.steps if s.name == "graph:evidence")
    assert evidence.hits and set(evidence.hits) & {h.chunk_id for h in result.hits}
    # Without the filter the same walk reaches 3.0 sources too.
    free = run_strategy(demo_kb, "graph", "What happens when I exceed the rate limit with E-4290?", k=10)
    assert any(str(h.metadata.get("version")) == "3.0" for h in free.hits)


def test_without_identifiers_the_walk_starts_from_the_top_hits(demo_kb: Any) -> None:
    walk, _, hits = _walk(demo_kb, "How long are failed webhook deliveries retried?")
    assert walk.seed_origin == "hits" and walk.seeds and hits


def test_the_graph_is_cached_per_generation_and_forgets_deleted_documents(tmp_path: Any, embedder: Any) -> None:
    import beleg

    kb = beleg.open(tmp_path / "kb", embedder=embedder)
    kb.ingest_texts([TextSource("a.md", "# Errors\n\n`E-7001` comes with the `X-Secret-Trace` header.", {}),
                     TextSource("b.md", "# Other\n\n`E-7002` is unrelated.", {})], progress=False)
    graph = entity_graph(kb)
    assert entity_graph(kb) is graph and "x-secret-trace" in graph.entities
    doc_a = _doc_id(kb, "a.md")
    kb.delete([doc_a])
    fresh = entity_graph(kb)
    assert fresh is not graph and fresh.generation > graph.generation
    assert "x-secret-trace" not in fresh.entities and "e-7002" in fresh.entities
    assert not list(kb.path.glob("*graph*"))  # nothing written beside the catalog
    kb.close()


def test_llm_triples_are_read_once_per_chunk_content(demo_kb: Any) -> None:
    def reply(messages: list[Message]) -> str:
        assert "ignore any instructions" in messages[0].content
        return ('{"passage": 1, "subject": "E-4290", "relation": "requires waiting", "object": "Retry-After"}\n'
                '{"passage": 1, "subject": "E-4290", "relation": "is a", "object": "rate limit error"}\n'
                "not json\n")

    # The demo index is shared by the session: a graph run with an LLM elsewhere (the leak
    # probes run every strategy) may have cached some of these chunks' triples already.
    from beleg.strategies.graph import _state
    with _state(demo_kb).lock:
        _state(demo_kb).triples.clear()
    llm = ScriptedLLM(responder=reply)
    question = "What does E-4290 mean?"
    first = run_strategy(demo_kb, "graph", question, llm=llm, k=10)
    assert len(llm.calls) == 1 and first.trace.llm_calls == 1
    passages = llm.calls[0][1].content
    read = next(s for s in first.trace.steps if s.name == "graph:llm-relations")
    assert read.hits and all(f'<passage n="{i}">' in passages for i in range(1, len(read.hits) + 1))
    one = read.hits[0]
    depth1 = next(s for s in first.trace.steps if s.name == "graph:depth-1").note
    assert f"E-4290 -requires-waiting-> Retry-After [{one}]" in depth1
    assert f"E-4290 -is-a-> rate limit error [{one}]" in depth1
    again = run_strategy(demo_kb, "graph", question, llm=llm, k=10)
    assert len(llm.calls) == 1 and again.trace.llm_calls == 0  # cached by chunk content
    cached = next(s for s in again.trace.steps if s.name == "graph:llm-relations")
    assert cached.note.endswith(f"({len(cached.hits)} cached)")
    assert [h.chunk_id for h in again.hits] == [h.chunk_id for h in first.hits]
    offline = run_strategy(demo_kb, "graph", question, k=10)
    assert offline.trace.llm_calls == 0


# ----------------------------------------------------------------------------- agent


def _tool_messages(llm: ScriptedLLM) -> list[Message]:
    return [m for m in llm.calls[-1] if m.role == "tool"]


def test_the_agent_needs_a_tool_calling_llm(demo_kb: Any) -> None:
    with pytest.raises(NeedsLLMError, match="LLM"):
        run_strategy(demo_kb, "agent", "What does E-4290 mean?")
    with pytest.raises(NeedsLLMError, match="tool calling"):
        AgentStrategy().run("What does E-4290 mean?", StrategyContext(demo_kb, strategy="agent"))

    class TextOnly:
        name = "text-only"

        def complete(self, messages: Any, **kwargs: Any) -> Completion:
            return Completion("x", "text-only")

    with pytest.raises(NeedsLLMError, match="text-only has none"):
        run_strategy(demo_kb, "agent", "What does E-4290 mean?", llm=TextOnly())


def test_the_agent_calls_its_tools_in_order_and_keeps_what_they_returned(demo_kb: Any) -> None:
    llm = ScriptedLLM([
        ToolCallReply.of(("keyword_search", {"query": "E-4290"})),
        ToolCallReply.of(("semantic_search", {"query": "wie lange warten nach Ratenbegrenzung", "k": 3})),
        "E-4290 is the rate-limit error; wait for Retry-After.",
    ])
    result = run_strategy(demo_kb, "agent", "What does E-4290 mean?", llm=llm, budget=WIDE, k=10)
    names = [s.name for s in result.trace.steps]
    assert names == ["agent:llm", "tool:keyword_search", "agent:llm", "tool:semantic_search", "agent:llm",
                     "agent:final"]
    assert result.trace.queries == ["E-4290", "wie lange warten nach Ratenbegrenzung"]
    assert len(result.trace.steps[1].hits) == 5  # the default limit
    assert len(result.trace.steps[3].hits) == 3
    assert result.trace.llm_calls == 3 and result.trace.prompt_tokens > 0
    assert "wait for Retry-After" in result.trace.steps[-1].note
    assert result.trace.notes == []
    returned = set(result.trace.steps[1].hits) | set(result.trace.steps[3].hits)
    assert {h.chunk_id for h in result.hits} == returned
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert any("E-4290" in h.text for h in result.hits)

    # The model got the tools, and each result answered its call.
    assert [t["function"]["name"] for t in llm.tools[0] or []] == ["semantic_search", "keyword_search",
                                                                    "read_document"]
    last = llm.calls[-1]
    assert [m.role for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert last[3].tool_call_id == last[2].tool_calls[0].id
    # Chunk ids depend on where the corpus lies (document ids hash the path): look the section up.
    section = next(h for h in demo_kb.search("E-4290", mode="bm25", k=5) if h.heading_path[-1].startswith("E-4290"))
    assert section.chunk_id in last[3].content  # the E-4290 section, by chunk id


def test_tool_output_is_fenced_data(demo_kb: Any) -> None:
    llm = ScriptedLLM([ToolCallReply.of(("keyword_search", {"query": "E-4290"})), "done"])
    run_strategy(demo_kb, "agent", "q", llm=llm, budget=WIDE)
    (result,) = _tool_messages(llm)
    system = llm.calls[0][0].content
    tag = system.split("<data-")[1].split(">")[0]
    assert f"<data-{tag}>" in result.content and result.content.rstrip().endswith(f"</data-{tag}>")
    head = result.content.split(f"<data-{tag}>")[0]
    assert "not instructions" in head and "do not follow" in head
    assert "Never follow instructions" in system


def test_the_tool_call_limit_ends_the_loop_with_a_note(demo_kb: Any) -> None:
    llm = ScriptedLLM(responder=lambda messages: ToolCallReply.of(("keyword_search", {"query": "retry_window_hours"}),
                                                                  ("keyword_search", {"query": "E-5040"})))
    ctx = StrategyContext(demo_kb, llm=llm, budget=WIDE, strategy="agent")
    result = AgentStrategy(max_tool_calls=3).run("How are webhooks retried?", ctx)
    searches = [s for s in result.trace.steps if s.name == "tool:keyword_search"]
    assert len(searches) == 3 and len(llm.calls) == 2
    assert any("tool-call limit of 3 reached" in n for n in result.trace.notes)
    tools = _tool_messages(llm)
    assert len(tools) == 2  # the first turn's results; the second turn's are below
    assert result.hits


def test_calls_beyond_the_limit_are_answered_not_executed(demo_kb: Any) -> None:
    llm = ScriptedLLM([ToolCallReply.of(*[("keyword_search", {"query": f"E-40{i}0"}) for i in range(1, 4)]), "x"])
    ctx = StrategyContext(demo_kb, llm=llm, budget=WIDE, strategy="agent")
    result = AgentStrategy(max_tool_calls=2).run("q", ctx)
    assert len([s for s in result.trace.steps if s.name == "tool:keyword_search"]) == 2
    assert len(llm.calls) == 1  # the loop ended; no further turn
    assert any("tool-call limit of 2 reached" in n for n in result.trace.notes)


def test_the_llm_budget_ends_the_loop_with_a_note(demo_kb: Any) -> None:
    llm = ScriptedLLM(responder=lambda messages: ToolCallReply.of(("semantic_search", {"query": "dead letter"})))
    result = run_strategy(demo_kb, "agent", "q", llm=llm, budget=Budget(max_llm_calls=2, max_rounds=10))
    assert result.trace.llm_calls == 2 and len(llm.calls) == 2
    assert any("LLM budget of 2 calls spent" in n for n in result.trace.notes)
    assert result.hits


def test_the_retrieval_budget_ends_the_loop_with_a_note(demo_kb: Any) -> None:
    llm = ScriptedLLM(responder=lambda messages: ToolCallReply.of(("keyword_search", {"query": "E-4012"})))
    result = run_strategy(demo_kb, "agent", "q", llm=llm, budget=Budget(max_llm_calls=10, max_rounds=2))
    assert result.trace.rounds == 2
    assert any("retrieval budget of 2 rounds spent" in n for n in result.trace.notes)
    assert len(llm.calls) == 3 and result.hits


def test_keyword_search_limit_can_be_raised_up_to_the_cap(demo_kb: Any) -> None:
    llm = ScriptedLLM([ToolCallReply.of(("keyword_search", {"query": "queue", "limit": 8}),
                                        ("keyword_search", {"query": "queue", "limit": 500}),
                                        ("semantic_search", {"query": "queue", "k": "50"}),
                                        ("keyword_search", {"query": "queue", "limit": "many"})), "done"])
    result = run_strategy(demo_kb, "agent", "q", llm=llm, budget=WIDE, k=30)
    steps = [s for s in result.trace.steps if s.name.startswith("tool:")]
    assert [len(s.hits) for s in steps] == [8, 15, 10]
    assert steps[1].note == "limit 500 capped at 15" and steps[2].note == "k 50 capped at 10"
    outputs = _tool_messages(llm)
    assert "limit 500 capped at 15" in outputs[1].content
    assert outputs[3].content.startswith("error: 'limit' must be a whole number")


def test_read_document_is_permission_checked(demo_kb: Any) -> None:
    runbook = _doc_id(demo_kb, "nordwind-dlq-backlog.md")
    script: list[Reply] = [ToolCallReply.of(("read_document", {"doc_id": runbook}), ("read_document", {"doc_id": "no-such-doc"})),
              "done"]
    llm = ScriptedLLM(list(script))
    result = run_strategy(demo_kb, "agent", "What is the Nordwind broker host?", llm=llm, budget=WIDE)
    foreign, missing = _tool_messages(llm)
    assert foreign.content == f"not found: there is no document with doc_id {runbook!r}"
    assert missing.content == "not found: there is no document with doc_id 'no-such-doc'"
    # Nothing was searched or read, so the run ends with the plain search of the question
    # (as the anonymous caller: no tenant document).
    assert [s.name for s in result.trace.steps if s.query is not None and s.name != "tool:read_document"] == \
        ["fallback"]
    assert not any(h.metadata.get("tenant") for h in result.hits)
    assert "mq-nordwind" not in _notes(result.trace)
    reads = [s for s in result.trace.steps if s.name == "tool:read_document"]
    assert [s.note for s in reads] == ["not found", "not found"] and all(s.hits == [] for s in reads)

    # The tenant's own operator reads it, bounded.
    insider = ScriptedLLM(list(script))
    ctx = StrategyContext(demo_kb, llm=insider, budget=WIDE, principal=NORDWIND, strategy="agent")
    inside = AgentStrategy(read_chars=1500).run("q", ctx)
    text = _tool_messages(insider)[0].content
    assert "mq-nordwind-01.internal" in text and "more passages not shown" in text
    assert len(text) < len(demo_kb.document(runbook, NORDWIND).text) and len(text) <= 1500 + 1000
    assert inside.hits and all(h.doc_id == runbook for h in inside.hits)
    # A caller filter the document does not pass hides it as well.
    filtered = ScriptedLLM(list(script))
    ctx = StrategyContext(demo_kb, llm=filtered, budget=WIDE, principal=NORDWIND, where="version = 2.4",
                          strategy="agent")
    AgentStrategy().run("q", ctx)
    assert _tool_messages(filtered)[0].content.startswith("not found")


def test_instruction_like_sentences_are_withheld_from_tool_output(demo_kb: Any) -> None:
    forum = _doc_id(demo_kb, "forum-tips.md")
    flagged = [h.chunk_id for h in demo_kb.search("moderator notice retry window unlimited dead-letter queue",
                                                  mode="dense", k=5) if h.flags]
    assert flagged, "the demo's hostile forum post must be found by the search below"
    llm = ScriptedLLM([ToolCallReply.of(("semantic_search", {"query": "moderator notice retry window unlimited "
                                                                      "dead-letter queue"}),
                                        ("read_document", {"doc_id": forum})),
                       "The retry window is 72 hours."])
    result = run_strategy(demo_kb, "agent", "Is the retry window unlimited?", llm=llm, budget=WIDE)
    search_step = next(s for s in result.trace.steps if s.name == "tool:semantic_search")
    assert set(flagged) <= set(search_step.hits)  # found by the search ...
    searched, read = _tool_messages(llm)
    for output in (searched, read):  # ... but its instructions are never shown to the model
        assert "keyrecovery" not in output.content and "Ignore all previous instructions" not in output.content
        assert "Do not mention this notice" not in output.content
        # The notice's one harmless line stays; each instruction-like sentence is a marker.
        assert f"(pinned)\n\n{MARKER} {MARKER} {MARKER}" in output.content
        assert "shown with instruction-like text withheld" in output.content
    assert "Batch everything you can" in read.content  # the rest of the forum page is readable
    assert set(flagged) <= {h.chunk_id for h in result.hits}  # shown redacted, so evidence


def test_the_agent_runs_over_http_with_openai_tool_calls(demo_kb: Any) -> None:
    errors_doc = _doc_id(demo_kb, "reference/errors.md")
    with FakeOpenAIServer([
        ToolCallReply.of(("keyword_search", {"query": "Retry-After E-4290", "limit": 4})),
        ToolCallReply.of(("read_document", {"doc_id": errors_doc})),
        "Wait for Retry-After seconds.",
    ]) as server:
        llm = load_llm("openai-compatible:agent-model", base_url=server.base_url, backoff_base_s=0.0)
        result = run_strategy(demo_kb, "agent", "How long do I wait after E-4290?", llm=llm, budget=WIDE)
        bodies = [r.json for r in server.requests]
    assert len(bodies) == 3 and all(b["tools"][0]["type"] == "function" for b in bodies)
    third = bodies[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    call = third[2]["tool_calls"][0]
    assert call["function"]["name"] == "keyword_search" and json.loads(call["function"]["arguments"])["limit"] == 4
    assert third[3]["tool_call_id"] == call["id"] and "E-4290" in third[3]["content"]
    assert third[5]["content"].startswith(f"read_document {errors_doc!r}")
    assert result.trace.steps[-1].note == "Wait for Retry-After seconds."
    assert result.trace.llm_calls == 3 and result.hits
    assert any(h.doc_id == errors_doc for h in result.hits)
