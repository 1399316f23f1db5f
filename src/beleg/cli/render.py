"""Human-readable output for the terminal: hit lists with highlighted snippets."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from beleg.index.analyzer import analyze, analyze_query
from beleg.markup import plain
from beleg.progress import plural
from beleg.types import Hit

_WORD = re.compile(r"\S+")
#: A token's leading punctuation, its word and its trailing punctuation ("(E-4012).").
_PUNCTUATED = re.compile(r"(\W*)(.*?)(\W*)", re.DOTALL)
_SNIPPET_WORDS = 40


class Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def mark(self, text: str) -> str:
        return self._wrap("1;33", text) if self.color else f"«{text}»"


def snippet(text: str, query: str, language: str, style: Style, width: int = _SNIPPET_WORDS) -> str:
    """The window of ``width`` words with the most query-term matches, matches highlighted."""
    terms = set(analyze_query(query)) | set(analyze_query(query, language))
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if not words:
        return ""
    hits = [bool(terms & set(analyze(text[s:e], language))) for s, e in words]
    best, best_count = 0, -1
    running = sum(hits[:width])
    for i in range(max(1, len(words) - width + 1)):
        if i:
            running += (hits[i + width - 1] if i + width - 1 < len(hits) else 0) - hits[i - 1]
        if running > best_count:
            best, best_count = i, running
    window = range(best, min(len(words), best + width))
    parts = []
    for j in window:
        s, e = words[j]
        token = text[s:e]
        if hits[j]:  # the word is marked, not the sentence's full stop or a bracket around it
            split = _PUNCTUATED.fullmatch(token)
            assert split is not None  # every part may be empty: any token matches
            lead, word, trail = split.groups()
            token = lead + style.mark(word) + trail if word else style.mark(token)
        parts.append(token)
    prefix = "… " if best > 0 else ""
    suffix = " …" if window.stop < len(words) else ""
    return prefix + " ".join(parts) + suffix


def render_hits(hits: Sequence[Hit], query: str, style: Style, locations: Mapping[str, str | None] = {}, *,
                filtered: bool = False, index_empty: bool = False) -> str:
    """One block per hit; ``locations`` (doc_id → recorded file location) make its file openable (:func:`shown_source`).

    Without hits, one line says why as far as it is known: an empty index, or filters
    (``filtered``: given, or read from the question) that may have left nothing to match."""
    if not hits:
        if index_empty:
            return "No hits: the index is empty (add documents with 'beleg ingest PATH')."
        return "No hits. (Nothing matched among the documents your filters allow.)" if filtered else "No hits."
    lines = []
    for rank, hit in enumerate(hits, 1):
        meta = hit.metadata
        path = " > ".join(hit.heading_path) or hit.title
        facts = " · ".join(str(x) for x in (
            f"v{meta['version']}" if meta.get("version") else None, meta.get("status"), meta.get("authority"),
            meta.get("language"), meta.get("tenant") and f"tenant {meta['tenant']}") if x)
        lines.append(f"{rank:>2}. {hit.score:.4f}  {style.bold(printable(path))}  "
                     f"{style.dim('[' + printable(facts) + ']')}")
        lines.append(f"    {style.dim(shown_source(hit.source, locations.get(hit.doc_id)))}  "
                     f"{style.dim(f'chars {hit.start}-{hit.end}')}")
        # The snippet is read, not checked: markup is removed (offsets above stay the document's).
        lines.append("    " + snippet(plain(hit.text), query, str(meta.get("language", "en")), style))
    return "\n".join(lines)


def render_status(status: dict[str, Any]) -> str:
    lines = [
        f"index         {status['index']}",
        f"version       {status['index_version']}  (generation {status['generation']})",
        f"embedder      {status['config']['embedder']}  {status.get('embedder_fingerprint') or ''}".rstrip(),
        f"chunking      {status['config']['chunking']}",
        f"documents     {status['documents']}",
        f"chunks        {status['chunks']}",
        f"terms         {status['terms']}",
    ]
    vector_index = status.get("vector_index")
    if vector_index is not None:  # PostgreSQL: how dense search reads the HNSW index
        if vector_index["measured"]:
            levels = ", ".join(f"{k}: {v}" for k, v in vector_index["ef_search"].items())
            lines.append(f"hnsw          ef_search {levels} (recall >= {vector_index['target_recall']}, "
                         f"measured at {vector_index['at_chunks']} chunks)")
        else:
            lines.append(f"hnsw          {vector_index['note']}")
    scan = status.get("dense_scan")
    if scan is not None:  # embedded: the int8 first pass of dense search (index/int8_pass.py)
        lines.append(f"dense scan    {scan['int8_kernel']}; int8 from {scan['int8_from_chunks']:,} chunks, "
                     f"{scan['threads']} threads from {scan['threads_from_chunks']:,}")
    for key, counts in status.get("documents_by", {}).items():
        lines.append(f"by {key:<10} " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    for n, v in enumerate(status.get("versions", [])):
        state = ("live" if v["live"] else "not live") + ("" if v["complete"] else ", build unfinished")
        lines.append(f"{'versions' if n == 0 else '':<13} {v['version']}  {v['documents']} documents ({state})")
    pending = status.get("erasure_pending")
    if pending:
        lines.append(f"erasure       UNFINISHED: {len(pending['doc_ids'])} document(s) since {pending['since']}; "
                     "finish it with 'beleg delete --finish'")
    return "\n".join(lines)


#: Unicode categories shown as escapes: controls (Cc), format characters (Cf: bidi overrides
#: and isolates, zero-width spaces and joiners, soft hyphens, tags) and line/paragraph separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def printable(name: str) -> str:
    """A file name, title or reason on one terminal line, as it is: control characters (a
    newline, an escape sequence that would recolour the terminal), invisible format characters
    and line separators written as escapes (``\\x1b``, ``\\u202e``). A right-to-left override
    would otherwise show ``rtl\\u202egnp.md`` as ``rtldm.png``, and a zero-width space would make
    two different names look the same."""
    if name.isascii() and name.isprintable():  # the usual case, without a look at each character
        return name
    return "".join(c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in _ESCAPED_CATEGORIES
                   else c for c in name)


def shown_source(source: str, location: str | None) -> str:
    """A document's file as it opens from the working directory: its recorded location (the
    resolved path at ingest) relative to here when inside, else absolute. ``source`` is the
    path as typed at ingest, relative to wherever that ran, so from another folder it named
    nothing; it is shown only for a document without a location (a text, an older row)."""
    if not location:
        return printable(source)
    relative = os.path.relpath(location, os.path.realpath(os.getcwd()))
    outside = relative == os.pardir or relative.startswith(os.pardir + os.sep)
    return printable(location if outside else relative)


def render_documents(docs: Sequence[tuple[str, str, dict[str, Any]]]) -> str:
    """``beleg documents``: one aligned line per ``(doc_id, source, metadata)``, under a header."""
    rows = [("id", "version", "status", "source", "title")] + [
        (printable(doc_id), printable(str(meta.get("version", "-"))), printable(str(meta.get("status", "-"))),
         printable(source), printable(str(meta.get("title", "")))) for doc_id, source, meta in docs]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]  # the title, last, is not padded
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4] for row in rows)


def render_ingest(report: Any, style: Style) -> str:
    lines = []
    for f in report.files:
        if f.status in ("failed", "skipped"):
            lines.append(f"  {f.status:<10} {printable(f.source)}: {printable(f.reason)}")
        elif f.status != "unchanged":
            name = printable(f.source)
            lines.append(f"  {f.status:<10} {name} ({plural(f.chunks, 'chunk')})" if f.chunks
                         else f"  {f.status:<10} {name}")
            if getattr(f, "moved_from", None):
                lines.append(f"             moved from {printable(f.moved_from)}")
            if getattr(f, "widened", None):
                lines.append(f"             access widened (--allow-widen): {'; '.join(f.widened)}")
            if getattr(f, "encoding_from", None) == "index":
                lines.append(f"             read as {f.encoding}, as at its last ingest (not UTF-8; --encoding overrides)")
    j = report.to_json()
    lines.append(style.bold(
        f"{j['added']} added, {j['updated']} updated, {j['unchanged']} unchanged, {j['deleted']} deleted, "
        f"{j['skipped']} skipped, {j['failed']} failed; {plural(j['embedded'], 'chunk')} embedded"))
    return "\n".join(lines)


def render_answer(answer: Any, style: Style, *, show_text: bool = True,
                  locations: Mapping[str, str | None] = {}) -> str:
    """The answer, its conflicts, then each source with title, section, version, status, date
    and its file (:func:`shown_source`, through ``locations``: doc_id → recorded location)."""
    # Imported here, not at the top: a search process prints hits and needs no answering code.
    from beleg.answer.conflicts import conflict_lines
    from beleg.answer.quarantine import shown_heading_path, shown_value

    lines = [answer.answer] if show_text else []
    if answer.conflicts and answer.backend != "extractive":  # the extractive text already states them
        for c in answer.conflicts:
            lines.append("")
            report = conflict_lines(c)
            lines.extend([style.bold(report[0]), *report[1:]] if report else [])
    cited = {c.label for c in answer.citations}
    if answer.sources:
        lines.append("")
        lines.append(style.bold("Sources"))
    for s in answer.sources:
        if s.label not in cited and not _withholds(s):
            continue
        facts = " · ".join(shown_value(x) for x in (f"version {s.version}" if s.version else None, s.status,
                                                    s.authority, s.date) if x)
        title = printable(shown_heading_path(s.hit.heading_path) or shown_value(s.hit.title))
        lines.append(f"  [{s.label}] {style.bold(title)}")
        lines.append(f"       {style.dim(shown_source(s.hit.source, locations.get(s.hit.doc_id)) + '  ·  ' + printable(facts))}")
        note = _withheld_note(s)
        if note:
            lines.append(f"       {style.mark(note)}")
    others = [s.label for s in answer.sources if s.label not in cited and not _withholds(s)]
    if others:
        lines.append(style.dim(f"  also retrieved, not cited: {', '.join(others)}"))
    lines.append(verdict_line(answer, style))
    return "\n".join(lines)


def verdict_line(answer: Any, style: Style) -> str:
    """The two verdicts in one line. "✓" appears only under a supported answer: quotes that
    verify may still not answer the question (the sentence next to the answer verifies too)."""
    if answer.refused:
        reason = answer.trace.get("decision")
        kind = "withheld" if answer.withheld else "refused"  # an answer found but not shown, or none found
        return style.dim(f"({kind}: {reason})" if reason else f"({kind})")
    if answer.backend == "rule":  # arithmetic or small talk: nothing was cited, so nothing to verify
        return style.dim("(answered by rule, no sources: " + ("computed exactly)" if answer.supported
                                                               else "not an answer from the documents)"))
    support = answer.support
    if support is None:
        judged = "support not assessed"
    elif answer.supported:
        judged = f"supported ({answer.confidence:.2f})"
    else:
        judged = f"not shown to answer the question ({answer.confidence:.2f})"
    if not answer.verified:
        return style.mark(f"UNVERIFIED: {'; '.join(answer.problems)} · {judged}")
    quotes = f"{len(answer.citations)} quote(s) verified"
    if answer.supported:
        return style.dim(f"✓ {quotes} · {judged}")
    why = _failed_checks(support)
    return style.mark(f"{quotes} · {judged}") + (style.dim(f"\n  why: {why}") if why else "")


def _failed_checks(support: Any) -> str:
    if support is None:
        return ""
    return "; ".join(c.why for c in support.checks if c.passed is False)


def _withholds(source: Any) -> bool:
    return bool(source.flags) or source.quarantine.active


def _withheld_note(source: Any) -> str:
    """What of a source is withheld as instruction-like text, in one line (empty when nothing)."""
    q = source.quarantine
    parts = []
    if q.whole or (source.flags and not q.active):
        parts.append("withheld: instruction-like text (possible prompt injection)")
    elif q.spans:
        parts.append(f"{len(q.spans)} passage(s) withheld: instruction-like text (possible prompt injection); "
                     "the rest may be used")
    if q.fields:
        parts.append(f"{', '.join(q.fields)} withheld: instruction-like text")
    return "; ".join(parts)
