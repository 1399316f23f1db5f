"""Render an answer evaluation: a terminal table and an HTML section (see :mod:`beleg.evaluate.answers`)."""

from __future__ import annotations

from html import escape
from typing import Any

from beleg.evaluate.answers import AnswerEvalReport, AnswerQueryResult, outcomes, tally
from beleg.evaluate.charts import risk_coverage_chart
from beleg.evaluate.report_text import plain
from beleg.evaluate.selective import risk_coverage

# --------------------------------------------------------------------------- rendering

#: Summary keys shown as rows, with their label and a one-line definition.
METRIC_ROWS: tuple[tuple[str, str, str], ...] = (
    ("answer_contains_gold", "answer contains gold", "answerable queries with gold strings whose answer contains one"),
    ("refusal_precision", "refusal precision", "refusals that were expected"),
    ("refusal_recall", "refusal recall", "expected refusals that happened"),
    ("refusal_f1", "refusal F1", "harmonic mean of refusal precision and recall"),
    ("false_refusal_rate", "false refusal rate", "answerable queries that were refused"),
    ("withheld", "withheld", "refusals with a candidate answer not shown to answer (count; the rest found none)"),
    ("not_covered_precision", "not-covered precision", "refusals without a candidate that were expected"),
    ("not_covered_recall", "not-covered recall", "expected refusals refused without a candidate"),
    ("citation_validity", "citation validity", "citations whose quote verified in the cited document"),
    ("answers_verified", "quotes verified", "non-refused answers with every citation and claim verified"),
    ("answers_supported", "answers supported", "non-refused answers whose cited text was shown to answer the question"),
    ("supported_but_wrong", "supported but wrong", "answers marked supported without a gold string (or to an "
                                                   "unanswerable question), over answered questions"),
    ("confidence_ece", "confidence ECE", "expected calibration error of confidence, 10 bins, answered questions"),
    ("uncited_answers", "uncited answers", "non-refused answers without any citation (count)"),
    ("cited_flagged_sources", "cited flagged sources", "answers citing a source with an ingest flag (count)"),
    ("conflict_detection", "conflict detection", "conflict questions whose answer reports a conflict"),
    ("governing_accuracy", "governing accuracy", "conflict questions where the gold governing document governs"),
    ("leaks", "leaks", "answers showing a source the asker may not read (count)"),
    ("latency_mean_s", "latency mean s", "wall time of one answer"),
    ("latency_p50_s", "latency p50 s", "median wall time"),
    ("latency_p95_s", "latency p95 s", "95th percentile wall time"),
    ("llm_calls", "LLM calls", "calls made to produce the answers"),
    ("llm_tokens", "LLM tokens", "tokens used to produce the answers"),
    ("judge_faithfulness", "judge: faithfulness", "mean score: answer supported by its cited sources"),
    ("judge_answer_relevance", "judge: answer relevance", "mean score: answer addresses the question"),
    ("judge_context_relevance", "judge: context relevance", "mean score: sources bear on the question"),
    ("judge_failures", "judge failures", "judge replies without a usable score (count)"),
    ("judge_calls", "judge calls", "calls made to the judge"),
    ("judge_tokens", "judge tokens", "tokens used by the judge"),
)
_COUNTS = frozenset({"withheld", "uncited_answers", "cited_flagged_sources", "leaks", "llm_calls", "llm_tokens",
                     "judge_failures", "judge_calls", "judge_tokens", "n", "answerable", "conflict_questions"})
#: Columns of the per-type table: summary key, short label.
TYPE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("n", "n"), ("answer_contains_gold", "gold"), ("refusal_f1", "ref F1"), ("false_refusal_rate", "false ref"),
    ("citation_validity", "cit valid"), ("answers_verified", "verified"), ("answers_supported", "supported"),
    ("supported_but_wrong", "sup wrong"), ("conflict_detection", "conflicts"),
    ("governing_accuracy", "governs"), ("leaks", "leaks"), ("latency_p50_s", "p50 s"),
)
_JUDGE_COLUMNS = (("judge_faithfulness", "faithful"), ("judge_answer_relevance", "ans rel"),
                  ("judge_context_relevance", "ctx rel"))


