"""The evaluation report for the terminal, and the figures both report renderers share.

The shared helpers (headline columns, best value per column, queries that fail
everywhere) live here rather than in the HTML module so the terminal table and the
HTML page can never disagree about which configuration is best or which queries fail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from beleg.evaluate.datasets import Query
from beleg.evaluate.metrics import has_relevant
from beleg.evaluate.runner import EvalReport

#: Columns where a smaller value is better; every other column is better when larger.
LOWER_IS_BETTER = frozenset({"latency_ms_p50", "latency_ms_p95", "llm_calls_mean", "rounds_mean"})
#: Display names of the latency columns (the metric columns are shown under their own keys).
COLUMN_LABELS = {"latency_ms_p50": "p50 ms", "latency_ms_p95": "p95 ms", "llm_calls_mean": "LLM calls",
                 "rounds_mean": "rounds"}
#: Cost columns shown when a result carries them (strategy evaluation: per-question means).
COST_COLUMNS = ("llm_calls_mean", "rounds_mean")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_TIE = 1e-9


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the results table."""

    key: str
    label: str
    lower_is_better: bool


def cutoff(report: EvalReport) -> int:
    """K: the deepest cut-off of the report, the one the ``@K`` metrics use."""
    return max(report.ks, default=1)


def headline_columns(report: EvalReport) -> list[Column]:
    """The columns of :meth:`ConfigResult.summary`, in its order: metrics first, then latency."""
    k = cutoff(report)
    keys = ["hit@1", f"hit@{min(5, k)}", f"precision@{min(5, k)}", f"recall@{k}", f"mrr@{k}", f"ndcg@{k}"]
    cols = [Column(key, key, False) for key in dict.fromkeys(keys)]
    cols += [Column(key, COLUMN_LABELS[key], True) for key in ("latency_ms_p50", "latency_ms_p95")]
    cols += [Column(key, COLUMN_LABELS[key], True) for key in COST_COLUMNS
             if any(hasattr(r, key) for r in report.results.values())]
    return cols


def column_values(report: EvalReport) -> dict[str, dict[str, float | None]]:
    """config → column key → value, unrounded; ``None`` where a metric was not computed.

    A report whose queries are all unanswerable has no means at all; showing 0 there
    would read as "retrieval failed", so it is ``None`` ("n/a") instead.
    """
    out: dict[str, dict[str, float | None]] = {}
    for name, result in report.results.items():
        row: dict[str, float | None] = {c.key: result.means.get(c.key) for c in headline_columns(report)}
        row["latency_ms_p50"] = result.latency_ms_p50
        row["latency_ms_p95"] = result.latency_ms_p95
        for key in COST_COLUMNS:
            if key in row:
                row[key] = getattr(result, key, None)
        out[name] = row
    return out


def best_per_column(values: dict[str, dict[str, float | None]], columns: list[Column]) -> dict[str, set[str]]:
    """column key → the configurations with the best value (all of them on a tie)."""
    best: dict[str, set[str]] = {}
    for col in columns:
        present = {name: row[col.key] for name, row in values.items() if row.get(col.key) is not None}
        if len(present) < 2:
            continue  # a single configuration is not "best" of anything; highlighting it is noise
        target = (min if col.lower_is_better else max)(present.values())  # type: ignore[type-var]
        best[col.key] = {name for name, v in present.items() if abs(v - target) <= _TIE}  # type: ignore[operator]
    return best


def answerable_queries(report: EvalReport) -> list[Query]:
    """Queries with at least one relevant document: the ones the means are taken over."""
    return [q for q in report.queries if has_relevant(report.qrels.get(q.qid, {}))]


def unanswerable_queries(report: EvalReport) -> list[Query]:
    """Queries with no relevant document, reported apart from the means."""
    return [q for q in report.queries if not has_relevant(report.qrels.get(q.qid, {}))]


