"""The permission-leak suite on the demo corpus: many probes, no leak, controls found, and it can fail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from beleg.evaluate.leaks import (
    KINDS,
    SEARCH_MODES,
    LeakReport,
    candidate_markers,
    find_markers,
    run_leak_suite,
)
from beleg.kb import KnowledgeBase
from beleg.types import Principal

RUNBOOKS = {"nordwind-dlq-backlog.md", "nordwind-failover.md", "sonnenhof-rate-limit-escalation.md",
            "sonnenhof-wartungsfenster.md"}


@pytest.fixture(scope="module")
def report(demo_kb) -> LeakReport:
    # Two identifiers (plus the title) per restricted document keep this under a minute;
    # every marker of every document is still checked in every output.
    return run_leak_suite(demo_kb, max_identifiers=2)


def _short(source: str) -> str:
    return source.rsplit("/", 1)[-1]


def test_probes_are_derived_from_the_index_and_cover_every_path(report: LeakReport) -> None:
    assert {_short(d.source) for d in report.documents} == RUNBOOKS
    for doc in report.documents:
        assert len(doc.identifiers) == 3 and doc.identifiers[-1] == doc.title
        assert doc.chunk_ids and len(doc.markers) >= 10
    idents = {i for d in report.documents for i in d.identifiers}
    assert {"q_nw4k8sst01", "INC-NW-7802", "wh_sh71ingest4", "acc_sh_90577"} <= idents
    assert report.probes >= 1000, report.render_text()
    assert set(report.counts) == set(KINDS)
    for kind in ("search", "filter"):
        assert set(SEARCH_MODES) <= set(report.counts[kind])
    assert {"extractive", "llm"} <= set(report.counts["ask"])
    assert {"extractive", "llm", "context"} <= set(report.counts["chat"])
    assert {"document", "chunk", "source-as-id"} <= set(report.counts["read-by-id"])
    roles = set(report.by_role)
    assert {"anonymous", "same tenant, no acl group", "acl group, wrong tenant", "tenant nordwind (ops)",
            "tenant sonnenhof (ops)"} <= roles


def test_no_content_leaks_through_any_retriever_read_or_answer(report: LeakReport) -> None:
    content = [leak for leak in report.leaks if leak.probe.kind != "oracle"]
    assert content == [], report.render_text()
    assert report.errors == []
    for kind in ("search", "filter", "read-by-id", "ask", "chat"):
        assert report.leaks_by_kind()[kind] == 0


def test_controls_show_the_probes_could_find_the_documents(report: LeakReport) -> None:
    assert report.control_rate is not None and report.control_rate >= 0.9, report.missed_controls
    assert report.controls_by_kind["read-by-id"]["found"] == report.controls_by_kind["read-by-id"]["controls"]
    search = report.controls_by_kind["search"]
    assert search["found"] >= 0.8 * search["controls"]


def test_no_term_existence_oracle(report: LeakReport) -> None:
    """Hybrid weighting (and the scores it reports) must not depend on words in unreadable documents."""
    oracle = [leak for leak in report.leaks if leak.probe.kind == "oracle"]
    assert oracle == [], "\n".join(f"{leak.probe.name}: {leak.what[0]}" for leak in oracle[:5])


def test_report_json_and_text(report: LeakReport) -> None:
    data = json.loads(json.dumps(report.to_json()))
    assert data["probes"] == report.probes == sum(k["probes"] for k in data["by_kind"].values())
    assert data["leaks_total"] == len(report.leaks) == sum(k["leaks"] for k in data["by_kind"].values())
    assert data["controls"] == report.controls and data["controls_found"] == report.controls_found
    assert sum(m["probes"] for m in data["by_mode"].values()) == report.probes
    text = report.render_text()
    assert "search" in text and "hybrid+mmr" in text and "controls" in text
    assert f"{report.probes}" in text


# ------------------------------------------------------------------ the suite can fail


@dataclass(frozen=True, slots=True)
class _Root(Principal):
    """What a buggy code path might search as: it may read everything."""

    @property
    def access_key(self) -> tuple[Any, ...]:  # type: ignore[override]
        return ("<root>", None, ())

    def may_read(self, metadata: dict[str, Any]) -> bool:
        return True


class _Leaky(KnowledgeBase):
    """The demo index opened again with one planted bug: one path ignores the caller's principal."""

    def __init__(self, base: KnowledgeBase, *, bm25: bool = False, llm: bool = False) -> None:
        super().__init__(base.path, embedder=base.embedder)
        self._base, self._bm25, self._llm = base, bm25, llm

    @property
    def sentence_vectors(self) -> Any:  # share the demo index's cache: same texts, same vectors
        return self._base.sentence_vectors

    def search(self, query: str, **kw: Any) -> Any:
        if self._bm25 and kw.get("mode") == "bm25":
            kw["principal"] = _Root()
        return super().search(query, **kw)

    def ask(self, question: str, **kw: Any) -> Any:
        if self._llm and kw.get("llm") is not None:
            kw["principal"] = _Root()
        return super().ask(question, **kw)