def format_metric(key: str, value: float | None) -> str:
    """Ratios and seconds with 3 decimals, counts as integers, ``n/a`` for ``None``."""
    if value is None:
        return "n/a"
    if key in _COUNTS:
        return str(int(value))
    return f"{value:.3f}"


def _type_columns(report: AnswerEvalReport) -> tuple[tuple[str, str], ...]:
    return TYPE_COLUMNS + (_JUDGE_COLUMNS if report.judged else ())


def failure_reasons(r: AnswerQueryResult) -> list[str]:
    """Why an answer counts as a failure; empty when it does not."""
    out = []
    if r.expected_refusal and not r.refused:
        out.append("answered, should refuse")
    if r.refused and not r.expected_refusal:
        out.append("refused, but answerable")
    if not r.refused and not r.expected_refusal and r.contains_gold is False:
        out.append("gold answer missing")
    if not r.refused and not r.verified:
        out.append("unverified")
    if not r.refused and r.supported and r.candidate_correct is False:
        out.append("supported but wrong")
    if not r.refused and r.citations == 0:
        out.append("uncited")
    if r.conflict_expected and r.conflicts_found == 0:
        out.append("conflict missed")
    if r.governs_correct is False:
        out.append("wrong governing source")
    if r.leaked:
        out.append("leak")
    return out


def failures(report: AnswerEvalReport) -> list[tuple[AnswerQueryResult, list[str]]]:
    """Every failing answer with its reasons, in query order (shared by both renderers)."""
    return [(r, why) for r in report.results if (why := failure_reasons(r))]


def render_answers_text(report: AnswerEvalReport) -> str:
    """The terminal summary: the metrics with their counts, a per-type table and the first failures."""
    s = report.summary()
    t = tally(report.results)
    head = (f"{plain(report.dataset)}  {s['n']} queries, {s['answerable']} answerable, "
            f"{s['expected_refusals']} expected refusals, judge: {plain(report.judge) if report.judge else 'none'}")
    rows = [(label, format_metric(key, s[key]), f"({t[key][0]}/{t[key][1]})" if key in t else "")
            for key, label, _ in METRIC_ROWS if key in s]
    lw = max(len(r[0]) for r in rows)
    vw = max(len(r[1]) for r in rows)
    body = [f"{label:<{lw}}  {value:>{vw}}  {count}".rstrip() for label, value, count in rows]
    lines = [head, "", f"{'metric':<{lw}}  {'value':>{vw}}", "-" * max(len(b) for b in body), *body]
    lines += ["", *risk_coverage_lines(report)]

    cols = _type_columns(report)
    by_type = report.by_type()
    names = [plain(k) for k in by_type]
    tw = max([len("type"), *(len(n) for n in names)])
    cells = {k: [format_metric(key, v[key]) for key, _ in cols] for k, v in by_type.items()}
    widths = [max(len(label), *(len(c[i]) for c in cells.values())) for i, (_, label) in enumerate(cols)]
    header = "  ".join([f"{'type':<{tw}}", *(f"{label:>{w}}" for (_, label), w in zip(cols, widths))])
    lines += ["", header, "-" * len(header)]
    for row, shown in zip(cells.values(), names):
        lines.append("  ".join([f"{shown:<{tw}}", *(f"{c:>{w}}" for c, w in zip(row, widths))]))

    for note in report.notes:
        lines.append(f"note: {plain(note)}")
    failed = failures(report)
    lines += ["", f"{len(failed)} {'answer' if len(failed) == 1 else 'answers'} with problems" + (":" if failed else ".")]
    for r, why in failed[:5]:
        lines.append(f"  {plain(r.qid)}  [{', '.join(why)}]  {plain(r.question, 90)}")
    if len(failed) > 5:
        lines.append(f"  … and {len(failed) - 5} more (see the HTML report)")
    return "\n".join(lines)