def failing_everywhere(report: EvalReport) -> list[Query]:
    """Answerable queries with hit@K = 0 in every configuration (a missing result counts as a miss)."""
    if not report.results:
        return []
    key = f"hit@{cutoff(report)}"
    return [
        q for q in answerable_queries(report)
        if all((r.queries.get(q.qid) is None or r.queries[q.qid].metrics.get(key, 0.0) == 0.0)
               for r in report.results.values())
    ]


def plain(text: str, limit: int | None = None) -> str:
    """``text`` on one line without control characters (a query must not move the cursor), cut to ``limit``."""
    flat = _CONTROL.sub(" ", _ANSI.sub("", text)).strip()
    flat = re.sub(r"\s{2,}", " ", flat)
    if limit is not None and len(flat) > limit:
        flat = flat[: max(0, limit - 1)].rstrip() + "…"
    return flat


def format_value(key: str, value: float | None) -> str:
    """Metrics with 3 decimals; latency in milliseconds with 1 (sub-millisecond digits are noise)."""
    if value is None:
        return "n/a"
    if key in COST_COLUMNS:
        return f"{value:.2f}"
    return f"{value:.1f}" if key in LOWER_IS_BETTER else f"{value:.3f}"


def render_table(report: EvalReport, color: bool) -> str:
    """The terminal summary: one row per configuration, best value per column in bold when ``color``.

    Below the table: one line per note of the report, then the number of answerable
    queries that fail in every configuration and up to five of them.
    """
    def bold(text: str) -> str:
        return f"\033[1m{text}\033[0m" if color else text

    def dim(text: str) -> str:
        return f"\033[2m{text}\033[0m" if color else text

    columns = headline_columns(report)
    values = column_values(report)
    best = best_per_column(values, columns)
    answerable = answerable_queries(report)
    k = cutoff(report)
    lines = [bold(plain(report.dataset)) + f"  {len(report.queries)} queries, {len(answerable)} answerable, K={k}"]

    names = [plain(n) for n in report.results]
    name_w = max([len("config"), *(len(n) for n in names)])
    # Without colour the best cell carries a "*", so every column keeps one character for it.
    mark_w = 0 if color else 1
    widths = {c.key: max(len(c.label), 6) for c in columns}
    for row in values.values():
        for c in columns:
            widths[c.key] = max(widths[c.key], len(format_value(c.key, row[c.key])) + mark_w)
    header = "  ".join([f"{'config':<{name_w}}", *(f"{c.label:>{widths[c.key] - mark_w}}" + " " * mark_w for c in columns),
                        "description"])
    lines += [bold(header), "-" * len(header)]
    for (name, row), shown in zip(values.items(), names):
        cells = []
        for c in columns:
            is_best = name in best.get(c.key, ())
            text = format_value(c.key, row[c.key]) + ("*" if is_best else " ") * mark_w
            # Pad outside the escape codes: they would otherwise count towards the width.
            cells.append(" " * (widths[c.key] - len(text)) + (bold(text) if is_best else text))
        desc = plain(report.results[name].config.description)
        lines.append("  ".join([f"{shown:<{name_w}}", *cells, dim(desc)]))
    if not report.results:
        lines.append("(no configuration was evaluated)")
    elif best and not color:
        lines.append("* best in its column")

    for note in report.notes:
        lines.append(f"note: {plain(note)}")
    unanswerable = len(report.queries) - len(answerable)
    if unanswerable:
        noun = "query" if unanswerable == 1 else "queries"
        lines.append(f"{unanswerable} unanswerable {noun} (no relevant document) not in the means.")
    failing = failing_everywhere(report)
    if report.results:
        noun = "query" if len(failing) == 1 else "queries"
        lines.append(bold(f"{len(failing)} {noun} where all configurations fail") + f" (hit@{k} = 0)"
                     + (":" if failing else ""))
        for q in failing[:5]:
            lines.append(f"  {plain(q.qid)}  {plain(q.text, 100)}")
        if len(failing) > 5:
            lines.append(f"  … and {len(failing) - 5} more (see the HTML report)")
    return "\n".join(lines)