def test_a_planted_search_leak_is_found_in_that_mode_only(demo_kb) -> None:
    with _Leaky(demo_kb, bm25=True) as leaky:
        rep = run_leak_suite(leaky, kinds=("search", "filter", "read-by-id"), max_identifiers=1)
    assert rep.leaks and not rep.ok
    assert {leak.probe.mode for leak in rep.leaks} == {"bm25"}
    assert {leak.probe.kind for leak in rep.leaks} == {"search", "filter"}
    leaked_to_anonymous = {_short(d.source) for d in rep.documents
                           if any(leak.probe.target == d.doc_id and leak.probe.role == "anonymous"
                                  for leak in rep.leaks)}
    assert leaked_to_anonymous == RUNBOOKS
    assert any("chunk" in w for leak in rep.leaks for w in leak.what)
    assert rep.counts["search"]["dense"]["leaks"] == 0 and rep.counts["search"]["bm25"]["leaks"] > 0


def test_a_planted_answer_leak_is_found_in_sources_and_prompt(demo_kb) -> None:
    with _Leaky(demo_kb, llm=True) as leaky:
        rep = run_leak_suite(leaky, kinds=("ask",), max_identifiers=1)
    assert rep.counts["ask"]["llm"]["leaks"] > 0 and rep.counts["ask"]["extractive"]["leaks"] == 0
    parts = {w.split(":", 1)[0] for leak in rep.leaks for w in leak.what}
    assert {"sources", "prompt", "answer"} <= parts


# ------------------------------------------------------------------ markers


def test_markers_match_whole_tokens_case_insensitively() -> None:
    assert find_markers("Host MQ-Nordwind-01.internal is down.", ["mq-nordwind-01.internal", "nordwind"]) == [
        "mq-nordwind-01.internal", "nordwind"]
    assert find_markers("nordwinds and xnordwind", ["nordwind"]) == []
    assert find_markers("call +49 40 5550 2294 now", ["+49 40 5550 2294"]) == ["+49 40 5550 2294"]


def test_candidate_markers_are_identifiers_phones_and_title_words() -> None:
    text = "Host `mq-x-01.internal`, code INC-NW-7731, call +49 40 5550 2294 at 01:30 on 2026-02-12, rate 200."
    cands = candidate_markers(text, "Nordwind Runbook: Backlog")
    assert {"mq-x-01.internal", "INC-NW-7731", "+49 40 5550 2294", "Nordwind", "Runbook", "Backlog"} <= set(cands)
    assert not {"01:30", "2026-02-12", "200"} & set(cands)


# ------------------------------------------------------------------ CLI


def test_cli_leaks_json(demo_kb, capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    code = main(["leaks", "--index", str(demo_kb.path), "--json", "--kinds", "search,read-by-id",
                 "--max-identifiers", "1", "--no-progress"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["ok"] is True and data["leaks_total"] == 0
    assert data["probes"] > 100 and set(data["by_kind"]) == {"search", "read-by-id"}
    assert data["controls_found"] >= 0.9 * data["controls"]


def test_cli_leaks_exit_code_follows_the_report(demo_kb, capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    code = main(["leaks", "--index", str(demo_kb.path), "--kinds", "oracle", "--max-identifiers", "1",
                 "--no-progress"])
    out = capsys.readouterr().out
    assert "oracle" in out and "controls" in out
    assert code == (1 if "LEAKS" in out else 0)


def test_cli_leaks_rejects_unknown_kinds(demo_kb, capsys: pytest.CaptureFixture[str]) -> None:
    from beleg.cli.main import main

    assert main(["leaks", "--index", str(demo_kb.path), "--kinds", "telepathy"]) == 1
    assert "unknown probe kinds" in capsys.readouterr().err