def risk_coverage_lines(report: AnswerEvalReport) -> list[str]:
    """The risk–coverage table: answering only at confidence >= t, every 0.1."""
    points = [p for p in risk_coverage(outcomes(report.results)) if round(p["threshold"] * 10, 6) % 1 == 0]
    out = ["risk-coverage (answer only when confidence >= t)",
           f"{'t':>4}  {'answered':>8}  {'coverage':>8}  {'accuracy':>8}  {'answerable acc':>14}  {'refusal recall':>14}"]
    for p in points:
        out.append(f"{p['threshold']:>4.1f}  {p['answered']:>8}  {format_metric('', p['coverage']):>8}  "
                   f"{format_metric('', p['accuracy']):>8}  {format_metric('', p['answerable_accuracy']):>14}  "
                   f"{format_metric('', p['refusal_recall']):>14}")
    return out


def _risk_coverage_html(report: AnswerEvalReport) -> str:
    points = risk_coverage(outcomes(report.results))
    rows = "".join(f'<tr><td class="num">{p["threshold"]:.2f}</td><td class="num">{p["answered"]}</td>'
                   + "".join(_num_cell("", p[k]) for k in ("coverage", "accuracy", "answerable_accuracy",
                                                             "refusal_recall")) + "</tr>" for p in points)
    table = ('<table><thead><tr><th class="num" scope="col">confidence ≥</th><th class="num" scope="col">answered'
             '</th><th class="num" scope="col">coverage</th><th class="num" scope="col">accuracy</th>'
             '<th class="num" scope="col">answerable accuracy</th><th class="num" scope="col">refusal recall</th>'
             f"</tr></thead><tbody>{rows}</tbody></table>")
    chart = risk_coverage_chart(points, f"risk-coverage: {report.dataset}")
    return ("<p>Answering only when the confidence reaches a threshold: the share of questions answered "
            "(coverage) against the accuracy of those answers. A withheld candidate counts as refused; any "
            f"answer to an unanswerable question is wrong.</p><figure>{chart}<figcaption>One point per "
            "threshold; hover for its values.</figcaption></figure>" + table)


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _num_cell(key: str, value: float | None) -> str:
    v = -1 if value is None else value
    return f'<td class="num" data-v="{v:.6g}">{format_metric(key, value)}</td>'


def _failure_card(r: AnswerQueryResult, why: list[str]) -> str:
    badges = "".join(f'<span class="badge">{_e(x)}</span>' for x in (r.type,) if x)
    reasons = "".join(f'<span class="badge" style="background:#fde2cf">{_e(w)}</span>' for w in why)
    expected = []
    if r.gold:
        expected.append("Expected answer: " + ", ".join(f"“{g}”" for g in r.gold))
    if r.expected_refusal:
        expected.append("Expected: a refusal")
    if r.governing:
        expected.append(f"Governing document: {r.governing}")
    exp = "".join(f'<p class="desc">{_e(x)}</p>' for x in expected)
    cites = []
    for c in r.cited:
        mark = '<span class="win">✓</span>' if c["verified"] else '<span class="loss">✗</span>'
        problem = f' <span class="desc">({_e(c["problem"])})</span>' if c.get("problem") else ""
        cites.append(f'<li>{mark} <b>{_e(c["label"])}</b> <span class="mono desc">{_e(c["doc"] or "")}</span>'
                     f'{problem}<br><span class="hit-text">“{_e(c["quote"])}”</span></li>')
    cite_html = f'<ul class="rel">{"".join(cites)}</ul>' if cites else '<p class="empty">No citations.</p>'
    conflicts = ""
    if r.conflicts:
        items = []
        for c in r.conflicts:
            vals = "; ".join(f"{v['value']} ({v['doc']}{', governs' if v['governs'] else ''})" for v in c["values"])
            items.append(f"<li><b>{_e(c['fact'])}</b>: {_e(vals)}</li>")
        conflicts = f'<div class="lbl">Conflicts</div><ul class="rel">{"".join(items)}</ul>'
    problems = ("" if not r.problems else
                '<p class="desc">Problems: ' + _e("; ".join(r.problems)) + "</p>")
    return (f'<article class="fail" id="answer-{_e(r.qid)}"><h4><span class="mono">{_e(r.qid)}</span> '
            f"{badges}{_e(r.question)}</h4><p>{reasons}</p>{exp}"
            f'<div class="lbl">Answer{" (refused)" if r.refused else ""} · '
            f'{"supported" if r.supported else "not shown to answer"} · confidence '
            f'{"n/a" if r.confidence is None else f"{r.confidence:.2f}"}</div><p>{_e(r.answer)}</p>{problems}'
            f'<div class="lbl">Citations</div>{cite_html}{conflicts}</article>')


