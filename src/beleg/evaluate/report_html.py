"""The evaluation report as one self-contained HTML page.

The page makes no network request of any kind: the CSS is inline, the charts are SVG
drawn here (see :mod:`beleg.evaluate.charts`), and the only script sorts tables on a
click. Everything is readable with scripts off and prints cleanly. Every piece of text
that comes from the data (queries, titles, chunk text, notes) is HTML-escaped: queries
are user input and may contain markup.

Sections, top to bottom: header and notes, results table, headline-metric chart,
recall@k curves, per-query wins and losses of two configurations, results by query
type, queries where every configuration fails, and unanswerable queries.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any

from beleg import __version__
from beleg.errors import ConfigError
from beleg.evaluate.charts import diverging_bars, grouped_hbar, line_chart, series_colors
from beleg.evaluate.datasets import Query
from beleg.evaluate.report_text import (
    LOWER_IS_BETTER,
    answerable_queries,
    best_per_column,
    column_values,
    cutoff,
    failing_everywhere,
    format_value,
    headline_columns,
    unanswerable_queries,
)
from beleg.evaluate.runner import EvalConfig, EvalReport

#: How many of the biggest wins and of the biggest losses the wins-and-losses tables list.
TOP_DIFFERENCES = 10
_TIE = 1e-9
_SPACE = re.compile(r"\s+")

_CSS = """
:root{--ink:#1a1a1a;--muted:#555;--line:#d4d4d4;--head:#f0f0f0;--best:#dcebf7;--warn:#E69F00;--loss:#D55E00}
*{box-sizing:border-box}
body{margin:0;color:var(--ink);background:#fff;line-height:1.45;
 font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 64px}
h1{font-size:1.65rem;margin:0 0 .2rem}
h2{font-size:1.3rem;margin:2.4rem 0 .7rem;padding-bottom:.25rem;border-bottom:2px solid var(--ink)}
h3{font-size:1.02rem;margin:1.2rem 0 .4rem}
p{margin:.4rem 0 .8rem}
code,.mono{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,"Liberation Mono",monospace;font-size:.88em}
.sub{color:var(--muted);margin:0 0 1rem}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.5rem 1.2rem;margin:1rem 0;padding:0}
.facts div{border-left:3px solid var(--line);padding-left:.6rem}
.facts dt{font-size:.75rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.facts dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.notes{border:1px solid var(--warn);border-left:6px solid var(--warn);background:#fff7e6;padding:.6rem 1rem;margin:1rem 0}
.notes strong{display:block;margin-bottom:.2rem}
.notes ul{margin:0;padding-left:1.2rem}
nav ol{display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;padding:0;margin:.8rem 0;list-style:none;font-size:.9rem}
nav a{color:#0060a0}
table{border-collapse:separate;border-spacing:0;width:100%;font-size:.88rem;margin:.4rem 0 1rem}
th,td{padding:.34rem .55rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:baseline}
thead{position:sticky;top:0;z-index:2}
thead th{background:var(--head);border-bottom:2px solid #8c8c8c;white-space:nowrap;vertical-align:bottom}
th.num,td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.best{font-weight:700;background:var(--best)}
td.win{color:#005a8c;font-weight:600}td.loss{color:#a63c00;font-weight:600}
td.query{min-width:12rem}
tbody th[scope=row]{white-space:nowrap}
td{overflow-wrap:break-word}.cfg,.mono{overflow-wrap:anywhere}td.kind{white-space:nowrap}
tbody tr:hover td{background:#f7f7f7}tbody tr:hover td.best{background:var(--best)}
.desc{color:var(--muted);font-size:.82rem}
.sw{display:inline-block;width:.8em;height:.8em;border-radius:2px;margin-right:.4em;vertical-align:-.05em}
figure{margin:.6rem 0 1.4rem}
figcaption{color:var(--muted);font-size:.85rem;margin-top:.2rem}
svg.chart{max-width:100%;height:auto;display:block}
svg.chart text{font-size:12px;fill:var(--ink)}
svg.chart text.tick{fill:#555;font-size:11px}
svg.chart text.value{font-size:11px;font-variant-numeric:tabular-nums}
svg.chart text.axis-label{font-weight:600}
.counts{display:flex;gap:1.4rem;flex-wrap:wrap;margin:.3rem 0 .6rem;font-size:.95rem}
.counts b{font-size:1.25rem;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 .45rem;border-radius:.7rem;background:#ececec;font-size:.75rem;color:#333;
 margin-right:.3rem;font-weight:400;vertical-align:.1em}
.fail{border:1px solid var(--line);border-left:5px solid var(--loss);border-radius:3px;padding:.4rem 1rem .8rem;margin:1rem 0}
.fail h3{margin-top:.5rem}
.rel{margin:.3rem 0 .6rem;padding-left:1.2rem}
.lbl{font-weight:700;break-after:avoid}
.hits{display:grid;grid-template-columns:repeat(auto-fit,minmax(240px,1fr));gap:.6rem}
.cfg{border:1px solid var(--line);border-radius:3px;padding:.4rem .6rem;font-size:.82rem}
.cfg>div:first-child{font-weight:700;margin-bottom:.2rem}
.cfg ol{margin:0;padding-left:1.1rem}.cfg li{margin:.25rem 0}
.hit-path{color:var(--muted)}.hit-text{color:#333}
.empty{color:var(--muted);font-style:italic}
.bytype thead tr:first-child th:nth-child(n+3){text-align:center}
.bytype thead tr:first-child th:nth-child(n+3),.bytype thead tr:last-child th:nth-child(odd),
.bytype tbody td:nth-child(2n+3){border-left:1px solid #b5b5b5}
th[tabindex]{cursor:pointer}th[aria-sort=descending]::after{content:" ▼"}th[aria-sort=ascending]::after{content:" ▲"}
footer{margin-top:3rem;color:var(--muted);font-size:.8rem}
@media print{
 main{max-width:none;padding:0}nav{display:none}thead{position:static}
 h2,h3{break-after:avoid}figure,tr,.cfg{break-inside:avoid}
 .hits{grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.4rem}.cfg{font-size:.72rem}
 body{font-size:11pt}table{font-size:.8rem}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
}
"""

# Sorts a table by the clicked column: numbers by their data-v, text otherwise. Without
# JavaScript the tables simply stay in their printed order.
_JS = """
document.querySelectorAll("table.sortable").forEach(function(t){
 var hs=t.tHead.rows[0].cells;
 Array.prototype.forEach.call(hs,function(th,i){
  th.tabIndex=0;
  function go(){
   var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),
       dir=th.getAttribute("aria-sort")==="descending"?1:-1;
   Array.prototype.forEach.call(hs,function(h){h.removeAttribute("aria-sort")});
   th.setAttribute("aria-sort",dir<0?"descending":"ascending");
   rows.sort(function(a,c){var x=a.cells[i],y=c.cells[i];
    if(x.dataset.v!==undefined&&y.dataset.v!==undefined)return dir*(x.dataset.v-y.dataset.v);
    return dir*x.textContent.localeCompare(y.textContent)});
   rows.forEach(function(r){b.appendChild(r)});
  }
  th.addEventListener("click",go);
  th.addEventListener("keydown",function(e){if(e.key==="Enter"||e.key===" "){e.preventDefault();go()}});
 });
});
"""


def _e(value: Any) -> str:
    """Escape any value for HTML text and attribute values alike."""
    return escape(str(value), quote=True)


def _short(text: str, limit: int) -> str:
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _num(key: str, value: float | None, best: bool = False) -> str:
    """A right-aligned number cell; ``data-v`` lets the sorter compare numbers, not strings."""
    attrs = ' class="num best" title="best"' if best else ' class="num"'
    if value is None:
        return f'<td{attrs} data-v="-1">n/a</td>'
    return f'<td{attrs} data-v="{value:.6g}">{format_value(key, value)}</td>'


def _swatch(color: str) -> str:
    return f'<span class="sw" style="background:{color}" aria-hidden="true"></span>'


def _section(anchor: str, title: str, body: Iterable[str]) -> str:
    return f'<section id="{anchor}"><h2>{_e(title)}</h2>{"".join(body)}</section>'


def _k_metric(report: EvalReport) -> str:
    return f"ndcg@{cutoff(report)}"


def _single_leg(config: EvalConfig) -> bool:
    """A configuration that uses one retriever only (the default mode of a search is hybrid)."""
    return config.search.get("mode", "hybrid") in ("dense", "bm25")


def choose_pair(report: EvalReport, baseline: str | None = None,
                challenger: str | None = None) -> tuple[str, str] | None:
    """The (baseline, challenger) compared query by query, or ``None`` with fewer than two configurations.

    Defaults: the challenger is ``hybrid`` if present, else the best configuration by
    nDCG@K; the baseline is the best *other* single-retriever configuration (dense or
    BM25), since "does fusion beat its best leg?" is the question a report must answer.
    """
    names = list(report.results)
    for given in (baseline, challenger):
        if given is not None and given not in report.results:
            raise ConfigError(f"configuration {given!r} is not in this report; it has: {', '.join(names) or 'none'}")
    if baseline is not None and baseline == challenger:
        raise ConfigError(f"baseline and challenger are both {baseline!r}; pick two different configurations")
    if len(names) < 2:
        return None
    key = _k_metric(report)

    def score(name: str) -> float:
        return report.results[name].means.get(key, 0.0)

    if challenger is None:
        others = [n for n in names if n != baseline]
        challenger = "hybrid" if "hybrid" in others else max(others, key=score)
    if baseline is None:
        others = [n for n in names if n != challenger]
        single = [n for n in others if _single_leg(report.results[n].config)]
        baseline = max(single or others, key=score)
    return baseline, challenger


def _header(report: EvalReport, answerable: int) -> str:
    index = dict(report.index)
    created = index.pop("created", None) or datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    facts: list[tuple[str, Any]] = [
        ("Queries", len(report.queries)),
        ("Answerable", answerable),
        ("Unanswerable", len(report.queries) - answerable),
        ("Cut-off K", cutoff(report)),
        ("Configurations", len(report.results)),
        ("Documents", index.pop("documents", "?")),
        ("Chunks", index.pop("chunks", "?")),
        ("Embedder", index.pop("embedder", "?")),
        ("Index version", index.pop("index_version", "?")),
        ("Date", created),
    ]
    path = index.pop("path", None)
    facts += [(key.replace("_", " ").capitalize(), value) for key, value in index.items()]
    out = [f"<header><h1>Retrieval evaluation: {_e(report.dataset)}</h1>",
           f'<p class="sub">Beleg {_e(__version__)} · means over the {answerable} answerable queries; '
           f"queries without a relevant document are listed separately and kept out of every mean.</p>"]
    out.append('<dl class="facts">' + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
               + "</dl>")
    if path:
        out.append(f'<p class="desc">Index: <span class="mono">{_e(path)}</span></p>')
    if report.notes:
        out.append('<div class="notes" role="note"><strong>Notes</strong><ul>'
                   + "".join(f"<li>{_e(n)}</li>" for n in report.notes) + "</ul></div>")
    return "".join(out) + "</header>"


def _results_table(report: EvalReport, colors: dict[str, str]) -> str:
    columns = headline_columns(report)
    values = column_values(report)
    best = best_per_column(values, columns)
    if not report.results:
        return '<p class="empty">No configuration was evaluated.</p>'
    head = "".join(f'<th class="num" scope="col">{_e(c.label)}</th>' for c in columns)
    rows = []
    for name, row in values.items():
        cells = []
        for c in columns:
            cells.append(_num(c.key, row[c.key], name in best.get(c.key, ())))
        desc = report.results[name].config.description
        rows.append(f'<tr><th scope="row">{_swatch(colors[name])}{_e(name)}</th>'
                    f'<td class="desc">{_e(desc)}</td>{"".join(cells)}</tr>')
    return (f'<p>Mean of each metric over the answerable queries at K = {cutoff(report)}; the best value of '
            f'each column is <b>bold on blue</b> (for latency: the lowest). Latency is per query, in milliseconds.</p>'
            f'<table class="sortable"><thead><tr><th scope="col">configuration</th><th scope="col">description</th>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _metric_chart(report: EvalReport, colors: dict[str, str]) -> str:
    metrics = [c.key for c in headline_columns(report) if c.key not in LOWER_IS_BETTER]
    values = column_values(report)
    svg = grouped_hbar(metrics, list(report.results), values, colors, "headline metrics per configuration")
    return f"<figure>{svg}<figcaption>Means over the answerable queries, scale 0–1.</figcaption></figure>"


def _recall_chart(report: EvalReport, colors: dict[str, str]) -> str:
    ks = sorted(report.ks)
    series = {name: [r.means.get(f"recall@{k}") for k in ks] for name, r in report.results.items()}
    svg = line_chart(ks, series, colors, "k (documents retrieved)", "recall@k", "recall at each cut-off")
    return (f"<figure>{svg}<figcaption>Share of the relevant documents found in the top k, averaged over the "
            f"answerable queries, for k = {ks[0] if ks else 1}…{ks[-1] if ks else 1}.</figcaption></figure>")


def _query_label(q: Query) -> str:
    kind = q.info.get("type")
    return f"{q.qid} [{kind}] {q.text}" if kind else f"{q.qid} {q.text}"


def _metric_of(report: EvalReport, config: str, qid: str, key: str) -> float:
    result = report.results[config].queries.get(qid)
    return result.metrics.get(key, 0.0) if result else 0.0


def _wins_losses(report: EvalReport, pair: tuple[str, str] | None) -> str:
    if pair is None:
        return '<p class="empty">A comparison needs at least two configurations.</p>'
    base, chal = pair
    key = _k_metric(report)
    rows = [(q, _metric_of(report, base, q.qid, key), _metric_of(report, chal, q.qid, key))
            for q in answerable_queries(report)]
    if not rows:
        return '<p class="empty">No answerable query to compare.</p>'
    deltas = [(q, b, c, c - b) for q, b, c in rows]
    wins = sorted((d for d in deltas if d[3] > _TIE), key=lambda d: -d[3])
    losses = sorted((d for d in deltas if d[3] < -_TIE), key=lambda d: d[3])
    ties = len(deltas) - len(wins) - len(losses)
    svg = diverging_bars([(_short(_query_label(q), 120), d) for q, _, _, d in deltas],
                         f"{chal} better", f"{base} better", f"Δ {key}", f"{key} difference per query")
    typed = any("type" in q.info for q, *_ in deltas)
    out = [f"<p>Challenger <b>{_e(chal)}</b> against baseline <b>{_e(base)}</b>: the difference in {_e(key)} "
           f"({_e(chal)} − {_e(base)}) on each answerable query. Hover a bar for its query.</p>",
           f'<div class="counts"><span><b>{len(wins)}</b> wins for {_e(chal)}</span>'
           f"<span><b>{ties}</b> ties</span><span><b>{len(losses)}</b> losses</span></div>",
           f"<figure>{svg}<figcaption>One bar per query, sorted from the largest gain to the largest loss; "
           f"ties have no bar.</figcaption></figure>"]
    for title, items in ((f"Biggest wins for {chal}", wins), (f"Biggest losses for {chal}", losses)):
        out.append(f"<h3>{_e(title)}</h3>")
        if not items:
            out.append('<p class="empty">None.</p>')
            continue
        type_th = '<th scope="col">type</th>' if typed else ""
        head = (f'<tr><th scope="col">query id</th>{type_th}'
                f'<th scope="col">query</th><th class="num" scope="col">{_e(base)}</th>'
                f'<th class="num" scope="col">{_e(chal)}</th><th class="num" scope="col">Δ</th></tr>')
        body = []
        for q, b, c, d in items[:TOP_DIFFERENCES]:
            kind = f'<td class="kind">{_e(q.info.get("type", ""))}</td>' if typed else ""
            body.append(f'<tr><td class="mono">{_e(q.qid)}</td>{kind}<td class="query">{_e(q.text)}</td>'
                        f'{_num(key, b)}{_num(key, c)}<td class="num {"win" if d > 0 else "loss"}" '
                        f'data-v="{d:.6g}">{d:+.3f}</td></tr>')
        more = f'<p class="desc">… and {len(items) - TOP_DIFFERENCES} more.</p>' if len(items) > TOP_DIFFERENCES else ""
        out.append(f'<table class="sortable"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>{more}')
    return "".join(out)


def _by_type(report: EvalReport, colors: dict[str, str]) -> str:
    key, hit1 = _k_metric(report), "hit@1"
    groups: dict[str, list[Query]] = defaultdict(list)
    for q in answerable_queries(report):
        groups[str(q.info.get("type", "(no type)"))].append(q)
    rows = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    rows.append(("all answerable", [q for qs in groups.values() for q in qs]))
    names = list(report.results)
    head1 = "".join(f'<th colspan="2" scope="colgroup">{_swatch(colors[n])}{_e(n)}</th>' for n in names)
    head2 = "".join(f'<th class="num" scope="col">{_e(key)}</th><th class="num" scope="col">{hit1}</th>'
                    for _ in names)
    body = []
    for kind, qs in rows:
        means = {n: {m: sum(_metric_of(report, n, q.qid, m) for q in qs) / len(qs) for m in (key, hit1)}
                 for n in names}
        best = {m: max(means[n][m] for n in names) for m in (key, hit1)} if len(names) > 1 else {}
        cells = []
        for n in names:
            for m in (key, hit1):
                top = m in best and abs(means[n][m] - best[m]) <= _TIE
                cells.append(_num(m, means[n][m], top))
        style = ' style="border-top:2px solid #8c8c8c"' if kind == "all answerable" else ""
        body.append(f'<tr{style}><th scope="row">{_e(kind)}</th><td class="num">{len(qs)}</td>{"".join(cells)}</tr>')
    only_unanswerable = sorted({str(q.info["type"]) for q in unanswerable_queries(report) if "type" in q.info}
                               - set(groups))
    note = (f'<p class="desc">Types with no answerable query (see the unanswerable list): '
            f'{_e(", ".join(only_unanswerable))}.</p>' if only_unanswerable else "")
    return (f"<p>Mean {_e(key)} and hit@1 per query type over the answerable queries; the best configuration of "
            f"each row is highlighted. Small groups swing widely: mind the n.</p>"
            f'<table class="bytype"><thead><tr><th rowspan="2" scope="col">type</th><th rowspan="2" class="num" scope="col">n</th>'
            f'{head1}</tr><tr>{head2}</tr></thead><tbody>{"".join(body)}</tbody></table>{note}')


def _info_badges(q: Query) -> str:
    return "".join(f'<span class="badge">{_e(q.info[k])}</span>' for k in ("type", "language") if q.info.get(k))


def _expected(q: Query) -> str:
    """The gold set's expected answer strings and notes, when it has them: they say what was looked for."""
    out = []
    answers = q.info.get("answer") or q.info.get("answers")
    if answers:
        shown = ", ".join(f"“{a}”" for a in (answers if isinstance(answers, list) else [answers]))
        out.append(f'<p class="desc">Expected answer: {_e(shown)}</p>')
    if q.info.get("notes"):
        out.append(f'<p class="desc">Gold-set note: {_e(q.info["notes"])}</p>')
    return "".join(out)


def _hit_parts(hit: dict[str, Any]) -> tuple[str, str, str]:
    """Title, heading path below the title, and chunk text without the heading it repeats.

    The heading path starts with the document title and the chunk text with its own
    heading line; shown as stored, every hit would say the same thing three times.
    """
    title = str(hit.get("title") or hit.get("doc") or "(untitled)")
    path = str(hit.get("heading_path") or "")
    if path == title:
        path = ""
    elif path.startswith(title + " > "):
        path = path[len(title) + 3:]
    text = str(hit.get("text") or "").lstrip()
    first, _, rest = text.partition("\n")
    last_heading = path.rsplit(" > ", 1)[-1].strip()
    if first.startswith("#") and (not last_heading or first.lstrip("#").strip() == last_heading):
        text = rest
    return title, path, text


def _hit_list(hits: list[dict[str, Any]]) -> str:
    if not hits:
        return '<p class="empty">No hits.</p>'
    items = []
    for h in hits:
        title, path, text = _hit_parts(h)
        score = h.get("score")
        score_text = f" · score {score:.3f}" if isinstance(score, (int, float)) else ""
        items.append(f'<li><b>{_e(title)}</b>'
                     + (f'<br><span class="hit-path">§ {_e(path)}</span>' if path else "")
                     + f'<br><span class="mono desc">{_e(h.get("doc", ""))}{score_text}</span>'
                     + f'<br><span class="hit-text">{_e(_short(text, 180))}</span></li>')
    return "<ol>" + "".join(items) + "</ol>"


def _failing(report: EvalReport, colors: dict[str, str]) -> str:
    k = cutoff(report)
    failing = failing_everywhere(report)
    if not report.results:
        return '<p class="empty">No configuration was evaluated.</p>'
    if not failing:
        return f'<p class="empty">No answerable query misses in every configuration (hit@{k} &gt; 0 somewhere).</p>'
    out = [f"<p><b>{len(failing)}</b> answerable {'query finds' if len(failing) == 1 else 'queries find'} no "
           f"relevant document in the top {k} of any configuration. Each shows what the gold set expects and what "
           f"every configuration returned first.</p>"]
    for q in failing:
        judged = sorted(((d, g) for d, g in report.qrels.get(q.qid, {}).items() if g >= 1), key=lambda x: (-x[1], x[0]))
        rel = "".join(f'<li><span class="mono">{_e(d)}</span> <span class="desc">grade {g}</span></li>'
                      for d, g in judged)
        cards = []
        for name, result in report.results.items():
            qr = result.queries.get(q.qid)
            cards.append(f'<div class="cfg"><div>{_swatch(colors[name])}{_e(name)}</div>'
                         f'{_hit_list(qr.top_hits if qr else [])}</div>')
        out.append(f'<article class="fail" id="fail-{_e(q.qid)}"><h3><span class="mono">{_e(q.qid)}</span> '
                   f'{_info_badges(q)}{_e(q.text)}</h3>{_expected(q)}'
                   f'<div class="lbl">Relevant documents</div><ul class="rel">{rel}</ul>'
                   f'<div class="lbl">Top hits per configuration</div><div class="hits">{"".join(cards)}</div></article>')
    return "".join(out)


def _unanswerable(report: EvalReport, colors: dict[str, str]) -> str:
    queries = unanswerable_queries(report)
    if not queries:
        return '<p class="empty">Every query has at least one relevant document.</p>'
    names = list(report.results)
    head = "".join(f'<th scope="col">{_swatch(colors[n])}{_e(n)}: first hit</th>' for n in names)
    body = []
    for q in queries:
        cells = []
        for n in names:
            qr = report.results[n].queries.get(q.qid)
            top = qr.top_hits[0] if qr and qr.top_hits else None
            if top is None:
                cells.append('<td class="empty">none</td>')
                continue
            score = top.get("score")
            score_text = f" · score {score:.3f}" if isinstance(score, (int, float)) else ""
            cells.append(f'<td><span title="{_e(top.get("heading_path", ""))}">{_e(top.get("title") or top.get("doc"))}'
                         f'</span><br><span class="mono desc">{_e(top.get("doc", ""))}{score_text}</span></td>')
        body.append(f'<tr><td class="mono">{_e(q.qid)}</td><td class="query">{_info_badges(q)}{_e(q.text)}</td>'
                    f'{"".join(cells)}</tr>')
    return (f"<p>{len(queries)} {'query has' if len(queries) == 1 else 'queries have'} no relevant document in the "
            f"gold set: a system should abstain. They are not in any mean above. Shown is what each configuration "
            f"would have put first, with its score (a threshold that rejects these must stay below the scores of "
            f"real answers).</p>"
            f'<table class="sortable"><thead><tr><th scope="col">query id</th><th scope="col">query</th>{head}</tr>'
            f'</thead><tbody>{"".join(body)}</tbody></table>')


def render_html(report: EvalReport, baseline: str | None = None, challenger: str | None = None) -> str:
    """The whole report as one self-contained HTML document (no network access, scripts optional).

    ``baseline`` and ``challenger`` pick the two configurations compared query by query;
    see :func:`choose_pair` for the defaults. Raises :class:`ConfigError` for a name the
    report does not have.
    """
    pair = choose_pair(report, baseline, challenger)
    colors = series_colors(list(report.results))
    answerable = len(answerable_queries(report))
    k = cutoff(report)
    sections = [
        ("results", "Results", [_results_table(report, colors)]),
        ("metrics", "Headline metrics per configuration", [_metric_chart(report, colors)]),
        ("recall", f"Recall@k curves (k = 1…{k})", [_recall_chart(report, colors)]),
        ("wins", "Wins and losses per query" + (f": {pair[1]} vs {pair[0]}" if pair else ""),
         [_wins_losses(report, pair)]),
    ]
    if any("type" in q.info for q in answerable_queries(report)):
        sections.append(("types", "By query type", [_by_type(report, colors)]))
    sections += [
        ("failing", "Where every configuration fails", [_failing(report, colors)]),
        ("unanswerable", "Unanswerable queries", [_unanswerable(report, colors)]),
    ]
    nav = "<nav><ol>" + "".join(f'<li><a href="#{a}">{_e(t)}</a></li>' for a, t, _ in sections) + "</ol></nav>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Beleg evaluation · {_e(report.dataset)}</title><style>{_CSS}</style></head><body><main>"
        + _header(report, answerable) + nav
        + "".join(_section(a, t, body) for a, t, body in sections)
        + f"<footer>Generated by Beleg {_e(__version__)}. Self-contained: this file loads nothing from "
        f"anywhere.</footer></main><script>{_JS}</script></body></html>\n"
    )


def answer_report_page(report: Any, title: str) -> str:
    """A standalone page for an answer evaluation alone (``report``: an :class:`AnswerEvalReport`).

    Same stylesheet, sortable tables and no-network rule as :func:`render_html`; the body
    is :func:`beleg.evaluate.report_answers.render_answers_html`.
    """
    from beleg.evaluate.answers import AnswerEvalReport
    from beleg.evaluate.report_answers import render_answers_html

    if not isinstance(report, AnswerEvalReport):
        raise TypeError(f"expected an AnswerEvalReport, got {type(report).__name__}")
    summary = report.summary()
    facts: list[tuple[str, Any]] = [
        ("Dataset", report.dataset),
        ("Queries", summary["n"]),
        ("Answerable", summary["answerable"]),
        ("Expected refusals", summary["expected_refusals"]),
        ("Judge", report.judge or "none"),
        ("Date", datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")),
    ]
    header = (f"<header><h1>{_e(title)}</h1>"
              f'<p class="sub">Beleg {_e(__version__)} · answer evaluation; definitions in '
              f"docs/answer-evaluation.md.</p>"
              '<dl class="facts">' + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
              + "</dl></header>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>"
        + header + render_answers_html(report)
        + f"<footer>Generated by Beleg {_e(__version__)}. Self-contained: this file loads nothing from "
        f"anywhere.</footer></main><script>{_JS}</script></body></html>\n"
    )