def render_answers_html(report: AnswerEvalReport) -> str:
    """An HTML ``<section>`` in the look of the retrieval report: metrics, per-type table, failures.

    Uses the class names of :mod:`beleg.evaluate.report_html`'s stylesheet; every piece
    of data is escaped.
    """
    s = report.summary()
    t = tally(report.results)
    metric_rows = []
    for key, label, definition in METRIC_ROWS:
        if key not in s:
            continue
        count = f"{t[key][0]} / {t[key][1]}" if key in t else ""
        metric_rows.append(f'<tr><th scope="row">{_e(label)}</th>{_num_cell(key, s[key])}'
                           f'<td class="num">{_e(count)}</td><td class="desc">{_e(definition)}</td></tr>')
    metrics = ('<table><thead><tr><th scope="col">metric</th><th class="num" scope="col">value</th>'
               '<th class="num" scope="col">counted</th><th scope="col">definition</th></tr></thead>'
               f'<tbody>{"".join(metric_rows)}</tbody></table>')
    cols = _type_columns(report)
    head = "".join(f'<th class="num" scope="col">{_e(label)}</th>' for _, label in cols)
    body = "".join(f'<tr><th scope="row">{_e(kind)}</th>{"".join(_num_cell(k, row[k]) for k, _ in cols)}</tr>'
                   for kind, row in report.by_type().items())
    types = (f'<table class="sortable"><thead><tr><th scope="col">type</th>{head}</tr></thead>'
             f"<tbody>{body}</tbody></table>")
    failed = failures(report)
    if failed:
        fail_html = (f"<p><b>{len(failed)}</b> of {len(report.results)} answers have a problem. Each shows the "
                     f"question, what the gold set expects, the answer and its citations.</p>"
                     + "".join(_failure_card(r, why) for r, why in failed))
    else:
        fail_html = '<p class="empty">No answer has a problem.</p>'
    judge = f"judged by <b>{_e(report.judge)}</b>" if report.judge else "no LLM judge"
    notes = "".join(f"<li>{_e(n)}</li>" for n in report.notes)
    return (f'<section id="answers"><h2>Answer quality: {_e(report.dataset)}</h2>'
            f'<div class="counts"><span><b>{s["n"]}</b> queries</span><span><b>{s["answerable"]}</b> answerable</span>'
            f'<span><b>{s["expected_refusals"]}</b> expected refusals</span><span><b>{s["refused"]}</b> refused</span>'
            f"</div><p>Ratios with nothing to count are n/a; {judge}.</p>"
            + (f'<div class="notes" role="note"><strong>Notes</strong><ul>{notes}</ul></div>' if notes else "")
            + f"<h3>Metrics</h3>{metrics}<h3>Risk–coverage</h3>{_risk_coverage_html(report)}"
            f"<h3>By query type</h3>{types}<h3>Failures</h3>{fail_html}</section>")
